// What the extension adds to compactd-client's typed methods. No `vscode` here.

import type { CompactdMethods, CompactParams } from 'compactd-client';
import type { SessionState } from './sessions';

export type CompactRequest = CompactParams;

/**
 * Reopens sessions in a restarted server: each resumes from its log with its
 * stored model and system prompt; a session following an agent the user
 * picked is followed again (auto-follow finds its own again by itself).
 * Returns the ids that could not be resumed, with why.
 */
export async function resumeSessions(
  requests: CompactdMethods,
  sessions: Pick<SessionState, 'sessionId' | 'followed'>[],
): Promise<{ sessionId: string; error: string }[]> {
  const failed: { sessionId: string; error: string }[] = [];
  for (const { sessionId, followed } of sessions) {
    try {
      if (!followed) await requests.open({ sessionId });
      else if (followed.explicit) await requests.follow({ path: followed.path });
    } catch (error) {
      failed.push({ sessionId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return failed;
}
