// CompactdClient attached to a real shared compactd (`compactd serve
// --listen`): an agent and an observer on one server, the discovery file,
// a refused token, and falling back to a spawned server.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, test } from 'node:test';
import { CompactdClient, liveDiscovery, ServerExited, type TokensNotification } from '../src';
import { conversation, next, PATIENCE_MS, serverBinary } from './support/server';

interface Shared {
  process: ChildProcess;
  url: string;
  discoveryFile: string;
  home: string;
  stop(): Promise<void>;
}

/** Starts `compactd serve --listen 127.0.0.1:0` in a fresh HOME; resolves once it printed its address. */
async function startShared(): Promise<Shared> {
  const home = mkdtempSync(join(tmpdir(), 'compactd-shared-test-'));
  const discoveryFile = join(home, 'run', 'server.json');
  const child = spawn(serverBinary(), ['--no-user-config', 'serve', '--listen', '127.0.0.1:0', '--discovery-file', discoveryFile], {
    cwd: home,
    env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config'), COMPACTD_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no address printed')), PATIENCE_MS);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^compactd listening on (\S+)$/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  return {
    process: child,
    url,
    discoveryFile,
    home,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      rmSync(home, { recursive: true, force: true });
    },
  };
}

describe('a shared compactd', () => {
  test('an observer sees the meter of the session an agent appends to; each close ends its own connection', async () => {
    const shared = await startShared();
    try {
      const found = liveDiscovery(shared.discoveryFile);
      assert.equal(found?.url, shared.url);
      const agent = await CompactdClient.connect({ discoveryFile: shared.discoveryFile });
      const observer = await CompactdClient.connect({ discoveryFile: shared.discoveryFile });
      assert.equal(agent.process, undefined);
      assert.equal(agent.server.path, shared.url);
      assert.deepEqual(await observer.request('conversation/subscribe', { sessionId: 'agent-ts' }), { sessionId: 'agent-ts', open: false });
      await agent.open({ sessionId: 'agent-ts', contextWindow: 200000 });
      const messages = conversation(2);
      const seen = next<TokensNotification>('the agent meter at the observer', (h) => observer.onTokens(h), (n) => n.sessionId === 'agent-ts' && n.contextTokens > 0);
      const appended = await agent.append({ sessionId: 'agent-ts', messages });
      assert.equal((await seen).contextTokens, appended.meter.contextTokens);
      // The agent leaves; the observer goes on with the same session.
      assert.deepEqual(await agent.close(), { code: null, signal: null });
      const history = await observer.history({ sessionId: 'agent-ts' });
      assert.equal(history.messages.length, messages.length);
      await observer.close();
      // The server still runs: a third client attaches.
      const third = await CompactdClient.connect({ discoveryFile: shared.discoveryFile });
      await third.close();
    } finally {
      await shared.stop();
    }
  });

  test('a wrong token is refused with the server’s status; a stopped server leaves no discovery file', async () => {
    const shared = await startShared();
    await assert.rejects(CompactdClient.connect({ url: shared.url, token: 'not-the-token' }), /refused the connection \(HTTP 401\)/);
    const client = await CompactdClient.connect({ discoveryFile: shared.discoveryFile });
    await shared.stop();
    assert.deepEqual(await client.exited, { code: null, signal: null });
    await assert.rejects(client.history({ sessionId: 'gone' }), (e: Error) => e instanceof ServerExited && /closed the connection/.test(e.message));
    assert.equal(liveDiscovery(shared.discoveryFile), undefined);
    await assert.rejects(CompactdClient.connect({ discoveryFile: shared.discoveryFile }), /no shared compactd/);
  });

  test('connectOrSpawn starts its own compactd when no shared one runs', async () => {
    const home = mkdtempSync(join(tmpdir(), 'compactd-shared-test-'));
    try {
      const client = await CompactdClient.connectOrSpawn({
        path: serverBinary(),
        args: ['--no-user-config'],
        env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config') },
        connect: { discoveryFile: join(home, 'none.json') },
      });
      assert.ok(client.process, 'spawned');
      assert.deepEqual(await client.close(), { code: 0, signal: null });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
