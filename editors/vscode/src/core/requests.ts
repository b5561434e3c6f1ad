// What the extension adds to compactd-client's typed methods. No `vscode` here.

import type { CompactdMethods, CompactParams } from 'compactd-client';

export type CompactRequest = CompactParams;

/**
 * Reopens sessions in a restarted server: each resumes from its log with its
 * stored model and system prompt. Returns the ids that could not be resumed,
 * with why.
 */
export async function resumeSessions(requests: CompactdMethods, sessionIds: string[]): Promise<{ sessionId: string; error: string }[]> {
  const failed: { sessionId: string; error: string }[] = [];
  for (const sessionId of sessionIds) {
    try {
      await requests.open({ sessionId });
    } catch (error) {
      failed.push({ sessionId, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return failed;
}
