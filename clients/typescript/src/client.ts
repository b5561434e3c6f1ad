// CompactdClient: spawns compactd, speaks LSP-framed JSON-RPC over its
// stdio (vscode-jsonrpc), runs the LSP lifecycle, and is CompactdMethods
// over that connection; or attaches to a shared compactd over WebSocket.

import { spawn, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { basename } from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type Disposable, type MessageConnection } from 'vscode-jsonrpc/node';
import { CompactdMethods } from './generated/api';
import * as m from './generated/methods';
import type { CompactdCapabilities, Config } from './generated/types';
import { checkServerVersion, findServer, type LocateOptions, type ServerCandidate } from './locate';
import type { ProgressToken, RequestOptions, WorkDoneProgressValue } from './rpc';
import { connectWebSocket, discoveryPath, liveDiscovery, readDiscovery } from './shared';
import type WebSocket from 'ws';

export interface SpawnOptions extends LocateOptions {
  /** Arguments after the binary, e.g. `['--no-user-config']`. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The configuration (`initializationOptions`); `compactd.toml` files fill in the rest. */
  configuration?: Config;
  /** Workspace roots (directories): file paths in summaries are shown relative to the first. */
  workspaceFolders?: string[];
  /**
   * Let the server create progress tokens itself (`window/workDoneProgress/create`),
   * so compactions nobody asked for (auto, overflow) report `$/progress` too;
   * see `onUnhandledProgress`. Default true.
   */
  workDoneProgress?: boolean;
  /** The server's log (stderr): `'inherit'`, `'ignore'`, or a function given each chunk. Default: kept (the last 64 KiB) for error messages. */
  stderr?: 'inherit' | 'ignore' | ((text: string) => void);
  /** Run `compactd --version` first and refuse a program that is not compactd. Default true. */
  checkVersion?: boolean;
  clientInfo?: { name: string; version?: string };
}

export interface ConnectOptions {
  /** The shared compactd's URL (`ws://127.0.0.1:PORT/`). Default: the discovery file's. */
  url?: string;
  /** Default: `$COMPACTD_TOKEN`, else the discovery file's. */
  token?: string;
  /** The discovery file. Default: where the server writes it (`discoveryPath()`). */
  discoveryFile?: string;
  /** As for `spawn`. Default true. */
  workDoneProgress?: boolean;
  clientInfo?: { name: string; version?: string };
}

/** What `initialize` answered. */
export interface InitializeResult {
  capabilities: { experimental?: { compactd?: CompactdCapabilities }; [key: string]: unknown };
  serverInfo?: { name: string; version?: string };
}

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The server exited (or could not be started) while a request was waiting. */
export class ServerExited extends Error {
  readonly name = 'ServerExited';
  constructor(
    message: string,
    readonly exit: ServerExit,
  ) {
    super(message);
  }
}

const STDERR_KEPT = 64 * 1024;

export class CompactdClient extends CompactdMethods {
  private closing: Promise<ServerExit> | undefined;
  private readonly unhandledProgress = new Set<(token: ProgressToken, value: WorkDoneProgressValue) => void>();

  private constructor(
    readonly connection: MessageConnection,
    /** The spawned server; undefined when attached to a shared one. */
    readonly process: ChildProcess | undefined,
    /** The spawned binary, or the shared server's URL. */
    readonly server: ServerCandidate | { path: string; source: 'shared' },
    /** Resolves when the process exits, for whatever reason. */
    readonly exited: Promise<ServerExit>,
    /** Rejects with ServerExited when the process exits; every request races it. */
    private readonly gone: Promise<never>,
    private readonly stderrTail: () => string,
    /** The WebSocket to a shared compactd, when attached to one. */
    readonly socket?: WebSocket,
  ) {
    super(connection);
    connection.onUnhandledProgress(({ token, value }) => {
      for (const handler of [...this.unhandledProgress]) handler(token, value as WorkDoneProgressValue);
    });
    connection.onRequest(m.WORK_DONE_PROGRESS_CREATE, () => null);
  }

  /** What `initialize` answered; set once `spawn` resolves. */
  initializeResult!: InitializeResult;
  /** `compactd --version`, when checked. */
  version: string | undefined;

  /** compactd's own capabilities: its version, methods and notifications. */
  get capabilities(): CompactdCapabilities | undefined {
    return this.initializeResult.capabilities.experimental?.compactd;
  }

