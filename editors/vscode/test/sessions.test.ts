import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resumeSessions } from '../src/core/requests';
import { SessionTracker } from '../src/core/sessions';
import type { CompactdMethods, DidCompactNotification, DidFollowNotification, TokensNotification } from 'compactd-client';

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

const follow = (sessionId: string, path: string, previousSessionId?: string): DidFollowNotification => ({
  sessionId, agent: 'claude-code', agentName: 'Claude Code', path, workspace: '/w', previousSessionId,
  autoCompact: { at: 177_000, basis: 'estimate', rule: 'r' }, meter: tokens(sessionId, 100),
});

test('auto-follow shows the session it follows and forgets the one the server closed, not one the user picked', () => {
  let now = 0;
  const tracker = new SessionTracker(() => ++now);
  tracker.onTokens(tokens('chat', 500));
  tracker.select('chat');
  tracker.onDidFollow(follow('f1', '/t/1.jsonl'));
  assert.equal(tracker.active?.sessionId, 'f1');
  assert.deepEqual([tracker.active?.followed?.agentName, tracker.active?.followed?.explicit], ['Claude Code', false]);
  tracker.onDidFollow(follow('f2', '/t/2.jsonl', 'f1'));
  assert.equal(tracker.get('f1'), undefined);
  assert.equal(tracker.active?.sessionId, 'f2');

  const { sessionId: _, ...picked } = follow('f1', '/t/1.jsonl');
  tracker.onFollow({ sessionId: 'f1', ...picked }, true);
  tracker.onDidFollow(follow('f3', '/t/3.jsonl', 'f1'));
  assert.equal(tracker.get('f1')?.followed?.explicit, true, 'followed on request: the server keeps it');
  // A meter carries the agent's current point.
  tracker.onTokens({ ...tokens('f3', 300), agentAutoCompact: { at: 977_000, basis: 'exact', rule: 'r2' } });
  assert.deepEqual(tracker.get('f3')?.followed?.autoCompact, { at: 977_000, basis: 'exact', rule: 'r2' });
  tracker.forget('f3');
  assert.equal(tracker.get('f3'), undefined);
});

test('the last compaction the server lists fills in what this window did not see', () => {
  const tracker = new SessionTracker(() => 42);
  tracker.onTokens(tokens('f', 100));
  const info = { id: 'c1', createdAt: 7, trigger: 'threshold', strategy: 'checkpoint', summarizer: 'claude-code (imported)', summary: 'S',
    tokensBefore: 9000, tokensAfter: 900, messagesSummarized: 12, chunks: 1, durationMs: 0, recall: 1, degraded: false } as const;
  tracker.setLastCompaction('f', info);
  assert.deepEqual([tracker.get('f')?.lastCompaction?.at, tracker.get('f')?.lastCompaction?.summarizer], [7, 'claude-code (imported)']);
  assert.equal(tracker.get('f')?.lastCompaction?.notification.summary, 'S');
  tracker.onDidCompact(didCompact('f'));
  tracker.setLastCompaction('f', info);
  assert.equal(tracker.get('f')?.lastCompaction?.at, 42, 'one seen here stays');
});

test('resumeSessions reopens sessions, follows again what the user picked, and leaves auto-follow to the server', async () => {
  const calls: string[] = [];
  const requests = {
    open: async (p: { sessionId: string }) => void calls.push(`open ${p.sessionId}`),
    follow: async (p: { path: string }) => void calls.push(`follow ${p.path}`),
  } as unknown as CompactdMethods;
  const followed = (path: string, explicit: boolean) => ({ agentName: 'pi', path, workspace: '/w', autoCompact: { basis: 'off' as const, rule: '' }, explicit });
  const failed = await resumeSessions(requests, [
    { sessionId: 'chat' },
    { sessionId: 'picked', followed: followed('/t/p.jsonl', true) },
    { sessionId: 'auto', followed: followed('/t/a.jsonl', false) },
  ]);
  assert.deepEqual(failed, []);
  assert.deepEqual(calls, ['open chat', 'follow /t/p.jsonl']);
});
