// Text for pi's footer, the /compactd command and notices.

import type { CompactionInfo, MeterInfo, PreviewResult } from 'compactd-client';

/** 950, 12.3k, 200k. */
export function tokens(n: number): string {
  if (n < 1000) return String(n);
  const k = n / 1000;
  return `${k < 100 ? k.toFixed(1).replace(/\.0$/, '') : Math.round(k)}k`;
}

/** The footer: `compactd 12.3k/16k 77%`. */
export function statusText(meter: Pick<MeterInfo, 'contextTokens' | 'contextWindow' | 'percent'>): string {
  return `compactd ${tokens(meter.contextTokens)}/${tokens(meter.contextWindow)} ${Math.round(meter.percent)}%`;
}

/** One line, at most `max` characters: notices must not flood pi's UI. */
export function oneLine(text: string, max = 240): string {
  const line = text.replace(/\s*\n\s*/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

export interface Report {
  meter: MeterInfo;
  /** pi's own auto-compaction point (window − reserveTokens), when known. */
  piCompactsAbove?: number;
  preview: PreviewResult;
  keepRecentTokens: number;
  last?: CompactionInfo;
  sessionId: string;
}

/** What /compactd shows: the meter, a preview of the next compaction, the last summary. */
export function report(r: Report): string {
  const m = r.meter;
  const source = m.source === 'usage' ? "the provider's usage" : "compactd's count";
  const lines = [
    `compactd ${r.sessionId}: ${tokens(m.contextTokens)} of ${tokens(m.contextWindow)} tokens (${m.percent}%), from ${source}; ` +
      `${tokens(m.overheadTokens)} of them system prompt and tools` +
      (r.piCompactsAbove !== undefined ? `; pi compacts above ${tokens(r.piCompactsAbove)}` : ''),
  ];
  const p = r.preview;
  lines.push(
    p.summarizeMessageIds.length === 0
      ? `Next compaction: nothing to compact yet${p.reason ? ` (${p.reason})` : ''}.`
      : `Next compaction (keeping ${tokens(r.keepRecentTokens)} tokens verbatim): summarizes ${p.summarizeMessageIds.length} messages, ` +
          `keeps ${p.keepMessageIds.length} from ${p.firstKeptMessageId}; about ${tokens(p.tokensBefore)} → ${tokens(p.estimatedTokensAfter)} tokens.`,
  );
  if (!r.last) lines.push('No compaction yet.');
  else {
    const l = r.last;
    lines.push(
      `Last compaction (${l.trigger}, ${l.strategy}, ${l.summarizer}${l.degraded ? ', degraded' : ''}): ` +
        `${tokens(l.tokensBefore)} → ${tokens(l.tokensAfter)} tokens, ${l.messagesSummarized} messages summarized. Its summary:`,
      '',
      l.summary,
    );
  }
  return lines.join('\n');
}
