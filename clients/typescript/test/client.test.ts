// CompactdClient against the real binary: lifecycle, every typed method,
// notifications and progress, cancellation, a refused configuration, and a
// server that dies.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';
import {
  CompactdClient,
  contentText,
  errorCode,
  isCancelled,
  methods as m,
  RequestAborted,
  ServerExited,
  type CompactdCapabilities,
  type DidCompactNotification,
  type TokensNotification,
  type WorkDoneProgressValue,
} from '../src';
import { conversation, isolated, next, SLOW_SUMMARIZER, spawnIsolated, withClient } from './support/server';

/** A Claude Code transcript as Claude Code writes it: a prompt and a response with its usage (5 + 1000 + 7). */
const CLAUDE_CODE_TRANSCRIPT = [
  { type: 'user', uuid: 'u1', sessionId: 's1', message: { role: 'user', content: 'hi' } },
  {
    type: 'assistant', uuid: 'a1', sessionId: 's1',
    message: {
      id: 'msg_1', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hello' }],
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 1000, output_tokens: 7 },
    },
  },
].map((line) => JSON.stringify(line) + '\n').join('');

describe('lifecycle', () => {
  test('initialize advertises every request and notification of the table; close exits 0', async () => {
    const client = await spawnIsolated();
    try {
      assert.match(client.version ?? '', /^compactd \d+\.\d+\.\d+/);
      const caps = client.capabilities as CompactdCapabilities;
      const own = m.METHODS.filter((x) => !x.lsp && (x.kind === 'request' || x.kind === 'requestOrNotification')).map((x) => x.name);
      assert.deepEqual([...caps.methods].sort(), own.sort());
      assert.deepEqual([...caps.notifications].sort(), m.METHODS.filter((x) => x.kind === 'serverNotification').map((x) => x.name).sort());
      assert.deepEqual(await client.close(), { code: 0, signal: null });
      assert.deepEqual(await client.close(), { code: 0, signal: null }, 'closing twice is harmless');
    } finally {
      await client.close();
      client.cleanup();
    }
  });

  test('a configuration the server refuses rejects spawn with its message, and the process is gone', async () => {
    const spawn = isolated({ configuration: { summarizer: { provider: 'nope' as never } } });
    await assert.rejects(CompactdClient.spawn(spawn), (e: Error) => {
      assert.equal(errorCode(e), m.INVALID_PARAMS);
      assert.match(e.message, /summarizer\.provider/);
      return true;
    });
    spawn.cleanup();
  });

  test('a server that dies fails waiting requests with ServerExited and its last words', async () => {
    await withClient({ configuration: SLOW_SUMMARIZER }, async (client) => {
      await client.open({ sessionId: 'doomed' });
      await client.append({ sessionId: 'doomed', messages: conversation(6) });
      const began = next<WorkDoneProgressValue>('progress begin', (h) => client.onProgress('d', h));
      const waiting = client.compact({ sessionId: 'doomed', workDoneToken: 'd' });
      await began;
      client.process!.kill('SIGKILL');
      await assert.rejects(waiting, (e: Error) => e instanceof ServerExited && /exited \(SIGKILL\)/.test(e.message));
      await assert.rejects(client.history({ sessionId: 'doomed' }), ServerExited);
      assert.deepEqual(await client.close(), { code: null, signal: 'SIGKILL' });
    });
  });
});

