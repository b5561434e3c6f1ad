// The generated settings list and package.json settings block must match
// schemas/; the check must notice when they do not. (The wire types and
// method names are compactd-client's, tested in clients/typescript.)

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PACKAGE_ROOT } from './support/server';

const generate = (...args: string[]) =>
  spawnSync(process.execPath, [join(PACKAGE_ROOT, 'scripts/generate.mjs'), ...args], { encoding: 'utf8', cwd: PACKAGE_ROOT });

test('the committed generated files match schemas/', () => {
  const run = generate('--check');
  assert.equal(run.status, 0, run.stderr);
});

/** A scratch copy of the package's generated files and of schemas/, for the generator to run on. */
function scratchCopy() {
  const root = mkdtempSync(join(tmpdir(), 'compactd-generate-'));
  for (const f of ['package.json', 'extension-settings.json']) cpSync(join(PACKAGE_ROOT, f), join(root, f));
  cpSync(join(PACKAGE_ROOT, 'src/protocol'), join(root, 'src/protocol'), { recursive: true });
  const schemas = join(root, 'schemas');
  cpSync(join(PACKAGE_ROOT, '../../schemas'), schemas, { recursive: true });
  const edit = (file: string, change: (schema: any) => void) => {
    const schema = JSON.parse(readFileSync(join(schemas, file), 'utf8'));
    change(schema);
    writeFileSync(join(schemas, file), JSON.stringify(schema, null, 2));
  };
  return { root, schemas, edit };
}

test('a changed config schema makes the check fail, naming package.json', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('config.json', (config) => {
    config.properties.keepRecentTokens.default = 12345;
    config.properties.brandNewSetting = { type: 'boolean', default: false, description: 'New.' };
  });

  const stale = generate('--check', '--root', root, '--schemas', schemas);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /stale .*package\.json/);
  assert.match(stale.stderr, /settings\.generated\.ts/);

  const fixed = generate('--root', root, '--schemas', schemas);
  assert.equal(fixed.status, 0, fixed.stderr);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  assert.equal(pkg.contributes.configuration.properties['compactd.keepRecentTokens'].default, 12345);
  assert.equal(pkg.contributes.configuration.properties['compactd.brandNewSetting'].type, 'boolean');
  assert.equal(generate('--check', '--root', root, '--schemas', schemas).status, 0);
});

test('the settings block keeps enums and descriptions from the schema', () => {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  const provider = pkg.contributes.configuration.properties['compactd.summarizer.provider'];
  assert.equal(provider.type, 'string');
  assert.ok(provider.enum.includes('offline'));
  assert.equal(provider.enum.length, provider.markdownEnumDescriptions.length);
  const keep = pkg.contributes.configuration.properties['compactd.keepRecentTokens'];
  assert.equal(keep.default, 20000);
  assert.match(keep.markdownDescription, /verbatim/);
});

test('every contributed command is registered and every registered command contributed', () => {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command).sort();
  const source = readFileSync(join(PACKAGE_ROOT, 'src/commands.ts'), 'utf8');
  const registered = [...source.matchAll(/registerCommand\(\s*'([^']+)'/g)].map((m) => m[1]).sort();
  assert.deepEqual(registered, contributed);
});

test('no method name is written by hand in src/: they come from compactd-client', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
  const handWritten = files(join(PACKAGE_ROOT, 'src'))
    .filter((f) => !f.endsWith('.generated.ts'))
    .flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/['"]((?:conversation|files|textDocument|workspace|window|\$)\/[A-Za-z/]+)['"]/g)].map((m) => `${f}: ${m[1]}`));
  assert.deepEqual(handWritten, []);
});
