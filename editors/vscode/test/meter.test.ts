import assert from 'node:assert/strict';
import { test } from 'node:test';
import { followedTooltip, formatTokens, meterLevel, meterText, meterTooltip, timeAgo } from '../src/core/meter';
import type { MeterInfo } from 'compactd-client';

test('formatTokens: one decimal at most, none when zero, k and M', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [950, '950'],
    [999, '999'],
    [1000, '1k'],
    [1049, '1k'],
    [1050, '1.1k'],
    [90_400, '90.4k'],
    [128_000, '128k'],
    [200_000, '200k'],
    [999_949, '999.9k'],
    [999_950, '1M'],
    [1_000_000, '1M'],
    [1_250_000, '1.3M'],
  ];
  for (const [tokens, text] of cases) assert.equal(formatTokens(tokens), text, `${tokens}`);
});

test('meterText is `90.4k/200k (45%)`', () => {
  assert.equal(meterText({ contextTokens: 90_400, contextWindow: 200_000, percent: 45.2 }), '90.4k/200k (45%)');
  assert.equal(meterText({ contextTokens: 139, contextWindow: 128_000, percent: 0.1 }), '139/128k (0%)');
  assert.equal(meterText({ contextTokens: 199_000, contextWindow: 200_000, percent: 99.5 }), '199k/200k (100%)');
});

test('meterLevel: warning from 75%, error from 90%, thresholds configurable', () => {
  assert.equal(meterLevel(74.9), 'normal');
  assert.equal(meterLevel(75), 'warning');
  assert.equal(meterLevel(89.9), 'warning');
  assert.equal(meterLevel(90), 'error');
  assert.equal(meterLevel(100), 'error');
  const custom = { warningPercent: 50, errorPercent: 60 };
  assert.equal(meterLevel(49, custom), 'normal');
  assert.equal(meterLevel(55, custom), 'warning');
  assert.equal(meterLevel(60, custom), 'error');
});

const meter: MeterInfo = {
  contextTokens: 90_400, contextWindow: 200_000, percent: 45.2, autoCompactAt: 180_000, source: 'usage', overheadTokens: 17_900,
};

test('the tooltip breaks the meter down', () => {
  const now = Date.UTC(2026, 0, 1, 12);
  const tip = meterTooltip('demo', meter, {
    now,
    lastCompaction: { trigger: 'manual', tokensBefore: 120_000, tokensAfter: 9_000, messagesSummarized: 40, at: now - 5 * 60_000 },
  });
  assert.match(tip, /session `demo`/);
  assert.match(tip, /90,400 \/ 200,000 tokens \(45\.2%\)/);
  assert.match(tip, /provider's reported usage/);
  assert.match(tip, /Sent with every request: 17,900 tokens \(system prompt, tool definitions/);
  assert.match(tip, /Auto-compact at: 180,000 tokens/);
  assert.match(tip, /Last compaction: 120,000 → 9,000 tokens, 40 messages summarized \(manual, 5 min ago\)/);

  const estimate = meterTooltip('demo', { ...meter, source: 'estimate', overheadTokens: 0 }, { now, autoCompact: false });
  assert.doesNotMatch(estimate, /Sent with every request/, 'nothing declared and no usage yet');
  assert.match(estimate, /an estimate/);
  assert.match(estimate, /Auto-compact: off/);
  assert.match(estimate, /Last compaction: none/);
});

test('timeAgo', () => {
  assert.equal(timeAgo(0, 30_000), 'just now');
  assert.equal(timeAgo(0, 90_000), '2 min ago');
  assert.equal(timeAgo(0, 3 * 3_600_000), '3 h ago');
  assert.equal(timeAgo(0, 72 * 3_600_000), '3 days ago');
});

const followed = (basis: 'exact' | 'estimate' | 'off', at: number | null) => ({
  agentName: 'Claude Code',
  path: '/home/me/.claude/projects/-home-me-proj/5217d838.jsonl',
  workspace: '/home/me/proj',
  autoCompact: { at, basis, rule: `Claude Code: the rule (${basis})` },
  explicit: false,
});

test('a followed agent: its name on the meter, its transcript, point and last compaction in the tooltip', () => {
  assert.equal(meterText({ contextTokens: 90_400, contextWindow: 200_000, percent: 45.2 }, 'Claude Code'), 'Claude Code 90.4k/200k (45%)');
  const now = Date.UTC(2026, 0, 1, 12);
  const tip = followedTooltip(meter, followed('estimate', 177_000), {
    now,
    lastCompaction: { trigger: 'threshold', tokensBefore: 160_000, tokensAfter: 21_000, messagesSummarized: 80, summarizer: 'claude-code (imported)', at: now - 3 * 60_000 },
  });
  assert.match(tip, /^\*\*Claude Code\*\* — following its session/);
  assert.match(tip, /Transcript: `\/home\/me\/\.claude\/projects\/-home-me-proj\/5217d838\.jsonl`/);
  assert.match(tip, /Context: 90,400 \/ 200,000 tokens \(45\.2%\)/);
  assert.match(tip, /Claude Code's reported usage/);
  assert.match(tip, /Claude Code auto-compacts at ~177,000 tokens \(estimate: Claude Code: the rule \(estimate\)\)/);
  assert.match(tip, /Last compaction: 160,000 → 21,000 tokens, 80 messages summarized \(threshold, claude-code \(imported\), 3 min ago\)/);
  assert.match(followedTooltip(meter, followed('exact', 977_000), { now }), /auto-compacts at 977,000 tokens \(exact/);
  assert.match(followedTooltip(meter, followed('off', null), { now }), /Claude Code does not auto-compact \(off/);
  assert.match(followedTooltip({ ...meter, source: 'estimate' }, followed('off', null), { now }), /an estimate, until Claude Code reports usage/);
  assert.match(followedTooltip(meter, followed('off', null), { now }), /Last compaction: none yet/);
});
