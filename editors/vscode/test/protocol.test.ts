// The extension's request layer and notification handling against the real
// compactd binary: the meter, compaction with progress, cancellation, and
// settings reaching the server.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { contentText, methods, type CompactdCapabilities, type DidCompactNotification, type TokensNotification } from 'compactd-client';
import { CancellationTokenSource, ResponseError } from 'vscode-jsonrpc/node';
import { meterText } from '../src/core/meter';
import { SessionTracker } from '../src/core/sessions';
import { resumeSessions } from '../src/core/requests';
import { serverConfiguration } from '../src/core/settings';
import { compactedMessage } from '../src/core/summary';
import { conversation, shutdown, spawnServer, startServer, type Event, type TestServer } from './support/server';

const isTokens = (sessionId: string) => (e: Event) =>
  e.kind === 'notification' && e.method === 'conversation/tokens' && e.params.sessionId === sessionId;

/** A tracker fed from the server's notifications exactly as extension.ts feeds it. */
function trackerFor(server: TestServer): SessionTracker {
  const tracker = new SessionTracker();
  server.onNotification((method, params) => {
    if (method === 'conversation/tokens') tracker.onTokens(params as TokensNotification);
    if (method === 'conversation/didCompact') tracker.onDidCompact(params as DidCompactNotification);
  });
  return tracker;
}

