import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chooseServer, type DiscoveryReader } from '../src/core/attach';

const running = { url: 'ws://127.0.0.1:4000/', address: '127.0.0.1:4000', token: 't0k', pid: 1, version: '0.1.0' };
const env = { COMPACTD_DISCOVERY_FILE: '/run/compactd/server.json' };

function files(live: boolean, present = live): DiscoveryReader & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    live: (path) => (asked.push(path), live ? running : undefined),
    read: (path) => (asked.push(path), present ? running : undefined),
  };
}

test('off (the default) starts compactd and reads no discovery file', () => {
  const reader = files(true);
  assert.deepEqual(chooseServer(undefined, env, reader), { kind: 'spawn' });
  assert.deepEqual(chooseServer('off', env, reader), { kind: 'spawn' });
  assert.deepEqual(reader.asked, []);
});

test('auto attaches to a live shared compactd, with a fallback, and starts one otherwise', () => {
  const reader = files(true);
  assert.deepEqual(chooseServer('auto', env, reader), { kind: 'attach', url: running.url, token: 't0k', fallBack: true });
  assert.deepEqual(reader.asked, ['/run/compactd/server.json']);
  const none = chooseServer('auto', env, files(false));
  assert.equal(none.kind, 'spawn');
  assert.match(none.kind === 'spawn' ? (none.why ?? '') : '', /no shared compactd/);
});

test('a URL attaches without a fallback; its token comes from COMPACTD_TOKEN or the discovery file', () => {
  assert.deepEqual(chooseServer('ws://10.0.0.1:9/', env, files(false, true)), { kind: 'attach', url: 'ws://10.0.0.1:9/', token: 't0k', fallBack: false });
  assert.deepEqual(chooseServer('ws://h:9/', { ...env, COMPACTD_TOKEN: 'env' }, files(false, false)), { kind: 'attach', url: 'ws://h:9/', token: 'env', fallBack: false });
  assert.throws(() => chooseServer('ws://h:9/', env, files(false, false)), /no token/);
  assert.throws(() => chooseServer('http://h:9/', env, files(true)), /must be "off", "auto" or a ws:\/\/ URL/);
});
