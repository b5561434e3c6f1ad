// pi session entries as compactd messages. Each message keeps its pi entry
// id, so compactd's message ids are pi's entry ids: compactd's cut
// (`firstKeptMessageId`) is pi's `firstKeptEntryId` without any table.
// The conversion is the one compactd's importer applies to a pi session
// file (src/import/pi.rs), so a session the extension appended message by
// message and the same session imported are the same conversation (a test
// checks this on a real pi run).

import type { SessionEntry, SessionHeader } from '@mariozechner/pi-coding-agent';
import type { Message, ToolCall, Usage } from 'compactd-client';

type Loose = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/** Text of a pi content (a string, or blocks): text blocks joined by lines, images as `[image]`. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block === 'string') parts.push(block);
    else if (block && typeof block === 'object') {
      const b = block as Loose;
      if (b.type === 'image' || b.type === 'input_image' || b.type === 'image_url') parts.push('[image]');
      else if (typeof b.text === 'string') parts.push(b.text);
    }
  }
  return parts.join('\n');
}

function blocks(content: unknown, type: string): Loose[] {
  return Array.isArray(content) ? content.filter((b): b is Loose => !!b && typeof b === 'object' && (b as Loose).type === type) : [];
}

function usageOf(u: unknown): Usage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const v = u as Loose;
  const usage = { input: num(v.input), output: num(v.output), cacheRead: num(v.cacheRead), cacheWrite: num(v.cacheWrite) };
  return usage.input || usage.output || usage.cacheRead || usage.cacheWrite ? usage : undefined;
}

export function branchSummaryText(summary: string): string {
  return `The following is a summary of a branch that this conversation came back from:\n\n<summary>\n${summary}\n</summary>`;
}

function bashExecutionText(m: Loose): string {
  let text = `Ran \`${str(m.command) ?? ''}\`\n\`\`\`\n${(str(m.output) ?? '').trimEnd()}\n\`\`\``;
  if (m.cancelled === true) text += '\n(command cancelled)';
  else if (typeof m.exitCode === 'number' && m.exitCode !== 0) text += `\nCommand exited with code ${m.exitCode}`;
  return text;
}

/** A pi message (`entry.message`) as a compactd message without id; undefined when pi keeps it out of the model's context. */
export function messageOf(m: Loose): Message | undefined {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: contentText(m.content) };
    case 'assistant': {
      const thinking = blocks(m.content, 'thinking').map((b) => str(b.thinking)).filter((t): t is string => t !== undefined);
      const toolCalls: ToolCall[] = blocks(m.content, 'toolCall').map((b) => ({
        id: str(b.id) ?? '',
        name: str(b.name) ?? '',
        arguments: b.arguments && typeof b.arguments === 'object' ? (b.arguments as Record<string, unknown>) : undefined,
      }));
      const out: Message = {
        role: 'assistant',
        content: blocks(m.content, 'text').map((b) => str(b.text)).filter((t): t is string => t !== undefined).join('\n'),
        toolCalls,
      };
      if (thinking.length) out.thinking = thinking.join('\n');
      if (str(m.model)) out.model = str(m.model);
      const usage = usageOf(m.usage);
      if (usage) out.usage = usage;
      return out;
    }
    case 'toolResult':
      return { role: 'tool', toolCallId: str(m.toolCallId) ?? '', toolName: str(m.toolName), content: contentText(m.content), isError: m.isError === true };
    case 'bashExecution':
      return m.excludeFromContext === true ? undefined : { role: 'user', content: bashExecutionText(m) };
    case 'custom':
    case 'hookMessage':
      return { role: 'user', content: contentText(m.content) };
    case 'branchSummary':
      return { role: 'user', content: branchSummaryText(str(m.summary) ?? '') };
    case 'compactionSummary':
      return { role: 'user', content: str(m.summary) ?? '' };
    default:
      return undefined;
  }
}

/** The compactd message for a session entry (with the entry's id), or undefined for entries that are no message. */
export function entryMessage(entry: SessionEntry): Message | undefined {
  let message: Message | undefined;
  if (entry.type === 'message') message = messageOf(entry.message as unknown as Loose);
  else if (entry.type === 'custom_message') message = { role: 'user', content: contentText(entry.content) };
  else if (entry.type === 'branch_summary') message = { role: 'user', content: branchSummaryText(entry.summary) };
  return message && { ...message, id: entry.id };
}

/** The branch (root to leaf) as a pi session file, for `conversation/import`. */
export function sessionJsonl(header: SessionHeader | null, branch: SessionEntry[]): string {
  const lines = header ? [header, ...branch] : branch;
  return lines.map((e) => JSON.stringify(e)).join('\n') + '\n';
}
