// The generated types, settings list and package.json settings block must
// match schemas/; the check must notice when they do not.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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

test('a changed wire type makes the check fail, naming the types', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('TokensNotification.json', (schema) => (schema.properties.brandNewField = { type: 'number' }));
  const stale = generate('--check', '--root', root, '--schemas', schemas);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /types\.generated\.ts/);
  assert.doesNotMatch(stale.stderr, /package\.json/);
});

test('a changed method table makes the check fail, naming the method list', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('methods.json', (table) => table.methods.push({ constant: 'BRAND_NEW', name: 'conversation/brandNew', kind: 'request', lsp: false, doc: 'New.' }));
  const stale = generate('--check', '--root', root, '--schemas', schemas);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /methods\.generated\.ts/);
  assert.doesNotMatch(stale.stderr, /types\.generated\.ts/);
  assert.equal(generate('--root', root, '--schemas', schemas).status, 0);
  const source = readFileSync(join(root, 'src/protocol/methods.generated.ts'), 'utf8');
  assert.match(source, /export const BRAND_NEW = 'conversation\/brandNew';/);
});

test('the method list holds every method the server routes and its error codes', () => {
  const source = readFileSync(join(PACKAGE_ROOT, 'src/protocol/methods.generated.ts'), 'utf8');
  for (const line of [
    "export const OPEN = 'conversation/open';",
    "export const FILES_LIST = 'files/list';",
    "export const TOKENS = 'conversation/tokens';",
    'export const METHOD_NOT_FOUND = -32601;',
    'export const REQUEST_CANCELLED = -32800;',
  ]) {
    assert.ok(source.includes(line), line);
  }
});

test('two schemas that define one type differently are refused', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('message.json', (schema) => (schema.description = 'Something else.'));
  const run = generate('--check', '--root', root, '--schemas', schemas);
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /schemas disagree on `Message`/);
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