describe('against the real server', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ initializationOptions: serverConfiguration((k) => ({ keepRecentTokens: 400 })[k]) });
  });
  after(() => server.close());

  test('initialize advertises the conversation methods and full text sync', () => {
    const compactd: CompactdCapabilities = server.initializeResult.capabilities.experimental.compactd;
    for (const method of ['conversation/open', 'conversation/append', 'conversation/history', 'conversation/compact']) {
      assert.ok(compactd.methods.includes(method), `${method} in ${compactd.methods}`);
    }
    assert.ok(compactd.notifications.includes('conversation/tokens'));
    assert.equal(server.initializeResult.capabilities.textDocumentSync.change, 1);
  });

  test('open and append send conversation/tokens, and the tracker shows the newest session', async () => {
    const tracker = trackerFor(server);
    const opened = await server.requests.open({ sessionId: 'meter-a', model: 'gpt-4o', systemPrompt: 'You are a coding agent.' });
    await server.waitFor('tokens for meter-a', isTokens('meter-a'));
    assert.equal(tracker.active?.sessionId, 'meter-a');
    assert.deepEqual(tracker.active?.meter, opened.meter);

    const appended = await server.requests.append({ sessionId: 'meter-a', messages: conversation(3) });
    assert.equal(appended.ids.length, 12);
    const last = await server.waitFor('tokens after append', (e) => isTokens('meter-a')(e) && (e as any).params.contextTokens === appended.meter.contextTokens);
    assert.ok(appended.meter.contextTokens > opened.meter.contextTokens);
    assert.equal(appended.meter.contextWindow, 128000);
    assert.equal(tracker.active?.meter.contextTokens, appended.meter.contextTokens);
    assert.match(meterText(tracker.active!.meter), /^\d+(\.\d)?k?\/128k \(\d+%\)$/);
    assert.equal((last as any).params.source, 'estimate');

    await server.requests.open({ sessionId: 'meter-b' });
    await server.waitFor('tokens for meter-b', isTokens('meter-b'));
    assert.equal(tracker.active?.sessionId, 'meter-b', 'the session that changed last is shown');
    tracker.select('meter-a');
    await server.requests.append({ sessionId: 'meter-b', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(tracker.active?.sessionId, 'meter-a', 'a picked session stays shown');
  });

  test('provider usage feeds the meter', async () => {
    await server.requests.open({ sessionId: 'usage', model: 'gpt-4o' });
    const result = await server.requests.append({ sessionId: 'usage', messages: [
      { role: 'user', content: 'Summarize the repo.' },
      { role: 'assistant', content: 'It is a sidecar.', usage: { input: 5000, output: 40 } },
    ] });
    assert.equal(result.meter.source, 'usage');
    assert.ok(result.meter.contextTokens >= 5040, `${result.meter.contextTokens}`);
  });

  test('compact reports progress, then didCompact, then the lower meter, then the answer', async () => {
    const tracker = trackerFor(server);
    await server.requests.open({ sessionId: 'compact-me', model: 'gpt-4o' });
    const before = await server.requests.append({ sessionId: 'compact-me', messages: conversation(8) });
    const start = server.events.length;
    const result = await server.track(
      'compact',
      server.requests.compact({ sessionId: 'compact-me', instructions: 'keep module names', workDoneToken: 'vsc-1' }),
    );
    assert.equal(result.compacted, true);
    assert.equal(result.tokensBefore, before.meter.contextTokens);
    assert.ok(result.tokensAfter < result.tokensBefore / 2, `${result.tokensBefore} → ${result.tokensAfter}`);
    assert.ok(result.messagesSummarized > 0);
    assert.match(result.summary, /module/);
    assert.equal(
      compactedMessage(result),
      `Conversation compacted: ${result.messagesSummarized} messages → summary; tokens ${result.tokensBefore} → ${result.tokensAfter}`,
    );
    // An agent's own compaction says what its summary dropped.
    assert.equal(
      compactedMessage({ messagesSummarized: 3, tokensBefore: 10, tokensAfter: 2, dropped: ['2 of 5 modified files', 'the task'] }, 'Claude Code'),
      'Claude Code compacted its conversation: 3 messages → summary; tokens 10 → 2; its summary dropped 2 of 5 modified files, the task',
    );

    const seen = server.events.slice(start);
    const index = (what: string, match: (e: Event) => boolean) => {
      const i = seen.findIndex(match);
      assert.ok(i >= 0, `${what} not received: ${JSON.stringify(seen).slice(0, 1500)}`);
      return i;
    };
    const begin = index('progress begin', (e) => e.kind === 'progress' && e.token === 'vsc-1' && e.value.kind === 'begin');
    const end = index('progress end', (e) => e.kind === 'progress' && e.token === 'vsc-1' && e.value.kind === 'end');
    const did = index('didCompact', (e) => e.kind === 'notification' && e.method === 'conversation/didCompact');
    const meter = index('lower meter', (e) => isTokens('compact-me')(e) && (e as any).params.contextTokens === result.tokensAfter);
    const answer = index('response', (e) => e.kind === 'response' && e.id === 'compact');
    assert.ok(begin < end && end < answer && did < answer && meter < answer, `order ${[begin, end, did, meter, answer]}`);
    assert.equal((seen[begin] as any).value.cancellable, true);
    const notification = (seen[did] as any).params as DidCompactNotification;
    assert.equal(notification.trigger, 'manual');
    assert.equal(notification.sessionId, 'compact-me');

    assert.equal(tracker.get('compact-me')?.meter.contextTokens, result.tokensAfter);
    assert.equal(tracker.get('compact-me')?.lastCompaction?.tokensBefore, result.tokensBefore);
    assert.equal(tracker.get('compact-me')?.lastCompaction?.notification.summary, result.summary);

    const history = await server.requests.history({ sessionId: 'compact-me' });
    assert.match(contentText(history.messages[0].content), /<summary>/);
  });

  test('nothing to compact answers compacted: false with a reason', async () => {
    await server.requests.open({ sessionId: 'tiny' });
    await server.requests.append({ sessionId: 'tiny', messages: [{ role: 'user', content: 'hi' }] });
    const result = await server.requests.compact({ sessionId: 'tiny' });
    assert.equal(result.compacted, false);
    assert.match(result.reason ?? '', /nothing to compact/);
  });

  test('an unknown session is a clear invalid-params error', async () => {
    await assert.rejects(server.requests.history({ sessionId: 'nope' }), (e: ResponseError<unknown>) => {
      assert.equal(e.code, -32602);
      assert.match(e.message, /no open session `nope`/);
      return true;
    });
  });

  test('an unknown method is method-not-found, which the commands turn into "update compactd"', async () => {
    await assert.rejects(server.connection.sendRequest('conversation/noSuchThing', {}), (e: ResponseError<unknown>) => e.code === methods.METHOD_NOT_FOUND);
  });
});

describe('auto-compaction', () => {
  test('a threshold compaction in the background reaches the tracker, with server-created progress', async () => {
    const server = await startServer({
      capabilities: { window: { workDoneProgress: true } },
      initializationOptions: serverConfiguration((k) => ({ keepRecentTokens: 400, autoCompactTokenLimit: 3000 })[k]),
    });
    const created: unknown[] = [];
    server.connection.onRequest('window/workDoneProgress/create', (params: { token: string }) => {
      created.push(params.token);
      return null;
    });
    const tracker = trackerFor(server);
    try {
      await server.requests.open({ sessionId: 'auto', model: 'gpt-4o' });
      const appended = await server.requests.append({ sessionId: 'auto', messages: conversation(8) });
      assert.equal(appended.shouldCompact, true);
      const did = await server.waitFor('threshold didCompact', (e) => e.kind === 'notification' && e.method === 'conversation/didCompact');
      const n = (did as any).params as DidCompactNotification;
      assert.equal(n.trigger, 'threshold');
      assert.equal(n.sessionId, 'auto');
      await server.waitFor('meter after auto-compaction', (e) => isTokens('auto')(e) && (e as any).params.contextTokens === n.tokensAfter);
      assert.equal(tracker.get('auto')?.lastCompaction?.trigger, 'threshold');
      assert.equal(tracker.get('auto')?.meter.contextTokens, n.tokensAfter);
      assert.equal(created.length, 1, 'the server created its own progress token');
      // Progress under a created token waits for the client's answer to
      // window/workDoneProgress/create, so it may follow didCompact.
      const under = (kind: string) => (e: Event) => e.kind === 'progress' && e.token === created[0] && e.value.kind === kind;
      await server.waitFor('progress end under the created token', under('end'));
      const begin = server.events.findIndex(under('begin'));
      assert.ok(begin >= 0 && begin < server.events.findIndex(under('end')), 'begin, then end');
    } finally {
      await server.close();
    }
  });
});

