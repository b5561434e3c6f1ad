// What the extension knows about the server's sessions, fed by its
// notifications. No `vscode` here.

import type { CompactionInfo, DidCompactNotification, DidFollowNotification, FollowResult, MeterInfo, TokensNotification } from 'compactd-client';
import { followedAgent, type FollowedAgent } from './follow';
import type { CompactionSummary } from './meter';

export interface SessionState {
  sessionId: string;
  meter: MeterInfo;
  /** The last compaction seen in this window, with its summary. */
  lastCompaction?: CompactionSummary & { notification: DidCompactNotification };
  /** Known after a toggle or a check; undefined until then. */
  autoCompact?: boolean;
  /** ms since the epoch of the last notification for this session. */
  updatedAt: number;
  /** The agent whose transcript the session mirrors, when it follows one. */
  followed?: FollowedAgent;
}

/**
 * The active session is the one the user picked, or else the one that
 * changed last: a chat extension's new conversation shows up by itself.
 */
export class SessionTracker {
  private readonly sessions = new Map<string, SessionState>();
  private picked: string | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  onTokens(n: TokensNotification): SessionState {
    const { sessionId, ...meter } = n;
    const state = this.sessions.get(sessionId) ?? { sessionId, meter, updatedAt: 0 };
    state.meter = meter;
    // A followed agent's point moves with its model and window.
    if (state.followed && meter.agentAutoCompact) state.followed.autoCompact = meter.agentAutoCompact;
    state.updatedAt = this.now();
    this.sessions.set(sessionId, state);
    return state;
  }

  onDidCompact(n: DidCompactNotification): SessionState | undefined {
    const state = this.sessions.get(n.sessionId);
    if (!state || !n.compacted) return state;
    state.lastCompaction = {
      trigger: n.trigger,
      tokensBefore: n.tokensBefore,
      tokensAfter: n.tokensAfter,
      messagesSummarized: n.messagesSummarized,
      summarizer: n.summarizer,
      at: this.now(),
      notification: n,
    };
    state.updatedAt = this.now();
    return state;
  }

  /** A session following an agent's transcript (Follow Agent Session…, or auto-follow). */
  onFollow(result: FollowResult, explicit: boolean): SessionState {
    const state = this.onTokens({ sessionId: result.sessionId, ...result.meter });
    state.followed = followedAgent(result, explicit || (state.followed?.explicit ?? false));
    return state;
  }

  /**
   * Auto-follow moved to a session that started: it is shown from now on,
   * and the one it followed before, which the server closed, is forgotten.
   */
  onDidFollow(n: DidFollowNotification): SessionState {
    if (n.previousSessionId && !this.sessions.get(n.previousSessionId)?.followed?.explicit) {
      this.forget(n.previousSessionId);
    }
    const state = this.onFollow(n, false);
    this.picked = n.sessionId;
    return state;
  }

  /**
   * The last compaction the server lists (an agent's own ones included):
   * what a followed session did before this window saw it. One already seen
   * here stays.
   */
  setLastCompaction(sessionId: string, info: CompactionInfo): void {
    const state = this.sessions.get(sessionId);
    if (!state || state.lastCompaction) return;
    const { trigger, tokensBefore, tokensAfter, messagesSummarized, summarizer } = info;
    state.lastCompaction = {
      trigger,
      tokensBefore,
      tokensAfter,
      messagesSummarized,
      summarizer,
      at: info.createdAt ?? undefined,
      notification: { ...info, sessionId, compacted: true, readFiles: [], modifiedFiles: [] },
    };
  }

  /** The server closed the session (unfollowed, or auto-follow turned off). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    if (this.picked === sessionId) this.picked = undefined;
  }

  setAutoCompact(sessionId: string, enabled: boolean): void {
    const state = this.sessions.get(sessionId);
    if (state) state.autoCompact = enabled;
  }

  get(sessionId: string): SessionState | undefined {
    return this.sessions.get(sessionId);
  }

  /** Most recently changed first. */
  list(): SessionState[] {
    return [...this.sessions.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  select(sessionId: string): void {
    this.picked = sessionId;
  }

  get active(): SessionState | undefined {
    if (this.picked !== undefined) {
      const picked = this.sessions.get(this.picked);
      if (picked) return picked;
    }
    return this.list()[0];
  }

  /** After a server restart every session must be seen again. */
  clear(): void {
    this.sessions.clear();
  }
}
