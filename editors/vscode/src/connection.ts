// The server process and its LanguageClient: locating and vetting the
// binary (or attaching to a shared compactd over WebSocket), starting,
// restarting, configuration updates, and the server's notifications fanned
// out to the rest of the extension.

import {
  checkServerVersion,
  CompactdMethods,
  connectWebSocket,
  findServer,
  methods as m,
  type AgentInfo,
  type AutoCompactStoppedNotification,
  type DidCompactNotification,
  type DidFollowNotification,
  type Disposable,
  type ServerCandidate,
  type TokensNotification,
  type WorkDoneProgressValue,
} from 'compactd-client';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, type LanguageClientOptions, type ServerOptions, State } from 'vscode-languageclient/node';
import { chooseServer } from './core/attach';
import { serverConfiguration } from './core/settings';

export type ProgressValue = WorkDoneProgressValue;

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
  /** The running client's notifications reaching `methods`, until it stops. */
  private listening: Disposable | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private readonly tokensEmitter = new vscode.EventEmitter<TokensNotification>();
  private readonly didCompactEmitter = new vscode.EventEmitter<DidCompactNotification>();
  private readonly autoCompactStoppedEmitter = new vscode.EventEmitter<AutoCompactStoppedNotification>();
  private readonly didFollowEmitter = new vscode.EventEmitter<DidFollowNotification>();
  private readonly stateEmitter = new vscode.EventEmitter<{ running: boolean; error?: string; server?: ServerCandidate }>();
  /**
   * compactd's typed methods (compactd-client) over the LanguageClient,
   * starting it on the first request and following restarts.
   */
  readonly methods = new CompactdMethods(() => this.start());
  readonly onTokens = this.tokensEmitter.event;
  readonly onDidCompact = this.didCompactEmitter.event;
  readonly onAutoCompactStopped = this.autoCompactStoppedEmitter.event;
  /** `follow: "auto"` started following an agent's session. */
  readonly onDidFollow = this.didFollowEmitter.event;
  /** Running (after every start), stopped, or failed to start (with the reason). */
  readonly onState = this.stateEmitter.event;
  server: ServerCandidate | undefined;
  version: string | undefined;
  /** The shared compactd's URL while attached to one (`compactd.server.connect`). */
  attached: string | undefined;

  constructor(
    private readonly extensionPath: string,
    readonly output: vscode.OutputChannel,
  ) {
    this.methods.onTokens((n) => this.tokensEmitter.fire(n));
    this.methods.onDidCompact((n) => this.didCompactEmitter.fire(n));
    this.methods.onAutoCompactStopped((n) => this.autoCompactStoppedEmitter.fire(n));
    this.methods.onDidFollow((n) => this.didFollowEmitter.fire(n));
  }

  start(): Promise<LanguageClient> {
    if (this.client?.state === State.Running) return Promise.resolve(this.client);
    this.starting ??= this.launch().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** The compactd binary this window started, when it started one (not a shared compactd it attached to). */
  localBinary(): string | undefined {
    return this.attached ? undefined : this.server?.path;
  }

  private async launch(): Promise<LanguageClient> {
    try {
      const attached = await this.attach();
      if (attached) return attached;
      const server = findServer({
        path: vscode.workspace.getConfiguration('compactd').get<string>('server.path') ?? '',
        pathName: 'compactd.server.path',
        bundledDirs: [join(this.extensionPath, 'bin')],
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

  /** Attaches to a shared compactd when the setting says so; undefined: start one. */
  private async attach(): Promise<LanguageClient | undefined> {
    this.attached = undefined;
    const choice = chooseServer(vscode.workspace.getConfiguration('compactd').get<string>('server.connect'));
    if (choice.kind === 'spawn') {
      if (choice.why) this.output.appendLine(`[compactd] ${choice.why}: starting compactd`);
      return undefined;
    }
    this.output.appendLine(`[compactd] attaching to the shared compactd at ${choice.url}`);
    const serverOptions: ServerOptions = async () => {
      const { reader, writer } = await connectWebSocket(choice.url, choice.token);
      return { reader, writer };
    };
    const server: ServerCandidate = { path: choice.url, source: 'explicit' };
    const client = this.createClient(server, serverOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      if (!choice.fallBack) throw error;
      this.output.appendLine(`[compactd] ${error instanceof Error ? error.message : String(error)}: starting compactd`);
      await this.stop();
      return undefined;
    }
    this.server = server;
    this.attached = choice.url;
    return client;
  }

  private createClient(server: ServerCandidate, attached?: ServerOptions): LanguageClient {
    const serverOptions: ServerOptions = attached ?? { command: server.path, args: [] };
    const clientOptions: LanguageClientOptions = {
      // Every file the editor opens or saves feeds the server's file ledger.
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions: currentServerConfiguration(),
      // Invalid settings fail the same way every time: report (in launch), don't retry.
      initializationFailedHandler: () => false,
    };
    const client = new LanguageClient('compactd', 'compactd', serverOptions, clientOptions);
    this.listening?.dispose();
    this.listening = this.methods.listen(client);
    // Also after the client restarted a crashed server by itself.
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.stateEmitter.fire({ running: true, server });
      if (e.newState === State.Stopped) this.stateEmitter.fire({ running: false });
    });
    return client;
  }

  /** The agents the running server follows, as `initialize` reported them. */
  agents(): AgentInfo[] | undefined {
    const experimental = this.client?.initializeResult?.capabilities.experimental as
      | { compactd?: { agents?: AgentInfo[] } }
      | undefined;
    return experimental?.compactd?.agents;
  }

  /** Reports `$/progress` under `token` until the returned disposable is disposed. */
  async onProgress(token: string, handler: (value: ProgressValue) => void): Promise<Disposable> {
    await this.start();
    return this.methods.onProgress(token, handler);
  }

  /** Sends the server settings to the running server. */
  async configurationChanged(): Promise<void> {
    if (this.client?.state !== State.Running) return;
    await this.client.sendNotification(m.DID_CHANGE_CONFIGURATION, {
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
    this.listening?.dispose();
    this.listening = undefined;
    if (client && client.state !== State.Stopped) {
      await client.stop().catch((e) => this.output.appendLine(`[compactd] stop: ${e}`));
    }
  }

  dispose(): void {
    void this.stop();
    this.tokensEmitter.dispose();
    this.didCompactEmitter.dispose();
    this.autoCompactStoppedEmitter.dispose();
    this.didFollowEmitter.dispose();
    this.stateEmitter.dispose();
  }
}
