// CompactdClient: spawns compactd, speaks LSP-framed JSON-RPC over its
// stdio (vscode-jsonrpc), runs the LSP lifecycle, and is CompactdMethods
// over that connection.

import { spawn, type ChildProcess } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { basename } from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type Disposable, type MessageConnection } from 'vscode-jsonrpc/node';
import { CompactdMethods } from './generated/api';
import * as m from './generated/methods';
import type { CompactdCapabilities, Config } from './generated/types';
import { checkServerVersion, findServer, type LocateOptions, type ServerCandidate } from './locate';
import type { ProgressToken, RequestOptions, WorkDoneProgressValue } from './rpc';

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
    readonly process: ChildProcess,
    readonly server: ServerCandidate,
    /** Resolves when the process exits, for whatever reason. */
    readonly exited: Promise<ServerExit>,
    /** Rejects with ServerExited when the process exits; every request races it. */
    private readonly gone: Promise<never>,
    private readonly stderrTail: () => string,
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

  private async shutdown(timeoutMs: number): Promise<ServerExit> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const timer = setTimeout(() => this.process.kill('SIGKILL'), timeoutMs);
      try {
        await this.request(m.SHUTDOWN, {});
        await this.connection.sendNotification(m.EXIT);
      } catch {
        this.process.kill();
      }
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    return this.exited;
  }

  private async kill(): Promise<void> {
    this.process.kill();
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
