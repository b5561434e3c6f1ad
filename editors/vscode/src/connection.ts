// The server process and its LanguageClient: locating and vetting the
// binary, starting, restarting, configuration updates, and the server's
// notifications fanned out to the rest of the extension.

import * as vscode from 'vscode';
import {
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { checkServerVersion, findServer, type ServerCandidate } from './core/locate';
import type { Requester } from './core/requests';
import { serverConfiguration } from './core/settings';
import * as m from './protocol/methods.generated';
import type { AutoCompactStoppedNotification, DidCompactNotification, TokensNotification } from './protocol/types';

export type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/** Settings the user set explicitly, so compactd.toml can fill in the rest. */
export function currentServerConfiguration(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration('compactd');
  return serverConfiguration((key) => {
    const inspected = config.inspect(key);
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
  });
}

export class ServerConnection implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private readonly tokensEmitter = new vscode.EventEmitter<TokensNotification>();
  private readonly didCompactEmitter = new vscode.EventEmitter<DidCompactNotification>();
  private readonly autoCompactStoppedEmitter = new vscode.EventEmitter<AutoCompactStoppedNotification>();
  private readonly stateEmitter = new vscode.EventEmitter<{ running: boolean; error?: string; server?: ServerCandidate }>();
  readonly onTokens = this.tokensEmitter.event;
  readonly onDidCompact = this.didCompactEmitter.event;
  readonly onAutoCompactStopped = this.autoCompactStoppedEmitter.event;
  /** Running (after every start), stopped, or failed to start (with the reason). */
  readonly onState = this.stateEmitter.event;
  server: ServerCandidate | undefined;
  version: string | undefined;

  constructor(
    private readonly extensionPath: string,
    readonly output: vscode.OutputChannel,
  ) {}

  /** The running client, starting it first if needed. */
  requester(): Promise<Requester> {
    return this.start();
  }

  start(): Promise<LanguageClient> {
    if (this.client?.state === State.Running) return Promise.resolve(this.client);
    this.starting ??= this.launch().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async launch(): Promise<LanguageClient> {
    try {
      const server = findServer({
        configuredPath: vscode.workspace.getConfiguration('compactd').get<string>('server.path') ?? '',
        pathEnv: process.env.PATH ?? '',
        extensionPath: this.extensionPath,
      });
      this.version = await checkServerVersion(server);
      this.server = server;
      this.output.appendLine(`[compactd] starting ${server.path} (${this.version}, from ${server.source})`);
      const client = this.createClient(server);
      this.client = client;
      await client.start();
      return client;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.output.appendLine(`[compactd] ${message}`);
      this.stateEmitter.fire({ running: false, error: message });
      throw error;
    }
  }

  private createClient(server: ServerCandidate): LanguageClient {
    const serverOptions: ServerOptions = { command: server.path, args: [] };
    const clientOptions: LanguageClientOptions = {
      // Every file the editor opens or saves feeds the server's file ledger.
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions: currentServerConfiguration(),
      // Invalid settings fail the same way every time: report (in launch), don't retry.
      initializationFailedHandler: () => false,
    };
    const client = new LanguageClient('compactd', 'compactd', serverOptions, clientOptions);
    client.onNotification(m.TOKENS, (n: TokensNotification) => this.tokensEmitter.fire(n));
    client.onNotification(m.DID_COMPACT, (n: DidCompactNotification) => this.didCompactEmitter.fire(n));
    client.onNotification(m.AUTO_COMPACT_STOPPED, (n: AutoCompactStoppedNotification) => this.autoCompactStoppedEmitter.fire(n));
    // Also after the client restarted a crashed server by itself.
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.stateEmitter.fire({ running: true, server });
      if (e.newState === State.Stopped) this.stateEmitter.fire({ running: false });
    });
    return client;
  }

  /** Reports `$/progress` under `token` until the returned disposable is disposed. */
  async onProgress(token: string, handler: (value: ProgressValue) => void): Promise<vscode.Disposable> {
    const client = await this.start();
    return client.onProgress(WorkDoneProgress.type, token, handler);
  }

  /** Sends the server settings to the running server. */
  async configurationChanged(): Promise<void> {
    if (this.client?.state !== State.Running) return;
    await this.client.sendNotification('workspace/didChangeConfiguration', {
      settings: currentServerConfiguration(),
    });
  }

  async restart(): Promise<LanguageClient> {
    await this.stop();
    return this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.state !== State.Stopped) {
      await client.stop().catch((e) => this.output.appendLine(`[compactd] stop: ${e}`));
    }
  }

  dispose(): void {
    void this.stop();
    this.tokensEmitter.dispose();
    this.didCompactEmitter.dispose();
    this.autoCompactStoppedEmitter.dispose();
    this.stateEmitter.dispose();
  }
}
