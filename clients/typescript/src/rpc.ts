// The untyped layer under the generated CompactdMethods: requests,
// notifications and server-notification routing over any JSON-RPC
// connection with vscode-jsonrpc's shape (a MessageConnection, VS Code's
// LanguageClient, or the connection CompactdClient spawns).

import { CancellationTokenSource, ProgressType, ResponseError, type CancellationToken, type Disposable } from 'vscode-jsonrpc';
import { REQUEST_CANCELLED } from './generated/methods';

/** What the typed layer needs from a connection; LanguageClient and MessageConnection have it. */
export interface RpcConnection {
  sendRequest<R>(method: string, params: any, token?: CancellationToken): Promise<R>;
  sendNotification(method: string, params?: any): Promise<void>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (value: P) => void): Disposable;
}

/** A connection, or how to get the current one (asked on every call, so a restarted server is picked up). */
export type RpcSource = RpcConnection | (() => RpcConnection | Promise<RpcConnection>);

export interface RequestOptions {
  /** Aborting sends `$/cancelRequest`; the request then rejects (see `isCancelled`). */
  signal?: AbortSignal;
  /** The same, as a vscode-jsonrpc or VS Code cancellation token. */
  token?: CancellationToken;
}

// LSP's work-done progress values, as compactd sends them under `$/progress`
// (LSP defines them, so they have no schema under schemas/).
export interface WorkDoneProgressBegin {
  kind: 'begin';
  title: string;
  cancellable?: boolean;
  message?: string;
  percentage?: number;
}
export interface WorkDoneProgressReport {
  kind: 'report';
  cancellable?: boolean;
  message?: string;
  percentage?: number | null;
}
export interface WorkDoneProgressEnd {
  kind: 'end';
  message?: string;
}
export type WorkDoneProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;
export type ProgressToken = string | number;

/** `$/progress` carrying work-done values. */
export const WORK_DONE_PROGRESS = new ProgressType<WorkDoneProgressValue>();

/** A request given an already aborted signal: it was not sent. */
export class RequestAborted extends Error {
  readonly name = 'AbortError';
  constructor(method: string) {
    super(`${method} was not sent: its signal was already aborted`);
  }
}

/** The JSON-RPC error code of a failed request, if it has one. */
export function errorCode(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'number'
    ? (error as { code: number }).code
    : undefined;
}

/** The request was cancelled: the server answered -32800, or it was never sent because its signal was aborted. */
export function isCancelled(error: unknown): boolean {
  return errorCode(error) === REQUEST_CANCELLED || error instanceof RequestAborted;
}

export { ResponseError };

type Handler = (params: any) => void;

export abstract class RpcBase {
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly listened = new Set<RpcConnection>();
  // One registration per token and connection (vscode-jsonrpc takes one
  // handler per token), fanned out to every handler of that token.
  private readonly progress = new Map<ProgressToken, { handlers: Set<(value: WorkDoneProgressValue) => void>; on: Map<RpcConnection, Disposable> }>();

  /** A fixed connection is listened to at once; with a getter, call `listen` on each connection it returns. */
  constructor(private readonly source: RpcSource) {
    if (typeof source !== 'function') this.listen(source);
  }

  /** The server notifications `listen` routes (the generated list). */
  protected abstract serverNotifications(): readonly string[];

  protected async currentConnection(): Promise<RpcConnection> {
    return typeof this.source === 'function' ? this.source() : this.source;
  }

  /** Any request by name; the typed methods call this. */
  async request<R>(method: string, params: object, options: RequestOptions = {}): Promise<R> {
    const { signal, token } = options;
    if (signal?.aborted || token?.isCancellationRequested) throw new RequestAborted(method);
    const connection = await this.currentConnection();
    if (!signal) {
      // An explicit `undefined` token would go out as a second positional
      // param (`[params, null]`), which the server rightly rejects.
      return token ? connection.sendRequest<R>(method, params, token) : connection.sendRequest<R>(method, params);
    }
    const source = new CancellationTokenSource();
    const cancel = () => source.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    const forwarded = token?.onCancellationRequested(cancel);
    try {
      return await connection.sendRequest<R>(method, params, source.token);
    } finally {
      signal.removeEventListener('abort', cancel);
      forwarded?.dispose();
      source.dispose();
    }
  }

  /** Any notification by name. */
  async notify(method: string, params: object): Promise<void> {
    const connection = await this.currentConnection();
    await connection.sendNotification(method, params);
  }

  /** Calls `handler` with every `method` notification from every listened connection. */
  on<P>(method: string, handler: (params: P) => void): Disposable {
    if (!this.serverNotifications().includes(method)) {
      throw new Error(`${method} is not a notification compactd sends (schemas/methods.json)`);
    }
    const set = this.handlers.get(method) ?? new Set<Handler>();
    this.handlers.set(method, set);
    set.add(handler);
    return { dispose: () => void set.delete(handler) };
  }

  /** Calls `handler` with the `$/progress` values of `token` (a `workDoneToken` the caller chose). */
  onProgress(token: ProgressToken, handler: (value: WorkDoneProgressValue) => void): Disposable {
    let entry = this.progress.get(token);
    if (!entry) {
      entry = { handlers: new Set(), on: new Map() };
      this.progress.set(token, entry);
      for (const connection of this.listened) entry.on.set(connection, this.forwardProgress(connection, token));
    }
    entry.handlers.add(handler);
    const added = entry;
    return {
      dispose: () => {
        added.handlers.delete(handler);
        if (added.handlers.size > 0 || this.progress.get(token) !== added) return;
        this.progress.delete(token);
        for (const d of added.on.values()) d.dispose();
      },
    };
  }

  private forwardProgress(connection: RpcConnection, token: ProgressToken): Disposable {
    return connection.onProgress(WORK_DONE_PROGRESS, token, (value) => {
      for (const handler of [...(this.progress.get(token)?.handlers ?? [])]) handler(value);
    });
  }

  /** Routes `connection`'s server notifications and progress to this object's handlers, until disposed. */
  listen(connection: RpcConnection): Disposable {
    this.listened.add(connection);
    const subscriptions = this.serverNotifications().map((method) =>
      connection.onNotification(method, (params) => {
        for (const handler of [...(this.handlers.get(method) ?? [])]) handler(params);
      }),
    );
    for (const [token, entry] of this.progress) entry.on.set(connection, this.forwardProgress(connection, token));
    return {
      dispose: () => {
        this.listened.delete(connection);
        for (const s of subscriptions) s.dispose();
        for (const entry of this.progress.values()) {
          entry.on.get(connection)?.dispose();
          entry.on.delete(connection);
        }
      },
    };
  }
}
