// The API other extensions get from `vscode.extensions.getExtension('compactd.compactd').activate()`.

import type * as vscode from 'vscode';
import type { CompactRequest } from './core/requests';
import type {
  AppendResult,
  CloseResult,
  CompactResult,
  DidCompactNotification,
  HistoryResult,
  Message,
  OpenParams,
  OpenResult,
  SubscribeResult,
  TokensNotification,
} from 'compactd-client';

export type { CompactRequest } from './core/requests';
export type * from 'compactd-client';

export interface CompactdApi {
  /** Bumped on incompatible changes. */
  readonly apiVersion: 1;
  /** Opens (or resumes) a conversation; it becomes the one the status bar shows. */
  openSession(params?: OpenParams): Promise<OpenResult>;
  append(sessionId: string, messages: Message[]): Promise<AppendResult>;
  /** The history to send to the model: system prompt, summary, kept and newer messages. */
  history(sessionId: string): Promise<HistoryResult>;
  /** Compacts now; progress and the "compacted" message show in the window. */
  compact(params: CompactRequest, token?: vscode.CancellationToken): Promise<CompactResult>;
  /**
   * Closes a conversation this extension opened: compactd releases its log
   * and lock (another process may open it) and cancels its running
   * compaction, and the status bar forgets it. On a shared compactd it
   * stays open while another client uses it (`closed: false`).
   */
  closeSession(sessionId: string): Promise<CloseResult>;
  /** Makes the status bar show this session. */
  showSession(sessionId: string): void;
  /**
   * Watches a session another client drives on a shared compactd
   * (`compactd.server.connect`, `conversation/subscribe`), e.g. an agent in
   * its own process: its meter and compactions reach this window, and the
   * status bar shows it. (Following an agent's transcript file is
   * `conversation/follow`, the Follow Agent Session… command.)
   */
  watchSharedSession(sessionId: string): Promise<SubscribeResult>;
  /** Any other method of the protocol (docs/protocol.md). */
  sendRequest<R>(method: string, params: object, token?: vscode.CancellationToken): Promise<R>;
  readonly onDidChangeMeter: vscode.Event<TokensNotification>;
  readonly onDidCompact: vscode.Event<DidCompactNotification>;
}
