// The extension installed exactly as its README says, in a copy of the
// repository's two packages: the README's command run verbatim (`npm ci
// --omit=dev`, so no devDependency hides a missing runtime one), then the
// real pi loads that copy and compacts through compactd.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { COMPACTD, PACKAGE, readJsonl, REPO, runPi, scenario, ScriptedModel, Scratch } from './support';

/** The install line of the README's first `sh` block, without its comment. */
function documentedInstall(): string {
  const readme = readFileSync(join(PACKAGE, 'README.md'), 'utf8');
  const block = /```sh\n([^\n]*)\n/.exec(readme);
  assert.ok(block, 'the README has an sh block');
  const line = block[1].replace(/\s+#.*$/, '').trim();
  assert.match(line, /npm ci --omit=dev/, 'the documented install omits devDependencies');
  return line;
}

const copyRoot = mkdtempSync(join(tmpdir(), 'compactd-pi-install-'));
after(() => rmSync(copyRoot, { recursive: true, force: true }));

test('installed as the README says, the real pi loads it and compactd writes the compaction', async () => {
  const skip = (path: string) => !['node_modules', 'out', '.git'].includes(basename(path));
  for (const dir of ['clients/typescript', 'integrations/pi']) {
    cpSync(join(REPO, dir), join(copyRoot, dir), { recursive: true, filter: skip });
  }
  execFileSync('bash', ['-c', documentedInstall()], { cwd: copyRoot, stdio: 'pipe' });
  const installed = join(copyRoot, 'integrations', 'pi');
  assert.ok(!existsSync(join(installed, 'node_modules', '@mariozechner')), 'no devDependency was installed');

  const scratch = new Scratch();
  const model = await ScriptedModel.start(scenario('pi-tools.json'), join(scratch.root, 'requests.jsonl'));
  try {
    scratch.configure(model.url, { compaction: { reserveTokens: 14700, keepRecentTokens: 50 }, compactd: { path: COMPACTD } });
    const run = await runPi(['-p', 'edit a.txt and write c.md'], scratch, {}, installed);
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /Failed to load extension|Cannot find module|Extension error/, run.stderr);
    const compactions = readJsonl(scratch.sessionFile()).filter((e) => e.type === 'compaction');
    assert.equal(compactions.length, 1);
    assert.equal(compactions[0].details.engine, 'compactd', 'the installed copy wrote the compaction');
  } finally {
    await model.stop();
    scratch.cleanup();
  }
});

test('compactd setup pi names the extension in pi\'s settings, the real pi loads it from there, and --uninstall restores them', async () => {
  const scratch = new Scratch();
  const model = await ScriptedModel.start(scenario('pi-tools.json'), join(scratch.root, 'requests.jsonl'));
  try {
    scratch.configure(model.url, { compaction: { reserveTokens: 14700, keepRecentTokens: 50 }, compactd: { path: COMPACTD } });
    const settingsFile = join(scratch.home, '.pi', 'agent', 'settings.json');
    const before = readFileSync(settingsFile, 'utf8');
    const setup = (...args: string[]) => execFileSync(COMPACTD, ['setup', 'pi', ...args], { cwd: scratch.ws, env: scratch.env(), encoding: 'utf8' });
    assert.match(setup(), /add extensions: /);
    assert.match(setup(), /nothing to change/, 'twice is once');
    const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
    assert.deepEqual(settings.extensions, ['compactd/compactd-pi.js'], 'relative to pi\'s agent folder');
    assert.ok(existsSync(join(scratch.home, '.pi', 'agent', 'compactd', 'compactd-pi.js')));
    assert.equal(settings.defaultModel, 'scripted-model', 'the rest of the settings kept');

    const run = await runPi(['-p', 'edit a.txt and write c.md'], scratch, {}, null);
    assert.equal(run.code, 0, run.stderr);
    const compactions = readJsonl(scratch.sessionFile()).filter((e) => e.type === 'compaction');
    assert.equal(compactions.length, 1);
    assert.equal(compactions[0].details.engine, 'compactd', 'the extension pi loaded from its settings wrote the compaction');

    assert.match(setup('--uninstall'), /remove extensions: /);
    assert.equal(readFileSync(settingsFile, 'utf8'), before, 'byte for byte');
    assert.ok(!existsSync(join(scratch.home, '.pi', 'agent', 'compactd', 'compactd-pi.js')), 'its file goes too');
  } finally {
    await model.stop();
    scratch.cleanup();
  }
});

test('compactd setup pi works from a binary copied to an empty folder (as `cargo install` leaves it): the extension it writes runs that binary', async () => {
  const scratch = new Scratch();
  const model = await ScriptedModel.start(scenario('pi-tools.json'), join(scratch.root, 'requests.jsonl'));
  const bin = mkdtempSync(join(tmpdir(), 'compactd-bin-'));
  try {
    const copied = join(bin, 'compactd');
    cpSync(COMPACTD, copied);
    chmodSync(copied, 0o755);
    // No compactd.path in pi's settings: the written extension names the binary.
    scratch.configure(model.url, { compaction: { reserveTokens: 14700, keepRecentTokens: 50 } });
    const env = { ...scratch.env(), PATH: '/usr/bin:/bin' };
    const out = execFileSync(copied, ['setup', 'pi'], { cwd: scratch.ws, env, encoding: 'utf8' });
    assert.match(out, /add extensions: compactd\/compactd-pi\.js/, out);
    const written = readFileSync(join(scratch.home, '.pi', 'agent', 'compactd', 'compactd-pi.js'), 'utf8');
    assert.ok(written.includes(JSON.stringify(copied)), 'the extension names the copied binary');
    const run = await runPi(['-p', 'edit a.txt and write c.md'], scratch, { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` }, null);
    assert.equal(run.code, 0, run.stderr);
    const compactions = readJsonl(scratch.sessionFile()).filter((e) => e.type === 'compaction');
    assert.equal(compactions.length, 1);
    assert.equal(compactions[0].details.engine, 'compactd', 'the copied binary wrote the compaction');
  } finally {
    await model.stop();
    scratch.cleanup();
    rmSync(bin, { recursive: true, force: true });
  }
});

test('dist/compactd-pi.js, which the binary carries, is the build of src/ (npm run bundle)', () => {
  const fresh = join(copyRoot, 'fresh-bundle.js');
  execFileSync('npm', ['run', '--silent', 'bundle', '--', `--outfile=${fresh}`], { cwd: PACKAGE, stdio: 'pipe' });
  assert.ok(
    readFileSync(fresh, 'utf8') === readFileSync(join(PACKAGE, 'dist', 'compactd-pi.js'), 'utf8'),
    'stale: run `npm run bundle` in integrations/pi and rebuild compactd',
  );
});

test("the lockfile records compactd-client's dependencies as its package.json has them", () => {
  const client = JSON.parse(readFileSync(join(REPO, 'clients', 'typescript', 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(PACKAGE, 'package-lock.json'), 'utf8'));
  assert.deepEqual(
    lock.packages['node_modules/compactd-client'].dependencies,
    client.dependencies,
    'stale: run `npm install --package-lock-only compactd-client@file:../../clients/typescript` in integrations/pi',
  );
});
