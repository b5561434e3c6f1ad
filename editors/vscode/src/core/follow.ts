// What the extension shows of a followed agent session: the agent's name
// and transcript, and where it compacts by itself. The agents and their
// names come from the server. No `vscode` here.

import type { AgentInfo, AutoCompactPoint, DidFollowNotification, FollowResult } from 'compactd-client';

export interface FollowedAgent {
  /** The agent's name as the server gives it (`Claude Code`). */
  agentName: string;
  /** The transcript compactd reads. */
  path: string;
  workspace: string;
  autoCompact: AutoCompactPoint;
  /**
   * Followed because the user asked (Follow Agent Session…), not by
   * `follow: "auto"`: it stays followed when auto-follow moves on, and is
   * followed again after a server restart.
   */
  explicit: boolean;
}

export function followedAgent(result: FollowResult | DidFollowNotification, explicit: boolean): FollowedAgent {
  return { agentName: result.agentName, path: result.path, workspace: result.workspace, autoCompact: result.autoCompact, explicit };
}

const grouped = (n: number) => n.toLocaleString('en-US');

/** `Claude Code auto-compacts at 167,000 tokens`, `~177,000` when estimated, or that it will not. */
export function autoCompactLine(followed: Pick<FollowedAgent, 'agentName' | 'autoCompact'>): string {
  const { agentName, autoCompact } = followed;
  if (autoCompact.basis === 'off' || autoCompact.at == null) return `${agentName} does not auto-compact`;
  const approx = autoCompact.basis === 'estimate' ? '~' : '';
  return `${agentName} auto-compacts at ${approx}${grouped(autoCompact.at)} tokens`;
}

/**
 * The agents a server follows, as people know them (`Claude Code, Codex or
 * pi`), from what `initialize` reported; `agent` when it reported none.
 */
export function agentList(agents: readonly AgentInfo[] | undefined): string {
  const names = (agents ?? []).map((a) => a.displayName);
  const last = names.pop();
  if (last === undefined) return 'agent';
  return names.length ? `${names.join(', ')} or ${last}` : last;
}

/** `950 B`, `12.3 KB`, `4.5 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
