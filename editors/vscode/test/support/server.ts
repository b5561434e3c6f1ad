// Spawns the real compactd binary and speaks to it with vscode-jsonrpc, the
// library under vscode-languageclient. Every message the server sends is
// recorded in arrival order, so tests can assert order and wait on events
// instead of sleeping.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { CompactdMethods } from 'compactd-client';

/** editors/vscode, from out/test/support. */
export const PACKAGE_ROOT = resolve(__dirname, '../../..');

/** COMPACTD_BIN, else the debug build of this repository. */
export function serverBinary(): string {
  const bin = process.env.COMPACTD_BIN ?? resolve(PACKAGE_ROOT, '../../target/debug/compactd');
  if (!existsSync(bin)) {
    throw new Error(`no compactd binary at ${bin}: run \`cargo build\` at the repository root or set COMPACTD_BIN`);
  }
  return bin;
}

/** A bound on waiting, so a broken server fails a test instead of hanging it. Never used to wait for something to happen. */
export const PATIENCE_MS = 30_000;

export type Event =
  | { kind: 'notification'; method: string; params: any }
  | { kind: 'progress'; token: string | number; value: any }
  | { kind: 'response'; id: string; result?: any; error?: { code: number; message: string } };

export interface TestServer {
  connection: MessageConnection;
  /** The extension's typed methods (compactd-client) over this connection; the events above record what arrives. */
  requests: CompactdMethods;
  events: Event[];
  initializeResult: any;
  /** The server's HOME, where the agents keep their sessions. */
  home: string;
  /** Resolves with the first event (already received or future) that matches. */
  waitFor(what: string, match: (e: Event) => boolean): Promise<Event>;
  /** Calls `listener` with every server notification, in arrival order. */
  onNotification(listener: (method: string, params: any) => void): void;
  /** Sends a request and records its answer as an event, after the notifications that preceded it. */
  track<R>(id: string, promise: Promise<R>): Promise<R>;
  stderr(): string;
  close(): Promise<void>;
}

export async function startServer(
  options: { initializationOptions?: object; capabilities?: object; workspace?: string } = {},
): Promise<TestServer> {
  const { server, connection, home, stderr } = spawnServer();
  const events: Event[] = [];
  const waiters: { match: (e: Event) => boolean; resolve: (e: Event) => void }[] = [];
  const listeners: ((method: string, params: any) => void)[] = [];
  const record = (event: Event) => {
    events.push(event);
    if (event.kind === 'notification') for (const l of listeners) l(event.method, event.params);
    for (const w of [...waiters]) {
      if (w.match(event)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(event);
      }
    }
  };
  connection.onNotification((method, params) => record({ kind: 'notification', method, params }));
  connection.onUnhandledProgress((p) => record({ kind: 'progress', token: p.token, value: p.value }));
  connection.listen();

  const initializeResult = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: options.workspace ? pathToFileURL(options.workspace).href : null,
    capabilities: options.capabilities ?? {},
    initializationOptions: options.initializationOptions ?? {},
  });
  await connection.sendNotification('initialized', {});

  const test: TestServer = {
    connection,
    // A getter, not the connection: CompactdMethods would claim the
    // notifications that `record` catches with its catch-all handler.
    requests: new CompactdMethods(async () => connection),
    events,
    initializeResult,
    home,
    onNotification(listener) {
      listeners.push(listener);
    },
    waitFor(what, match) {
      const seen = events.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${what}; received: ${JSON.stringify(events).slice(0, 2000)}\nstderr: ${stderr().slice(-2000)}`)),
          PATIENCE_MS,
        );
        waiters.push({
          match,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        });
      });
    },
    async track(id, promise) {
      try {
        const result = await promise;
        record({ kind: 'response', id, result });
        return result;
      } catch (error) {
        if (error instanceof ResponseError) record({ kind: 'response', id, error: { code: error.code, message: error.message } });
        throw error;
      }
    },
    stderr,
    async close() {
      await shutdown(server, connection);
      rmSync(home, { recursive: true, force: true });
    },
  };
  return test;
}

/** A server whose `initialize` the test sends itself (for initialize failures). */
export function spawnServer() {
  const home = mkdtempSync(join(tmpdir(), 'compactd-vscode-test-'));
  const server: ChildProcessWithoutNullStreams = spawn(serverBinary(), ['--no-user-config'], {
    env: {
      ...process.env,
      HOME: home,
      XDG_DATA_HOME: join(home, 'data'),
      XDG_CONFIG_HOME: join(home, 'config'),
      COMPACTD_LOG: 'debug',
    },
  });
  let log = '';
  server.stderr.on('data', (chunk) => (log += chunk));
  const connection = createMessageConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  return { server, connection, home, stderr: () => log };
}

export async function shutdown(server: ChildProcessWithoutNullStreams, connection: MessageConnection): Promise<void> {
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  if (server.exitCode === null) {
    try {
      await connection.sendRequest('shutdown');
      await connection.sendNotification('exit');
    } catch {
      server.kill();
    }
  }
  await exited;
  connection.dispose();
}

/** The sample conversation the end-to-end fixture extension appends too. */
export const conversation: (turns: number, toolChars?: number) => any[] =
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require(join(PACKAGE_ROOT, 'e2e/fixture-extension/conversation.js')).conversation;
