// Labels for the quick picks. No `vscode` here.

import { contentText, type AgentSessionInfo, type FileInfo, type FileStatus, type Message } from 'compactd-client';
import { formatBytes } from './follow';
import { meterText, timeAgo } from './meter';
import type { SessionState } from './sessions';

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

export function sessionItems(sessions: SessionState[], activeId: string | undefined): PickItem<string>[] {
  return sessions.map((s) => ({
    label: s.followed ? `${s.followed.agentName}: ${s.sessionId}` : s.sessionId,
    description: `${meterText(s.meter)}${s.sessionId === activeId ? ' · shown' : ''}`,
    value: s.sessionId,
  }));
}

function firstLine(text: string, max = 80): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Messages one can branch before: the history's own messages, newest first,
 * without the system prompt and the compaction summary, which are not
 * messages of the log.
 */
export function branchItems(messages: Message[]): PickItem<string>[] {
  return messages
    .filter((msg) => msg.id && msg.role !== 'system' && !msg.id.startsWith('summary-'))
    .map((msg) => {
      const calls = msg.role === 'assistant' && msg.toolCalls?.length ? ` [${msg.toolCalls.map((c) => c.name).join(', ')}]` : '';
      return {
        label: `${msg.role}: ${firstLine(contentText(msg.content)) || '(empty)'}${calls}`,
        description: msg.id,
        value: msg.id as string,
      };
    })
    .reverse();
}

const STATUS_ICON: Record<FileStatus, string> = {
  read: '$(eye)',
  modified: '$(edit)',
  created: '$(new-file)',
  deleted: '$(trash)',
};

export function fileItems(files: FileInfo[]): PickItem<FileInfo>[] {
  const order: FileStatus[] = ['modified', 'created', 'deleted', 'read'];
  return [...files]
    .sort((a, b) => order.indexOf(a.status) - order.indexOf(b.status) || a.displayPath.localeCompare(b.displayPath))
    .map((f) => ({
      label: `${STATUS_ICON[f.status] ?? ''} ${f.displayPath}`.trim(),
      description: f.status,
      detail: `${f.reads} reads, ${f.modifications} modifications${f.origins.length ? ` · ${f.origins.join(', ')}` : ''}`,
      value: f,
    }));
}

/** Follow Agent Session…: newest first, as the server lists them. */
export function agentSessionItems(sessions: AgentSessionInfo[], now: number): PickItem<AgentSessionInfo>[] {
  return sessions.map((s) => ({
    label: `${s.agentName}: ${s.title?.trim() || '(no request yet)'}`,
    description: `${timeAgo(s.modified, now)} · ${formatBytes(s.size)}${s.sessionId ? ' · followed' : ''}`,
    detail: s.path,
    value: s,
  }));
}
