import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compactedMessage, previewDocument, summaryDocument } from '../src/core/summary';

test('compactedMessage matches the CLI line', () => {
  assert.equal(
    compactedMessage({ messagesSummarized: 29, tokensBefore: 5182, tokensAfter: 1022 }),
    'Conversation compacted: 29 messages → summary; tokens 5182 → 1022',
  );
});

test('summaryDocument states the facts, then the summary verbatim in a fence longer than any inside it', () => {
  const summary = '## Goals\n- fix it\n\n```rust\nfn main() {}\n```\n<read-files>\nsrc/a.rs\n</read-files>';
  const facts = { summary, tokensBefore: 1261, tokensAfter: 139, messagesSummarized: 1, summarizer: 'offline', strategy: 'checkpoint' as const };
  const doc = summaryDocument('demo', { ...facts, trigger: 'manual', recall: 1, degraded: false });
  assert.match(doc, /^# Compaction summary\n/);
  assert.match(doc, /- Tokens: 1261 → 139/);
  assert.match(doc, /- Strategy: checkpoint \(manual\)/);
  assert.match(doc, /- Summarizer: offline\n/);
  assert.match(doc, /- Recall of what must survive: 100%/);
  const degraded = summaryDocument('demo', { ...facts, trigger: 'threshold', recall: 0.754, degraded: true, degradedReason: 'summary too long' });
  assert.match(degraded, /- Summarizer: offline \(degraded: summary too long\)/);
  assert.match(degraded, /- Recall of what must survive: 75%/);
  assert.ok(doc.includes('````markdown\n' + summary + '\n````\n'), doc);
});

test('previewDocument lists what would be summarized, kept and pruned', () => {
  const doc = previewDocument('demo', {
    strategy: 'checkpoint',
    compacted: false,
    firstKeptMessageId: 'm30',
    summarizeMessageIds: Array.from({ length: 25 }, (_, i) => `m${i + 1}`),
    keepMessageIds: ['m30', 'm31'],
    pruneMessageIds: [],
    tokensBefore: 5182,
    estimatedTokensAfter: 1100,
    overheadTokens: 600,
    required: ['modified file src/lib.rs', 'the latest request'],
  });
  assert.match(doc, /- Strategy: checkpoint/);
  assert.match(doc, /- Tokens: 5182 → about 1100 \(600 of them system prompt and tool definitions/);
  assert.match(doc, /- Summarize: 25 messages \(`m1`, .*`m20`, … 5 more\)/);
  assert.match(doc, /- Keep verbatim: 2 messages \(`m30`, `m31`\)/);
  assert.match(doc, /- Prune tool output: 0 messages\n/);
  assert.match(doc, /- First kept message: m30/);
  assert.match(doc, /The retention check will look for:\n- modified file src\/lib.rs\n- the latest request\n/);
  assert.doesNotMatch(doc, /Would not compact/);
  const nothing = previewDocument('demo', {
    strategy: 'checkpoint', compacted: false, firstKeptMessageId: null, summarizeMessageIds: [], keepMessageIds: ['m1'],
    pruneMessageIds: [], tokensBefore: 10, estimatedTokensAfter: 10, overheadTokens: 0, reason: 'fits in keepRecentTokens', required: [],
  });
  assert.match(nothing, /- Would not compact: fits in keepRecentTokens/);
});
