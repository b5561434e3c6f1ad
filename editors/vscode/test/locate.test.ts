import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkServerVersion, findServer, ServerNotFound } from '../src/core/locate';
import { serverBinary } from './support/server';

const executables = (...paths: string[]) => (p: string) => paths.includes(p);

test('the setting wins, then PATH, then the bundled binary', () => {
  const input = { configuredPath: '', pathEnv: '/usr/bin:/opt/c/bin', extensionPath: '/ext', platform: 'linux' as const };
  assert.deepEqual(findServer({ ...input, configuredPath: '/my/compactd' }, executables('/my/compactd', '/opt/c/bin/compactd')), {
    path: '/my/compactd',
    source: 'setting',
  });
  assert.deepEqual(findServer(input, executables('/opt/c/bin/compactd', '/ext/bin/compactd')), { path: '/opt/c/bin/compactd', source: 'PATH' });
  assert.deepEqual(findServer(input, executables('/ext/bin/compactd')), { path: '/ext/bin/compactd', source: 'bundled' });
});

test('a wrong setting is reported, not silently replaced', () => {
  assert.throws(
    () => findServer({ configuredPath: '/nope/compactd', pathEnv: '/usr/bin', extensionPath: '/ext' }, executables('/usr/bin/compactd')),
    (e: Error) => e instanceof ServerNotFound && /compactd\.server\.path is set to \/nope\/compactd/.test(e.message),
  );
});

test('nothing found says where it looked', () => {
  assert.throws(() => findServer({ configuredPath: '', pathEnv: '/usr/bin', extensionPath: '/ext' }, executables()), /compactd was not found: set compactd\.server\.path/);
});

test('the real binary passes the version check', async () => {
  assert.match(await checkServerVersion({ path: serverBinary(), source: 'setting' }), /^compactd \d+\.\d+\.\d+/);
});

test('a binary whose --version fails is rejected with a clear message', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'compactd-locate-'));
  const broken = join(dir, 'compactd');
  writeFileSync(broken, '#!/bin/sh\necho "error while loading shared libraries: libssl.so.3" >&2\nexit 127\n');
  chmodSync(broken, 0o755);
  await assert.rejects(checkServerVersion({ path: broken, source: 'PATH' }), (e: Error) => {
    assert.ok(e instanceof ServerNotFound);
    assert.match(e.message, new RegExp(`The compactd server at ${broken} \\(from PATH\\) is not usable: \`--version\` failed \\(.*libssl`));
    return true;
  });
  const impostor = join(dir, 'other');
  writeFileSync(impostor, '#!/bin/sh\necho "other 1.0"\n');
  chmodSync(impostor, 0o755);
  await assert.rejects(checkServerVersion({ path: impostor, source: 'setting' }), /is not compactd: `--version` printed "other 1.0"/);
});
