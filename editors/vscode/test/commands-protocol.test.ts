// The commands' other methods (Preview Compaction, Toggle Auto-Compact,
// Show Last Summary, Branch Before Message) against the real binary.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { branchItems } from '../src/core/pickers';
import { serverConfiguration } from '../src/core/settings';
import { previewDocument, summaryDocument } from '../src/core/summary';
import { conversation, startServer, type TestServer } from './support/server';

describe('command methods against the real server', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ initializationOptions: serverConfiguration((k) => ({ keepRecentTokens: 400 })[k]) });
  });
  after(() => server.close());

  test('conversation/preview (Preview Compaction) plans without compacting', async () => {
    await server.requests.open({ sessionId: 'preview', model: 'gpt-4o' });
    const appended = await server.requests.append({ sessionId: 'preview', messages: conversation(8) });
    const historyBefore = await server.requests.history({ sessionId: 'preview' });
    const preview = await server.requests.preview({ sessionId: 'preview' });
    assert.equal(preview.compacted, false);
    assert.equal(preview.tokensBefore, appended.meter.contextTokens);
    assert.ok(preview.summarizeMessageIds.length > 0);
    assert.ok(preview.estimatedTokensAfter < preview.tokensBefore);
    assert.ok(preview.firstKeptMessageId && appended.ids.includes(preview.firstKeptMessageId));
    assert.deepEqual(await server.requests.history({ sessionId: 'preview' }), historyBefore, 'a preview changes nothing');
    assert.match(previewDocument('preview', preview), new RegExp(`- Summarize: ${preview.summarizeMessageIds.length} messages`));
  });

  test('conversation/check and conversation/setAutoCompact (Toggle Auto-Compact)', async () => {
    await server.requests.open({ sessionId: 'toggle' });
    assert.equal((await server.requests.check({ sessionId: 'toggle' })).autoCompact, true);
    assert.deepEqual(await server.requests.setAutoCompact({ sessionId: 'toggle', enabled: false }), { sessionId: 'toggle', enabled: false });
    assert.equal((await server.requests.check({ sessionId: 'toggle' })).autoCompact, false);
    assert.deepEqual(await server.requests.setAutoCompact({ sessionId: 'toggle', enabled: true }), { sessionId: 'toggle', enabled: true });
  });

  test('conversation/compactions (Show Last Summary) lists what compact did', async () => {
    await server.requests.open({ sessionId: 'history-of-compactions', model: 'gpt-4o' });
    await server.requests.append({ sessionId: 'history-of-compactions', messages: conversation(8) });
    assert.deepEqual((await server.requests.compactions({ sessionId: 'history-of-compactions' })).compactions, []);
    const result = await server.requests.compact({ sessionId: 'history-of-compactions' });
    const { compactions } = await server.requests.compactions({ sessionId: 'history-of-compactions' });
    assert.equal(compactions.length, 1);
    const last = compactions[0];
    assert.equal(last.summary, result.summary);
    assert.equal(last.tokensBefore, result.tokensBefore);
    assert.equal(last.trigger, 'manual');
    assert.ok(summaryDocument('history-of-compactions', last).includes(result.summary));
  });

  test('conversation/branch (Branch Before Message) starts a new session with the earlier messages', async () => {
    await server.requests.open({ sessionId: 'trunk', model: 'gpt-4o' });
    const appended = await server.requests.append({ sessionId: 'trunk', messages: conversation(3) });
    const { messages } = await server.requests.history({ sessionId: 'trunk' });
    const items = branchItems(messages);
    const before = appended.ids[4]; // the second user message
    assert.ok(items.some((i) => i.value === before));
    const branch = await server.requests.branch({ sessionId: 'trunk', beforeMessageId: before });
    assert.notEqual(branch.sessionId, 'trunk');
    assert.equal(branch.messageCount, 4);
    const branched = await server.requests.history({ sessionId: branch.sessionId });
    assert.deepEqual(
      branched.messages.filter((m) => m.role !== 'system').map((m) => m.content),
      messages.filter((m) => m.role !== 'system').slice(0, 4).map((m) => m.content),
    );
    assert.equal((await server.requests.history({ sessionId: 'trunk' })).messages.length, messages.length, 'the original is untouched');
  });
});