describe('a conversation', () => {
  test('open, append, compact with progress, didCompact and the meter, in the order the server promises', async () => {
    await withClient({ configuration: { keepRecentTokens: 400 } }, async (client) => {
      const seen: string[] = [];
      const tokens: TokensNotification[] = [];
      client.onTokens((n) => {
        tokens.push(n);
        seen.push(m.TOKENS);
      });
      client.onDidCompact(() => seen.push(m.DID_COMPACT));
      client.onProgress('ts-1', (value) => seen.push(`progress:${value.kind}`));
      const opened = await client.open({ sessionId: 'demo', model: 'gpt-4o', systemPrompt: 'You are a coding agent.' });
      assert.equal(opened.resumed, false);
      const appended = await client.append({ sessionId: 'demo', messages: conversation(6) });
      assert.equal(appended.ids.length, 24);
      seen.length = 0;
      const result = await client.compact({ sessionId: 'demo', instructions: 'keep module names', workDoneToken: 'ts-1' });
      seen.push('response');
      assert.equal(result.compacted, true);
      assert.ok(result.tokensAfter < result.tokensBefore);
      assert.deepEqual(seen, ['progress:begin', 'progress:end', m.DID_COMPACT, m.TOKENS, 'response']);
      assert.equal(tokens.at(-1)?.contextTokens, result.tokensAfter);
      const history = await client.history({ sessionId: 'demo' });
      assert.deepEqual(history.messages[0], { id: 'system', role: 'system', content: 'You are a coding agent.' });
      assert.match(contentText(history.messages[1].content), /<summary>/);
    });
  });

  test('every method of the table has a typed function the server accepts', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'compactd-client-ws-'));
    mkdirSync(join(workspace, 'src'));
    writeFileSync(join(workspace, 'src/main.rs'), 'fn main() {}\n');
    await withClient({ workspaceFolders: [workspace] }, async (client) => {
      const called: string[] = [];
      const request = client.request.bind(client);
      const notify = client.notify.bind(client);
      client.request = ((method: string, params: object, options?: object) => (called.push(method), request(method, params, options))) as typeof client.request;
      client.notify = (method, params) => (called.push(method), notify(method, params));
      const uri = pathToFileURL(join(workspace, 'src/main.rs')).href;

      await client.open({ sessionId: 'all', model: 'gpt-4o', contextWindow: 64000 });
      const { ids } = await client.append({ sessionId: 'all', messages: conversation(3) });
      await client.notifyAppend({ sessionId: 'all', messages: [{ role: 'user', content: 'And now the docs.' }] });
      assert.equal((await client.history({ sessionId: 'all' })).messages.at(-1)?.content, 'And now the docs.');
      assert.equal((await client.check({ sessionId: 'all' })).shouldCompact, false);
      assert.deepEqual(await client.setAutoCompact({ sessionId: 'all', enabled: false }), { sessionId: 'all', enabled: false });
      assert.equal((await client.preview({ sessionId: 'all', strategy: 'prune' })).strategy, 'prune');
      assert.deepEqual((await client.pin({ sessionId: 'all', text: 'Use the 2021 edition.' })).pins, ['Use the 2021 edition.']);
      assert.equal((await client.compact({ sessionId: 'all', keepRecentTokens: 200 })).compacted, true);
      assert.equal((await client.compactions({ sessionId: 'all' })).compactions.length, 1);
      assert.equal((await client.branch({ sessionId: 'all', beforeMessageId: ids[4] })).messageCount, 4);
      assert.equal((await client.reportError({ sessionId: 'all', status: 429, message: 'Rate limit exceeded' })).kind, 'rateLimit');
      assert.equal((await client.import({ content: '[{"role":"user","content":"hi"}]', format: 'openai', sessionId: 'imported' })).messages, 1);
      assert.match((await client.recap({ sessionId: 'all' })).instructions, /compactd follows this session/);
      assert.equal((await client.search({ sessionId: 'all', query: 'And now the docs.' })).hits[0]?.role, 'user');
      assert.equal((await client.messages({ sessionId: 'all', ids: [ids[0]] })).messages[0].message.id, ids[0]);
      const transcript = join(workspace, 'claude-code.jsonl');
      writeFileSync(transcript, CLAUDE_CODE_TRANSCRIPT);
      const followed = await client.follow({ path: transcript });
      assert.deepEqual([followed.agentName, followed.meter.contextTokens, followed.meter.source], ['Claude Code', 1012, 'usage']);
      assert.ok(Array.isArray((await client.listAgentSessions({ workspace })).sessions));
      assert.deepEqual(await client.unfollow({ sessionId: followed.sessionId }), { sessionId: followed.sessionId, unfollowed: true });
      await client.filesDidRead({ sessionId: 'all', path: join(workspace, 'src/main.rs') });
      await client.filesDidModify({ sessionId: 'all', path: 'src/lib.rs' });
      await client.filesDidCreate({ sessionId: 'all', path: 'src/new.rs' });
      await client.filesDidDelete({ sessionId: 'all', path: 'src/old.rs' });
      await client.didOpen({ textDocument: { uri, languageId: 'rust', version: 1, text: 'fn main() {}\n' } });
      await client.didChange({ textDocument: { uri, version: 2 }, contentChanges: [{ text: 'fn main() { run() }\n' }] });
      await client.didSave({ textDocument: { uri }, text: 'fn main() { run() }\n' });
      await client.didClose({ textDocument: { uri } });
      await client.didChangeWatchedFiles({ changes: [{ uri: pathToFileURL(join(workspace, 'src/gen.rs')).href, type: 1 }] });
      // No compaction runs under this token: the server ignores it.
      await client.workDoneProgressCancel({ token: 'no-such-progress' });
      const statuses = Object.fromEntries((await client.filesList({ sessionId: 'all' })).files.map((f) => [f.displayPath, f.status]));
      assert.deepEqual(
        [statuses['src/lib.rs'], statuses['src/new.rs'], statuses['src/old.rs'], statuses['src/main.rs'], statuses['src/gen.rs']],
        ['modified', 'created', 'deleted', 'modified', 'created'],
      );
      assert.ok(Array.isArray((await client.filesUnchangedSinceRead({ sessionId: 'all' })).files));
      // On stdio the one client gets every notification: these change nothing.
      assert.equal((await client.subscribe({ sessionId: 'all' })).open, true);
      assert.equal((await client.unsubscribe({ sessionId: 'all' })).wasSubscribed, true);
      await client.authenticate({ token: 'only a WebSocket connection needs one' });
      assert.deepEqual(await client.closeSession({ sessionId: 'imported' }), { sessionId: 'imported', closed: true });
      const meter = next<TokensNotification>('the meter with the new limit', (h) => client.onTokens(h), (n) => n.sessionId === 'all');
      await client.changeConfiguration({ autoCompactTokenLimit: 1234 });
      assert.equal((await meter).autoCompactAt, 1234);

      const own = m.METHODS.filter((x) => x.params !== null && x.kind !== 'serverNotification').map((x) => x.name);
      assert.deepEqual([...new Set(called)].filter((x) => x !== m.DID_CHANGE_CONFIGURATION).sort(), [...new Set(own)].sort());
    });
  });

  test('appends sent as notifications in a burst are applied in order', async () => {
    await withClient({}, async (client) => {
      await client.open({ sessionId: 'burst' });
      await Promise.all(Array.from({ length: 200 }, (_, i) => client.notifyAppend({ sessionId: 'burst', messages: [{ role: 'user', content: `message ${i}` }] })));
      const history = await client.history({ sessionId: 'burst' });
      assert.deepEqual(history.messages.map((x) => x.content), Array.from({ length: 200 }, (_, i) => `message ${i}`));
    });
  });

  test('the server creates progress tokens for auto-compaction; the client answers and reports them', async () => {
    await withClient({ configuration: { keepRecentTokens: 400, autoCompactTokenLimit: 2000 } }, async (client) => {
      type Reported = [string | number, WorkDoneProgressValue];
      const progress: Reported[] = [];
      client.onUnhandledProgress((token, value) => progress.push([token, value]));
      const compacted = next<DidCompactNotification>('auto-compaction', (h) => client.onDidCompact(h));
      // Progress under a token the server created waits for the client's
      // answer to window/workDoneProgress/create, so it may follow didCompact.
      const ended = next<Reported>('progress end', (h) => client.onUnhandledProgress((token, value) => h([token, value])), ([, v]) => v.kind === 'end');
      await client.open({ sessionId: 'auto' });
      assert.equal((await client.append({ sessionId: 'auto', messages: conversation(6) })).compacting, true);
      const done = await compacted;
      assert.equal(done.trigger, 'threshold');
      await ended;
      assert.deepEqual(progress.map(([, v]) => v.kind), ['begin', 'end']);
      assert.equal(progress[0][0], progress[1][0]);
    });
  });
});

