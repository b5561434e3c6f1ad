// The parts that need no pi: settings from pi's files, and the text shown.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { compactdSessionId } from '../src/bridge';
import { oneLine, statusText, tokens } from '../src/format';
import { loadPiCompaction, loadSettings } from '../src/settings';
import { compactEventProblems } from '../src/shapes';

function files(global: object | string, project?: object): { cwd: string; env: NodeJS.ProcessEnv; done: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'compactd-pi-settings-'));
  mkdirSync(join(root, 'agent'));
  mkdirSync(join(root, 'ws', '.pi'), { recursive: true });
  writeFileSync(join(root, 'agent', 'settings.json'), typeof global === 'string' ? global : JSON.stringify(global));
  if (project) writeFileSync(join(root, 'ws', '.pi', 'settings.json'), JSON.stringify(project));
  return { cwd: join(root, 'ws'), env: { PI_CODING_AGENT_DIR: join(root, 'agent') }, done: () => rmSync(root, { recursive: true, force: true }) };
}

test('settings: the project wins key by key, configuration merges one level deeper, bad values fall back with a problem', () => {
  const f = files(
    { compactd: { path: '/opt/compactd', keepRecentTokens: 30000, configuration: { summarizer: { provider: 'openai' }, maxListedFiles: 10 } }, compaction: { reserveTokens: 9000 } },
    { compactd: { keepRecentTokens: -1, status: false, configuration: { maxListedFiles: 20 } }, compaction: { keepRecentTokens: 4000 } },
  );
  try {
    const { settings, problems } = loadSettings(f.cwd, f.env);
    assert.equal(settings.path, '/opt/compactd');
    assert.equal(settings.keepRecentTokens, undefined, 'the project value is invalid, so the default applies');
    assert.equal(settings.status, false);
    assert.equal(settings.enabled, true);
    assert.deepEqual(settings.configuration, { summarizer: { provider: 'openai' }, maxListedFiles: 20 });
    assert.deepEqual(problems, ['compactd.keepRecentTokens: -1 is not valid']);
    assert.deepEqual(loadPiCompaction(f.cwd, f.env), { reserveTokens: 9000, keepRecentTokens: 4000 });
  } finally {
    f.done();
  }
});

test('settings: an unreadable file is a problem, not a crash; no files give the defaults', () => {
  const f = files('{ not json');
  try {
    const { settings, problems } = loadSettings(f.cwd, f.env);
    assert.equal(settings.enabled, true);
    assert.equal(settings.timeoutMs, 600_000);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /settings\.json: .*JSON/);
    assert.deepEqual(loadPiCompaction(f.cwd, f.env), { reserveTokens: 16384, keepRecentTokens: 20000 });
  } finally {
    f.done();
  }
});

test('text: token counts, the footer, one-line notices, session ids', () => {
  assert.deepEqual([950, 1000, 12345, 16000, 200000].map(tokens), ['950', '1k', '12.3k', '16k', '200k']);
  assert.equal(statusText({ contextTokens: 12345, contextWindow: 16000, percent: 77.2 }), 'compactd 12.3k/16k 77%');
  assert.equal(oneLine('a\n  b\nc'), 'a b c');
  assert.equal(oneLine('x'.repeat(300)).length, 240);
  assert.equal(compactdSessionId('01a2052d-c587-70cc-9945-8e4fb3ce23ef'), 'pi-01a2052d-c587-70cc-9945-8e4fb3ce23ef');
  assert.equal(compactdSessionId('a/b c'), 'pi-a-b-c');
});

test('an event of another shape is named field by field', () => {
  const good = {
    preparation: { firstKeptEntryId: 'e1', tokensBefore: 10, fileOps: { read: new Set(['a']), written: new Set(), edited: new Set() }, settings: { keepRecentTokens: 5 } },
    branchEntries: [{ id: 'e1' }],
  };
  assert.deepEqual(compactEventProblems(good), []);
  const changed = { ...good, preparation: { ...good.preparation, fileOps: { read: ['a'], written: new Set(), edited: new Set() }, tokensBefore: '10' } };
  assert.deepEqual(compactEventProblems(changed), ['preparation.tokensBefore: "string"', 'preparation.fileOps.read: ["string"]']);
});

test('the pi pinned here is the one tests/agents pins (the facts recorded there hold for these tests)', () => {
  const pin = (file: string) => {
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    return { ...pkg.dependencies, ...pkg.devDependencies }['@mariozechner/pi-coding-agent'];
  };
  const here = pin(join(__dirname, '..', '..', 'package.json'));
  assert.match(here, /^\d+\.\d+\.\d+$/, 'an exact version');
  assert.equal(here, pin(join(__dirname, '..', '..', '..', '..', 'tests', 'agents', 'package.json')));
  assert.equal(JSON.parse(readFileSync(join(__dirname, '..', '..', 'node_modules', '@mariozechner', 'pi-coding-agent', 'package.json'), 'utf8')).version, here);
});