  /** Locates, vets and starts compactd, and initializes it. Rejects with the server's words when it refuses the configuration. */
  static async spawn(options: SpawnOptions = {}): Promise<CompactdClient> {
    const server = findServer(options);
    const version = options.checkVersion === false ? undefined : await checkServerVersion(server);
    const child = spawn(server.path, options.args ?? [], {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', options.stderr === 'inherit' ? 'inherit' : options.stderr === 'ignore' ? 'ignore' : 'pipe'],
    });
    let log = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      if (typeof options.stderr === 'function') options.stderr(chunk);
      else log = (log + chunk).slice(-STDERR_KEPT);
    });
    // Writes after the process died fail through the connection, not as an uncaught error.
    child.stdin?.on('error', () => undefined);
    const exited = new Promise<ServerExit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    let spawnError: Error | undefined;
    child.once('error', (e) => (spawnError = e));
    const gone = exited.then((exit): never => {
      const why = spawnError ? `could not be started (${spawnError.message})` : `exited (${exit.signal ?? `code ${exit.code}`})`;
      const tail = log.trim().split('\n').slice(-5).join('\n');
      throw new ServerExited(`compactd at ${server.path} ${why}${tail ? `:\n${tail}` : ''}`, exit);
    });
    gone.catch(() => undefined);
    const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    exited.then(() => connection.dispose());
    const client = new CompactdClient(connection, child, server, exited, gone, () => log);
    client.version = version;
    connection.listen();
    try {
      client.initializeResult = await client.request<InitializeResult>(m.INITIALIZE, initializeParams(options));
    } catch (error) {
      await client.kill();
      throw error;
    }
    await connection.sendNotification(m.INITIALIZED, {});
    return client;
  }

  /**
   * Attaches to a shared compactd (`compactd serve --listen`) over
   * WebSocket, as one of its clients: the server's configuration applies
   * (no `configuration` here), sessions may be shared with other clients,
   * and `close()` ends this connection only. Rejects when none runs.
   */
  static async connect(options: ConnectOptions = {}): Promise<CompactdClient> {
    const file = options.discoveryFile ?? discoveryPath();
    const found = options.url ? readDiscovery(file) : liveDiscovery(file);
    const url = options.url ?? found?.url;
    const token = options.token ?? process.env.COMPACTD_TOKEN ?? found?.token;
    if (!url || !token) throw new Error(`no shared compactd: ${file} is missing or names a server that is gone`);
    const { reader, writer, socket } = await connectWebSocket(url, token);
    const exited = new Promise<ServerExit>((resolve) => socket.once('close', () => resolve({ code: null, signal: null })));
    const gone = exited.then((): never => {
      throw new ServerExited(`compactd at ${url} closed the connection`, { code: null, signal: null });
    });
    gone.catch(() => undefined);
    const connection = createMessageConnection(reader, writer);
    exited.then(() => connection.dispose());
    const client = new CompactdClient(connection, undefined, { path: url, source: 'shared' }, exited, gone, () => '', socket);
    connection.listen();
    try {
      client.initializeResult = await client.request<InitializeResult>(m.INITIALIZE, {
        processId: process.pid,
        clientInfo: options.clientInfo ?? { name: 'compactd-client' },
        rootUri: null,
        capabilities: { window: { workDoneProgress: options.workDoneProgress ?? true } },
      });
    } catch (error) {
      socket.terminate();
      throw error;
    }
    await connection.sendNotification(m.INITIALIZED, {});
    return client;
  }

  /** A shared compactd when one runs (`connect`), else a spawned one (`spawn`). */
  static async connectOrSpawn(options: SpawnOptions & { connect?: ConnectOptions } = {}): Promise<CompactdClient> {
    if (liveDiscovery(options.connect?.discoveryFile ?? discoveryPath())) {
      try {
        return await CompactdClient.connect({ workDoneProgress: options.workDoneProgress, clientInfo: options.clientInfo, ...options.connect });
      } catch {
        // A stale file whose pid was reused, or a server going away: start our own.
      }
    }
    return CompactdClient.spawn(options);
  }

  override async request<R>(method: string, params: object, options?: RequestOptions): Promise<R> {
    return Promise.race([super.request<R>(method, params, options), this.gone]);
  }

  /** Progress under tokens this client did not subscribe to: the ones the server created (auto and overflow compactions). */
  onUnhandledProgress(handler: (token: ProgressToken, value: WorkDoneProgressValue) => void): Disposable {
    this.unhandledProgress.add(handler);
    return { dispose: () => void this.unhandledProgress.delete(handler) };
  }

  /** Live configuration (`workspace/didChangeConfiguration`): replaces what `configuration` set. */
  changeConfiguration(settings: Config): Promise<void> {
    return this.notify(m.DID_CHANGE_CONFIGURATION, { settings });
  }

  /** The end of the server's log (when `stderr` was left at its default). */
  stderr(): string {
    return this.stderrTail();
  }

  /**
   * `shutdown`, then `exit`, then waits for the process (killing it after
   * `timeoutMs`). Safe to call twice; resolves with how the process ended.
   */
  close(timeoutMs = 5_000): Promise<ServerExit> {
    this.closing ??= this.shutdown(timeoutMs);
    return this.closing;
  }

  private running(): boolean {
    if (this.process) return this.process.exitCode === null && this.process.signalCode === null;
    return this.socket?.readyState === 1;
  }

  private async shutdown(timeoutMs: number): Promise<ServerExit> {
    if (this.running()) {
      // On a shared compactd `exit` closes this connection; the server goes on.
      const timer = setTimeout(() => (this.process ? this.process.kill('SIGKILL') : this.socket?.terminate()), timeoutMs);
      try {
        await this.request(m.SHUTDOWN, {});
        await this.connection.sendNotification(m.EXIT);
      } catch {
        if (this.process) this.process.kill();
        else this.socket?.terminate();
      }
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    return this.exited;
  }

  private async kill(): Promise<void> {
    if (this.process) this.process.kill();
    else this.socket?.terminate();
    await this.exited;
  }
}

function initializeParams(options: SpawnOptions): object {
  const folders = (options.workspaceFolders ?? []).map((dir) => ({ uri: pathToFileURL(dir).href, name: basename(dir) }));
  return {
    processId: process.pid,
    clientInfo: options.clientInfo ?? { name: 'compactd-client' },
    rootUri: folders[0]?.uri ?? null,
    workspaceFolders: folders.length ? folders : null,
    capabilities: { window: { workDoneProgress: options.workDoneProgress ?? true } },
    initializationOptions: options.configuration ?? {},
  };
}
