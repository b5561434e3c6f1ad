// The status-bar meter's text, colour level and tooltip. No `vscode` here, so
// it is unit-tested in plain Node.

import type { MeterInfo } from 'compactd-client';
import { autoCompactLine, type FollowedAgent } from './follow';

export type MeterLevel = 'normal' | 'warning' | 'error';

export interface MeterThresholds {
  warningPercent: number;
  errorPercent: number;
}

export const DEFAULT_THRESHOLDS: MeterThresholds = { warningPercent: 75, errorPercent: 90 };

/** `950`, `90.4k`, `200k`, `1.2M`: at most one decimal, none when it is zero. */
export function formatTokens(tokens: number): string {
  const scaled = (value: number, unit: string) => {
    const rounded = Math.round(value * 10) / 10;
    return `${Number.isInteger(rounded) ? rounded.toFixed(0) : rounded.toFixed(1)}${unit}`;
  };
  if (tokens < 1000) return String(Math.round(tokens));
  // 999,950 rounds to 1000.0k: say 1M instead.
  if (tokens < 999_950) return scaled(tokens / 1000, 'k');
  return scaled(tokens / 1_000_000, 'M');
}

/** `90.4k/200k (45%)`; a followed agent's with its name: `Claude Code 90.4k/200k (45%)`. */
export function meterText(meter: Pick<MeterInfo, 'contextTokens' | 'contextWindow' | 'percent'>, agentName?: string): string {
  const text = `${formatTokens(meter.contextTokens)}/${formatTokens(meter.contextWindow)} (${Math.round(meter.percent)}%)`;
  return agentName ? `${agentName} ${text}` : text;
}

export function meterLevel(percent: number, thresholds: MeterThresholds = DEFAULT_THRESHOLDS): MeterLevel {
  if (percent >= thresholds.errorPercent) return 'error';
  if (percent >= thresholds.warningPercent) return 'warning';
  return 'normal';
}

/** The last compaction, as the tooltip shows it. */
export interface CompactionSummary {
  trigger: string;
  tokensBefore: number;
  tokensAfter: number;
  messagesSummarized: number;
  /** When it was applied, ms since the epoch; unknown for an agent's own compaction whose transcript does not say. */
  at?: number;
  /** Who wrote the summary (`offline`, `claude-code (imported)`: the agent's own). */
  summarizer?: string;
}

const grouped = (n: number) => n.toLocaleString('en-US');

export function timeAgo(at: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}

/** The tooltip, as Markdown. */
export function meterTooltip(
  sessionId: string,
  meter: MeterInfo,
  options: { autoCompact?: boolean; lastCompaction?: CompactionSummary; now: number },
): string {
  const source =
    meter.source === 'usage' ? "the provider's reported usage plus an estimate of later messages" : 'an estimate (o200k/cl100k tokenizer)';
  const lines = [
    `**compactd** — session \`${sessionId}\``,
    '',
    `Context: ${grouped(meter.contextTokens)} / ${grouped(meter.contextWindow)} tokens (${meter.percent.toFixed(1)}%)`,
    '',
    `Counted from: ${source}`,
    '',
    ...(meter.overheadTokens > 0
      ? [`Sent with every request: ${grouped(meter.overheadTokens)} tokens (system prompt, tool definitions; no compaction removes them)`, '']
      : []),
    options.autoCompact === false
      ? `Auto-compact: off (limit ${grouped(meter.autoCompactAt)} tokens)`
      : `Auto-compact at: ${grouped(meter.autoCompactAt)} tokens`,
    '',
  ];
  lines.push(lastCompactionLine(options.lastCompaction, options.now, 'none in this window'));
  lines.push('', 'Click to compact the conversation.');
  return lines.join('\n');
}

function lastCompactionLine(last: CompactionSummary | undefined, now: number, none: string): string {
  if (!last) return `Last compaction: ${none}`;
  const by = last.summarizer ? `, ${last.summarizer}` : '';
  return `Last compaction: ${grouped(last.tokensBefore)} → ${grouped(last.tokensAfter)} tokens, ${last.messagesSummarized} messages summarized (${last.trigger}${by}${last.at === undefined ? '' : `, ${timeAgo(last.at, now)}`})`;
}

/** A followed agent's tooltip, as Markdown: its transcript, its meter, where it compacts by itself and why, its last compaction. */
export function followedTooltip(meter: MeterInfo, followed: FollowedAgent, options: { lastCompaction?: CompactionSummary; now: number }): string {
  const { agentName, autoCompact } = followed;
  const source =
    meter.source === 'usage' ? `${agentName}'s reported usage, plus an estimate of what it wrote after it` : `an estimate, until ${agentName} reports usage`;
  return [
    `**${agentName}** — following its session (read-only)`,
    '',
    `Transcript: \`${followed.path}\``,
    '',
    `Context: ${grouped(meter.contextTokens)} / ${grouped(meter.contextWindow)} tokens (${meter.percent.toFixed(1)}%)`,
    '',
    `Counted from: ${source}`,
    '',
    `${autoCompactLine(followed)} (${autoCompact.basis}: ${autoCompact.rule})`,
    '',
    lastCompactionLine(options.lastCompaction, options.now, 'none yet'),
    '',
    'Click to follow another agent session.',
  ].join('\n');
}
