// The typed layer over a connection the caller owns, as VS Code uses it
// with its LanguageClient: a getter asked on every call, and `listen` on
// each connection it returns. Here the connection is a plain vscode-jsonrpc
// connection to the real binary.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { CompactdMethods, methods as m, type TokensNotification, type WorkDoneProgressValue } from '../src';
import { conversation, isolated } from './support/server';

async function connect() {
  const options = isolated();
  const child = spawn(options.path!, options.args!, { env: options.env });
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.listen();
  await connection.sendRequest(m.INITIALIZE, { processId: process.pid, capabilities: {}, initializationOptions: { keepRecentTokens: 400 } });
  await connection.sendNotification(m.INITIALIZED, {});
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    connection,
    async close() {
      await connection.sendRequest(m.SHUTDOWN);
      await connection.sendNotification(m.EXIT);
      await exited;
      connection.dispose();
      options.cleanup();
    },
  };
}

test('a getter source: requests go to the current connection, notifications only from listened ones', async () => {
  const server = await connect();
  try {
    let asked = 0;
    const api = new CompactdMethods(() => (asked++, server.connection));
    const tokens: TokensNotification[] = [];
    api.onTokens((n) => tokens.push(n));
    await api.open({ sessionId: 'lazy' });
    assert.equal(asked, 1);
    assert.deepEqual(tokens, [], 'not listening yet');

    const listening = api.listen(server.connection);
    const opened = await api.open({ sessionId: 'lazy2' });
    assert.deepEqual(tokens, [{ sessionId: 'lazy2', ...opened.meter }]);

    const first: WorkDoneProgressValue[] = [];
    const second: WorkDoneProgressValue[] = [];
    const one = api.onProgress('p', (v) => first.push(v));
    api.onProgress('p', (v) => second.push(v));
    await api.append({ sessionId: 'lazy2', messages: conversation(6) });
    await api.compact({ sessionId: 'lazy2', workDoneToken: 'p' });
    assert.deepEqual(first.map((v) => v.kind), ['begin', 'end']);
    assert.deepEqual(second, first, 'two handlers of one token both hear it');

    one.dispose();
    await api.open({ sessionId: 'again' });
    await api.append({ sessionId: 'again', messages: conversation(6) });
    assert.equal((await api.compact({ sessionId: 'again', workDoneToken: 'p' })).compacted, true);
    assert.equal(first.length, 2, 'a disposed handler hears nothing more');
    assert.equal(second.length, 4);

    listening.dispose();
    const count = tokens.length;
    await api.open({ sessionId: 'lazy3' });
    assert.equal(tokens.length, count, 'no longer listening');
    assert.throws(() => api.on('conversation/nothing', () => undefined), /not a notification compactd sends/);
  } finally {
    await server.close();
  }
});