describe('cancellation', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({
      initializationOptions: serverConfiguration((k) => ({ keepRecentTokens: 400, 'summarizer.provider': 'test', 'summarizer.delayMs': 30000 })[k]),
    });
  });
  after(() => server.close());

  test('cancelling the token sends $/cancelRequest: -32800, progress ends, history untouched', async () => {
    await server.requests.open({ sessionId: 'slow', model: 'gpt-4o' });
    await server.requests.append({ sessionId: 'slow', messages: conversation(6) });
    const historyBefore = await server.requests.history({ sessionId: 'slow' });
    const source = new CancellationTokenSource();
    const compacting = server.requests.compact({ sessionId: 'slow', workDoneToken: 'slow-1' }, { token: source.token });
    await server.waitFor('progress begin', (e) => e.kind === 'progress' && e.token === 'slow-1' && e.value.kind === 'begin');
    source.cancel();
    await assert.rejects(compacting, (e: ResponseError<unknown>) => {
      assert.equal(e.code, methods.REQUEST_CANCELLED);
      return true;
    });
    const end = await server.waitFor('progress end', (e) => e.kind === 'progress' && e.token === 'slow-1' && e.value.kind === 'end');
    assert.match((end as any).value.message, /cancel/);
    assert.ok(!server.events.some((e) => e.kind === 'notification' && e.method === 'conversation/didCompact'));
    assert.deepEqual(await server.requests.history({ sessionId: 'slow' }), historyBefore);
  });
});

describe('settings', () => {
  test('settings reach the server as initializationOptions', async () => {
    const server = await startServer({
      initializationOptions: serverConfiguration((k) => ({ defaultContextWindow: 50000, autoCompactPercent: 10, reserveTokens: 0 })[k]),
    });
    try {
      const opened = await server.requests.open({ sessionId: 's', model: 'some-unknown-model' });
      assert.equal(opened.meter.contextWindow, 50000);
      assert.equal(opened.meter.autoCompactAt, 5000);
    } finally {
      await server.close();
    }
  });

  test('an invalid setting fails initialize with a message naming it', async () => {
    const { server, connection } = spawnServer();
    connection.listen();
    try {
      await assert.rejects(
        connection.sendRequest('initialize', {
          processId: null,
          rootUri: null,
          capabilities: {},
          initializationOptions: serverConfiguration((k) => ({ 'summarizer.provider': 'carrier-pigeon' })[k]),
        }),
        (e: ResponseError<unknown>) => {
          assert.equal(e.code, -32602);
          assert.match(e.message, /summarizer\.provider/);
          return true;
        },
      );
    } finally {
      await connection.sendRequest('initialize', { processId: null, rootUri: null, capabilities: {} }).catch(() => undefined);
      await shutdown(server, connection);
    }
  });
});

describe('restart', () => {
  test('a restarted server resumes the sessions the window had open, from their logs', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'compactd-vscode-sessions-'));
    const options = { initializationOptions: serverConfiguration((k) => ({ dataDir })[k]) };
    const first = await startServer(options);
    let historyBefore;
    try {
      await first.requests.open({ sessionId: 'kept', model: 'gpt-4o', systemPrompt: 'You are a coding agent.' });
      await first.requests.append({ sessionId: 'kept', messages: conversation(2) });
      historyBefore = await first.requests.history({ sessionId: 'kept' });
    } finally {
      await first.close();
    }
    const second = await startServer(options);
    const tracker = trackerFor(second);
    try {
      await assert.rejects(second.requests.history({ sessionId: 'kept' }), /no open session/);
      const failed = await resumeSessions(second.requests, [{ sessionId: 'kept' }, { sessionId: 'never-existed/..' }]);
      assert.deepEqual(failed.map((f) => f.sessionId), ['never-existed/..']);
      assert.match(failed[0].error, /sessionId/);
      assert.deepEqual(await second.requests.history({ sessionId: 'kept' }), historyBefore);
      assert.equal(tracker.get('kept')?.meter.contextTokens, historyBefore.meter.contextTokens);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
