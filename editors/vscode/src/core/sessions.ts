// What the extension knows about the server's sessions, fed by its
// notifications. No `vscode` here.

import type { DidCompactNotification, MeterInfo, TokensNotification } from 'compactd-client';
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
      at: this.now(),
      notification: n,
    };
    state.updatedAt = this.now();
    return state;
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
