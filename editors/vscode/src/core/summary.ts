// Texts shown after and about compactions. No `vscode` here.

import type { CompactResult, DidCompactNotification, PreviewResult } from 'compactd-client';

type Compaction = Pick<CompactResult, 'messagesSummarized' | 'tokensBefore' | 'tokensAfter'> & { dropped?: string[] | null };

/**
 * The same line the CLI prints: `Conversation compacted: N messages → summary; tokens A → B`;
 * for a followed agent's own compaction, `Claude Code compacted its conversation: …`, and
 * what its summary dropped (`; its summary dropped 2 of 5 modified files, the task`).
 */
export function compactedMessage(c: Compaction, agentName?: string): string {
  const what = agentName ? `${agentName} compacted its conversation` : 'Conversation compacted';
  const line = `${what}: ${c.messagesSummarized} messages → summary; tokens ${c.tokensBefore} → ${c.tokensAfter}`;
  // An agent's own compaction: what its summary left out of what must survive.
  return c.dropped?.length ? `${line}; its summary dropped ${c.dropped.join(', ')}` : line;
}

/** A summary as a Markdown document: what was compacted, then the summary as the model sees it. */
export function summaryDocument(
  sessionId: string,
  c: Pick<DidCompactNotification, 'summary' | 'tokensBefore' | 'tokensAfter' | 'messagesSummarized' | 'summarizer' | 'strategy' | 'trigger' | 'recall' | 'degraded'> & {
    degradedReason?: string | null;
  },
): string {
  const facts = [
    `- Session: \`${sessionId}\``,
    `- Strategy: ${c.strategy} (${c.trigger})`,
    `- Messages summarized: ${c.messagesSummarized}`,
    `- Tokens: ${c.tokensBefore} → ${c.tokensAfter}`,
    `- Summarizer: ${c.summarizer}${c.degraded ? ` (degraded${c.degradedReason ? `: ${c.degradedReason}` : ''})` : ''}`,
    `- Recall of what must survive: ${Math.round(c.recall * 100)}%`,
  ];
  // The summary can hold Markdown fences itself: fence it with more backticks.
  const longestRun = Math.max(2, ...(c.summary.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longestRun + 1);
  return [`# Compaction summary`, '', ...facts, '', `${fence}markdown`, c.summary, fence, ''].join('\n');
}

/** What a compaction would do, as Markdown. */
export function previewDocument(sessionId: string, p: PreviewResult): string {
  const lines = [`# Compaction preview`, '', `- Session: \`${sessionId}\``, `- Strategy: ${p.strategy}`];
  if (p.reason) lines.push(`- Would not compact: ${p.reason}`);
  lines.push(
    `- Tokens: ${p.tokensBefore} → about ${p.estimatedTokensAfter}` +
      (p.overheadTokens > 0 ? ` (${p.overheadTokens} of them system prompt and tool definitions, sent with every request)` : ''),
    `- Summarize: ${p.summarizeMessageIds.length} messages${list(p.summarizeMessageIds)}`,
    `- Keep verbatim: ${p.keepMessageIds.length} messages${list(p.keepMessageIds)}`,
    `- Prune tool output: ${p.pruneMessageIds.length} messages${list(p.pruneMessageIds)}`,
    `- First kept message: ${p.firstKeptMessageId ?? 'none'}`,
  );
  if (p.required.length) {
    lines.push('', 'The retention check will look for:', ...p.required.map((item) => `- ${item}`));
  }
  lines.push('');
  return lines.join('\n');
}

function list(ids: string[]): string {
  if (ids.length === 0) return '';
  const shown = ids.slice(0, 20).map((id) => `\`${id}\``).join(', ');
  return ` (${shown}${ids.length > 20 ? `, … ${ids.length - 20} more` : ''})`;
}
