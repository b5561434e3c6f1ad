// pi session entries as compactd messages. Each message keeps its pi entry
// id, so compactd's message ids are pi's entry ids: compactd's cut
// (`firstKeptMessageId`) is pi's `firstKeptEntryId` without any table.
// The conversion is the one compactd's importer applies to a pi session
// file (src/agents/pi/transcript.rs), so a session the extension appended message by
// message and the same session imported are the same conversation (a test
// checks this on a real pi run).

import type { SessionEntry, SessionHeader } from '@mariozechner/pi-coding-agent';
import type { Content, Message, Part, ToolCall, Usage } from 'compactd-client';

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

/** A pi block that is not text as a compactd part: an image, or thinking with its signature. */
function partOf(block: Loose): Part | undefined {
  if (block.type === 'image') {
    const part: Part = { type: 'image' };
    if (block.mimeType !== undefined) part.mediaType = block.mimeType as string;
    if (block.data !== undefined) part.data = block.data as string;
    return part;
  }
  if (block.type === 'thinking' && typeof block.thinking === 'string') {
    const part: Part = { type: 'thinking', thinking: block.thinking };
    if (block.thinkingSignature !== undefined) part.signature = block.thinkingSignature as string;
    return part;
  }
  return undefined;
}

/**
 * A pi content as compactd's: a string while it holds only text (text
 * blocks joined by lines), else its parts in order, images and thinking
 * kept (tool calls are read apart). As compactd's importer reads it.
 */
export function contentOf(content: unknown): Content {
  if (!Array.isArray(content) || !content.some((b) => b && typeof b === 'object' && partOf(b as Loose))) {
    return contentText(content);
  }
  let text = '';
  let parts: Part[] | undefined;
  for (const block of content) {
    const b = (block && typeof block === 'object' ? block : { text: block }) as Loose;
    const part = typeof block === 'string' ? undefined : partOf(b);
    const blockText = typeof block === 'string' ? block : b.type === 'text' || b.type === undefined ? str(b.text) : undefined;
    if (part) {
      parts ??= text ? [{ type: 'text', text }] : [];
      parts.push(part);
    } else if (blockText !== undefined) {
      if (parts) parts.push({ type: 'text', text: blockText });
      else if (blockText) text = text ? `${text}\n${blockText}` : blockText;
    }
  }
  return parts ?? text;
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
      return { role: 'user', content: contentOf(m.content) };
    case 'assistant': {
      const toolCalls: ToolCall[] = blocks(m.content, 'toolCall').map((b) => ({
        id: str(b.id) ?? '',
        name: str(b.name) ?? '',
        arguments: b.arguments && typeof b.arguments === 'object' ? (b.arguments as Record<string, unknown>) : undefined,
      }));
      // Thinking stays a part, with its signature.
      const out: Message = { role: 'assistant', content: contentOf(m.content), toolCalls };
      if (str(m.model)) out.model = str(m.model);
      const usage = usageOf(m.usage);
      if (usage) out.usage = usage;
      return out;
    }
    case 'toolResult':
      return { role: 'tool', toolCallId: str(m.toolCallId) ?? '', toolName: str(m.toolName), content: contentOf(m.content), isError: m.isError === true };
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
