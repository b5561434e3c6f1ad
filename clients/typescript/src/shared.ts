// Attaching to a shared compactd (`compactd serve --listen`): its
// discovery file, and a vscode-jsonrpc MessageReader/MessageWriter over its
// WebSocket (one JSON-RPC message per text message), for CompactdClient
// and for a LanguageClient (`ServerOptions` returning these transports).

import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AbstractMessageReader, AbstractMessageWriter, type DataCallback, type Disposable, type Message, type MessageReader, type MessageWriter } from 'vscode-jsonrpc';
import WebSocket from 'ws';

/** What a shared compactd writes to its discovery file. */
export interface Discovery {
  /** `ws://127.0.0.1:PORT/` */
  url: string;
  address: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  pid: number;
  version: string;
}

/**
 * Where a shared compactd writes its discovery file, as the server decides:
 * `$COMPACTD_DISCOVERY_FILE`, else `$XDG_RUNTIME_DIR/compactd/server.json`,
 * else the data directory's `compactd/server.json`.
 */
export function discoveryPath(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.COMPACTD_DISCOVERY_FILE) return env.COMPACTD_DISCOVERY_FILE;
  if (platform === 'linux' && env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'compactd', 'server.json');
  const home = env.HOME ?? homedir();
  const data =
    platform === 'darwin'
      ? join(home, 'Library', 'Application Support')
      : platform === 'win32'
        ? (env.APPDATA ?? join(home, 'AppData', 'Roaming'))
        : (env.XDG_DATA_HOME ?? join(home, '.local', 'share'));
  return join(data, 'compactd', 'server.json');
}

/** The discovery file's contents, or undefined when there is none (or it is unreadable). */
export function readDiscovery(path: string = discoveryPath()): Discovery | undefined {
  try {
    const found = JSON.parse(readFileSync(path, 'utf8')) as Discovery;
    return typeof found.url === 'string' && typeof found.token === 'string' ? found : undefined;
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A shared compactd that looks alive: its discovery file exists and names a
 * running process. (A file left by a server that died is stale; whether the
 * address still answers is learnt by connecting.)
 */
export function liveDiscovery(path: string = discoveryPath()): Discovery | undefined {
  const found = readDiscovery(path);
  return found && processAlive(found.pid) ? found : undefined;
}

class WebSocketMessageReader extends AbstractMessageReader implements MessageReader {
  private callback: DataCallback | undefined;
  private readonly early: Message[] = [];

  constructor(socket: WebSocket) {
    super();
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      let message: Message;
      try {
        message = JSON.parse(data.toString()) as Message;
      } catch (error) {
        this.fireError(error);
        return;
      }
      if (this.callback) this.callback(message);
      else this.early.push(message);
    });
    socket.on('error', (error) => this.fireError(error));
    socket.on('close', () => this.fireClose());
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    for (const message of this.early.splice(0)) callback(message);
    return { dispose: () => (this.callback = undefined) };
  }
}

class WebSocketMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private errors = 0;

  constructor(private readonly socket: WebSocket) {
    super();
    socket.on('close', () => this.fireClose());
  }

  write(message: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.send(JSON.stringify(message), (error) => {
        if (!error) return resolve();
        this.errors += 1;
        this.fireError(error, message, this.errors);
        reject(error);
      });
    });
  }

  end(): void {
    this.socket.close();
  }
}

export interface WebSocketTransport {
  reader: MessageReader;
  writer: MessageWriter;
  socket: WebSocket;
}

/** Connects to a shared compactd; rejects with the server's refusal (`401`, `403`, `503`) or the connection error. */
export function connectWebSocket(url: string, token: string): Promise<WebSocketTransport> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` }, perMessageDeflate: false });
    let settled = false;
    const refused = (why: string) => {
      if (settled) return;
      settled = true;
      reject(new Error(`compactd at ${url} ${why}`));
    };
    socket.once('unexpected-response', (request, response) => {
      refused(`refused the connection (HTTP ${response.statusCode})`);
      response.resume();
      request.destroy();
    });
    socket.on('error', (error) => refused(`cannot be reached (${error.message})`));
    socket.once('open', () => {
      settled = true;
      socket.removeAllListeners('unexpected-response');
      socket.removeAllListeners('error');
      resolve({ reader: new WebSocketMessageReader(socket), writer: new WebSocketMessageWriter(socket), socket });
    });
  });
}
