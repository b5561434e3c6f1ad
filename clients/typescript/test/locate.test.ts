import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { checkServerVersion, findServer, ServerNotFound } from '../src';
import { serverBinary } from './support/server';

const executables = (...paths: string[]) => (p: string) => paths.includes(p);

test('the explicit path wins, then PATH, then the bundled directories in order', () => {
  const input = { pathEnv: '/usr/bin::/opt/c/bin', bundledDirs: ['/ext/bin', '/ext/other'], platform: 'linux' as const };
  assert.deepEqual(findServer({ ...input, path: ' /my/compactd ' }, executables('/my/compactd', '/opt/c/bin/compactd')), {
    path: '/my/compactd',
    source: 'explicit',
  });
  assert.deepEqual(findServer(input, executables('/opt/c/bin/compactd', '/ext/bin/compactd')), { path: '/opt/c/bin/compactd', source: 'PATH' });
  assert.deepEqual(findServer(input, executables('/ext/other/compactd', '/ext/bin/compactd')), { path: '/ext/bin/compactd', source: 'bundled' });
  assert.deepEqual(findServer({ ...input, platform: 'win32' }, executables('/ext/other/compactd.exe')), { path: '/ext/other/compactd.exe', source: 'bundled' });
});

test('a wrong explicit path is reported by the name the caller gives it, not silently replaced', () => {
  assert.throws(
    () => findServer({ path: '/nope/compactd', pathName: 'compactd.server.path', pathEnv: '/usr/bin' }, executables('/usr/bin/compactd')),
    (e: Error) => e instanceof ServerNotFound && /^compactd\.server\.path is set to \/nope\/compactd, which is not an executable file/.test(e.message),
  );
});

test('nothing found says where it looked', () => {
  assert.throws(
    () => findServer({ pathEnv: '/usr/bin', bundledDirs: ['/ext/bin'], pathName: 'compactd.server.path' }, executables()),
    /compactd was not found: set compactd\.server\.path or put compactd on PATH \(it is not on PATH, nor in \/ext\/bin\)/,
  );
});

test('the real binary passes the version check', async () => {
  assert.match(await checkServerVersion({ path: serverBinary(), source: 'explicit' }), /^compactd \d+\.\d+\.\d+/);
});

test('a binary whose --version fails, or that is not compactd, is rejected with a clear message', async () => {
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
  await assert.rejects(checkServerVersion({ path: impostor, source: 'explicit' }), /is not compactd: `--version` printed "other 1.0"/);
});
