// Typed requests to the server over any JSON-RPC connection: the extension
// passes its LanguageClient, the protocol tests a plain vscode-jsonrpc
// connection to the real binary. No `vscode` here.

import type { CancellationToken } from 'vscode-jsonrpc';
import * as m from '../protocol/methods.generated';
import type {
  AppendResult,
  BranchResult,
  CheckResult,
  CompactionsResult,
  CompactParams,
  CompactResult,
  FilesListResult,
  HistoryResult,
  Message,
  OpenParams,
  OpenResult,
  PreviewParams,
  PreviewResult,
  SetAutoCompactResult,
} from '../protocol/types';

export interface Requester {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
}

export type CompactRequest = CompactParams;

export class CompactdRequests {
  /** `connection` is asked on every call, so a restarted server is picked up. */
  constructor(private readonly connection: () => Promise<Requester>) {}

  /** Any method; the typed ones below call this. */
  async request<R>(method: string, params: object, token?: CancellationToken): Promise<R> {
    const connection = await this.connection();
    // An explicit `undefined` token would go out as a second positional
    // param (`[params, null]`), which the server rightly rejects.
    return token ? connection.sendRequest<R>(method, params, token) : connection.sendRequest<R>(method, params);
  }

  open(params: OpenParams = {}): Promise<OpenResult> {
    return this.request(m.OPEN, params);
  }

  append(sessionId: string, messages: Message[]): Promise<AppendResult> {
    return this.request(m.APPEND, { sessionId, messages });
  }

  history(sessionId: string): Promise<HistoryResult> {
    return this.request(m.HISTORY, { sessionId });
  }

  /** Cancelling `token` sends `$/cancelRequest`; the request then fails with -32800. */
  compact(params: CompactRequest, token?: CancellationToken): Promise<CompactResult> {
    return this.request(m.COMPACT, params, token);
  }

  check(sessionId: string): Promise<CheckResult> {
    return this.request(m.CHECK, { sessionId });
  }

  preview(sessionId: string, options: Omit<PreviewParams, 'sessionId'> = {}): Promise<PreviewResult> {
    return this.request(m.PREVIEW, { sessionId, ...options });
  }

  setAutoCompact(sessionId: string, enabled: boolean): Promise<SetAutoCompactResult> {
    return this.request(m.SET_AUTO_COMPACT, { sessionId, enabled });
  }

  compactions(sessionId: string): Promise<CompactionsResult> {
    return this.request(m.COMPACTIONS, { sessionId });
  }

  branch(sessionId: string, beforeMessageId: string): Promise<BranchResult> {
    return this.request(m.BRANCH, { sessionId, beforeMessageId });
  }

  files(sessionId: string): Promise<FilesListResult> {
    return this.request(m.FILES_LIST, { sessionId });
  }
}

/**
 * Reopens sessions in a restarted server: each resumes from its log with its
 * stored model and system prompt. Returns the ids that could not be resumed,
 * with why.
 */
export async function resumeSessions(requests: CompactdRequests, sessionIds: string[]): Promise<{ sessionId: string; error: string }[]> {
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
