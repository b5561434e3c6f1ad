import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SessionTracker } from '../src/core/sessions';
import type { DidCompactNotification, TokensNotification } from 'compactd-client';

const tokens = (sessionId: string, contextTokens: number): TokensNotification => ({
  sessionId, contextTokens, contextWindow: 128_000, percent: Math.round((contextTokens / 1280) * 10) / 10, autoCompactAt: 111_617, source: 'estimate', overheadTokens: 0,
});

const didCompact = (sessionId: string, compacted = true): DidCompactNotification => ({
  sessionId, trigger: 'threshold', compacted, summary: 'S', tokensBefore: 9000, tokensAfter: 900, messagesSummarized: 12,
  readFiles: [], modifiedFiles: [], summarizer: 'offline', chunks: 1, durationMs: 3, strategy: 'checkpoint', recall: 1, degraded: false,
});

test('the newest session is shown until the user picks one', () => {
  let now = 0;
  const tracker = new SessionTracker(() => ++now);
  assert.equal(tracker.list().length, 0);
  tracker.onTokens(tokens('a', 100));
  tracker.onTokens(tokens('b', 200));
  assert.equal(tracker.active?.sessionId, 'b');
  tracker.onTokens(tokens('a', 150));
  assert.equal(tracker.active?.sessionId, 'a');
  assert.deepEqual(tracker.list().map((s) => s.sessionId), ['a', 'b']);
  tracker.select('b');
  tracker.onTokens(tokens('a', 170));
  assert.equal(tracker.active?.sessionId, 'b');
  assert.equal(tracker.get('a')?.meter.contextTokens, 170);
  tracker.select('gone');
  assert.equal(tracker.active?.sessionId, 'a', 'a pick that names no known session falls back to the newest');
});

test('didCompact records the last compaction; one that compacted nothing does not', () => {
  const tracker = new SessionTracker(() => 42);
  tracker.onTokens(tokens('a', 9000));
  tracker.onDidCompact(didCompact('a', false));
  assert.equal(tracker.get('a')?.lastCompaction, undefined);
  tracker.onDidCompact(didCompact('a'));
  const last = tracker.get('a')?.lastCompaction;
  assert.equal(last?.tokensAfter, 900);
  assert.equal(last?.trigger, 'threshold');
  assert.equal(last?.at, 42);
  assert.equal(last?.notification.summary, 'S');
  assert.equal(tracker.onDidCompact(didCompact('unknown')), undefined);
});

test('auto-compact state and clearing on restart', () => {
  const tracker = new SessionTracker();
  tracker.onTokens(tokens('a', 1));
  assert.equal(tracker.get('a')?.autoCompact, undefined);
  tracker.setAutoCompact('a', false);
  assert.equal(tracker.get('a')?.autoCompact, false);
  tracker.clear();
  assert.equal(tracker.active, undefined);
});
