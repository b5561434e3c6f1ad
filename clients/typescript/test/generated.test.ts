// The generated types, method table and typed methods must match schemas/;
// the check must notice when they do not.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CompactdMethods, methods as m, SERVER_NOTIFICATIONS } from '../src';
import { PACKAGE_ROOT } from './support/server';

const generate = (...args: string[]) =>
  spawnSync(process.execPath, [join(PACKAGE_ROOT, 'scripts/generate.mjs'), ...args], { encoding: 'utf8', cwd: PACKAGE_ROOT });

test('the committed generated files match schemas/', () => {
  const run = generate('--check');
  assert.equal(run.status, 0, run.stderr);
});

function scratchCopy() {
  const root = mkdtempSync(join(tmpdir(), 'compactd-client-generate-'));
  cpSync(join(PACKAGE_ROOT, 'src/generated'), join(root, 'src/generated'), { recursive: true });
  const schemas = join(root, 'schemas');
  cpSync(join(PACKAGE_ROOT, '../../schemas'), schemas, { recursive: true });
  const edit = (file: string, change: (schema: any) => void) => {
    const schema = JSON.parse(readFileSync(join(schemas, file), 'utf8'));
    change(schema);
    writeFileSync(join(schemas, file), JSON.stringify(schema, null, 2));
  };
  return { root, schemas, edit };
}

test('a changed wire type makes the check fail, naming the types', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('TokensNotification.json', (schema) => (schema.properties.brandNewField = { type: 'number' }));
  const stale = generate('--check', '--root', root, '--schemas', schemas);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /types\.ts/);
  assert.doesNotMatch(stale.stderr, /api\.ts/);
});

test('a new method in the table gets a typed function', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('methods.json', (table) =>
    table.methods.push({ constant: 'BRAND_NEW', name: 'conversation/brandNew', kind: 'request', lsp: false, params: 'PinParams', result: 'PinResult', doc: 'New.' }),
  );
  const stale = generate('--check', '--root', root, '--schemas', schemas);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /methods\.ts.*api\.ts/);
  assert.equal(generate('--root', root, '--schemas', schemas).status, 0);
  const api = readFileSync(join(root, 'src/generated/api.ts'), 'utf8');
  assert.ok(api.includes('  brandNew(params: PinParams, options?: RequestOptions): Promise<PinResult> {\n    return this.request<PinResult>(m.BRAND_NEW, params, options);'), api);
});

test('a method of compactd\'s own without types is refused', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('methods.json', (table) => table.methods.push({ constant: 'UNTYPED', name: 'conversation/untyped', kind: 'request', lsp: false, params: null, result: null, doc: 'New.' }));
  const run = generate('--check', '--root', root, '--schemas', schemas);
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /conversation\/untyped is compactd's own but methods\.json gives no params type/);
});

test('two schemas that define one type differently are refused', () => {
  const { root, schemas, edit } = scratchCopy();
  edit('message.json', (schema) => (schema.description = 'Something else.'));
  const run = generate('--check', '--root', root, '--schemas', schemas);
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /schemas disagree on `Message`/);
});

test('every method of the table is a typed function or handled by the client itself', () => {
  const byHand = [m.INITIALIZE, m.INITIALIZED, m.SHUTDOWN, m.EXIT, m.CANCEL_REQUEST, m.SET_TRACE, m.LOG_TRACE, m.DID_CHANGE_CONFIGURATION, m.WORK_DONE_PROGRESS_CREATE, m.PROGRESS];
  const camel = (constant: string) => constant.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  const proto = CompactdMethods.prototype as unknown as Record<string, unknown>;
  for (const method of m.METHODS) {
    const name = camel(method.constant);
    if (method.params === null) assert.ok(byHand.includes(method.name), `${method.name}: untyped and not handled by the client`);
    else if (method.kind === 'serverNotification') {
      assert.equal(typeof proto[`on${name[0].toUpperCase()}${name.slice(1)}`], 'function', method.name);
      assert.ok((SERVER_NOTIFICATIONS as readonly string[]).includes(method.name));
    } else assert.equal(typeof proto[name], 'function', method.name);
  }
});