describe('cancellation', () => {
  test('aborting the signal sends $/cancelRequest: -32800, progress ends, the history is untouched', async () => {
    await withClient({ configuration: SLOW_SUMMARIZER }, async (client) => {
      await client.open({ sessionId: 'c' });
      await client.append({ sessionId: 'c', messages: conversation(6) });
      const before = await client.history({ sessionId: 'c' });
      const controller = new AbortController();
      const values: WorkDoneProgressValue[] = [];
      const ended = next<WorkDoneProgressValue>('progress end', (h) => client.onProgress('c1', h), (v) => v.kind === 'end');
      client.onProgress('c1', (value) => {
        values.push(value);
        if (value.kind === 'begin') controller.abort();
      });
      await assert.rejects(client.compact({ sessionId: 'c', workDoneToken: 'c1' }, { signal: controller.signal }), (e: Error) => {
        assert.equal(errorCode(e), m.REQUEST_CANCELLED);
        assert.ok(isCancelled(e));
        return true;
      });
      assert.match((await ended).message ?? '', /cancel/);
      assert.deepEqual(await client.history({ sessionId: 'c' }), before);
      assert.deepEqual((await client.compactions({ sessionId: 'c' })).compactions, []);
      await assert.rejects(client.compact({ sessionId: 'c' }, { signal: controller.signal }), (e: Error) => e instanceof RequestAborted && isCancelled(e));
    });
  });

  test('workDoneProgressCancel stops an automatic compaction from its progress; the history is untouched', async () => {
    await withClient({ configuration: { ...SLOW_SUMMARIZER, autoCompactTokenLimit: 2000 } }, async (client) => {
      const began = next<[string | number, WorkDoneProgressValue]>('progress begin', (h) => client.onUnhandledProgress((token, value) => h([token, value])), ([, v]) => v.kind === 'begin');
      const ended = next<WorkDoneProgressValue>('progress end', (h) => client.onUnhandledProgress((_, value) => h(value)), (v) => v.kind === 'end');
      await client.open({ sessionId: 'a' });
      assert.equal((await client.append({ sessionId: 'a', messages: conversation(6) })).compacting, true);
      const [token] = await began;
      await client.workDoneProgressCancel({ token });
      assert.match((await ended).message ?? '', /cancel/);
      assert.equal((await client.history({ sessionId: 'a' })).messages.length, 24);
      assert.deepEqual((await client.compactions({ sessionId: 'a' })).compactions, []);
    });
  });
});
