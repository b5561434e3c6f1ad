// Entry point: wires the server connection, the session tracker, the meter
// and the commands, and returns the public API.

import * as vscode from 'vscode';
import type { CompactdApi } from './api';
import { announceCompaction, registerCommands } from './commands';
import { ServerConnection } from './connection';
import { resumeSessions } from './core/requests';
import { SessionTracker } from './core/sessions';
import { StatusBarMeter } from './statusBar';

let connection: ServerConnection | undefined;

export function activate(context: vscode.ExtensionContext): CompactdApi {
  const output = vscode.window.createOutputChannel('compactd');
  connection = new ServerConnection(context.extensionPath, output);
  const server = connection;
  const requests = server.methods;
  const tracker = new SessionTracker();
  const meter = new StatusBarMeter();
  const refresh = () => meter.show(tracker.active);
  // A new server process knows no session: reopen the ones this window
  // tracks, from their logs (after Restart Server, a changed server path, or
  // a crash the client recovered from).
  const resume = async () => {
    const failed = await resumeSessions(requests, tracker.list().map((s) => s.sessionId));
    for (const f of failed) output.appendLine(`[compactd] could not resume ${f.sessionId}: ${f.error}`);
    refresh();
  };
  const restart = async () => {
    await server.restart();
  };

  context.subscriptions.push(
    output,
    server,
    meter,
    server.onTokens((n) => {
      tracker.onTokens(n);
      refresh();
    }),
    server.onDidCompact((n) => {
      tracker.onDidCompact(n);
      refresh();
      void announceCompaction(n);
    }),
    server.onAutoCompactStopped((n) => {
      tracker.setAutoCompact(n.sessionId, false);
      refresh();
      void vscode.window.showWarningMessage(`compactd stopped auto-compacting ${n.sessionId}: ${n.reason}`);
    }),
    server.onState((state) => {
      if (state.error) {
        meter.showError(state.error);
        void vscode.window.showErrorMessage(`compactd: ${state.error}`, 'Open Settings').then((action) => {
          if (action) void vscode.commands.executeCommand('workbench.action.openSettings', 'compactd.server.path');
        });
      } else if (state.running) {
        void resume();
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('compactd.meter')) refresh();
      if (event.affectsConfiguration('compactd.server.path') || event.affectsConfiguration('compactd.server.connect')) {
        void restart().catch(() => undefined);
      } else if (event.affectsConfiguration('compactd') && !event.affectsConfiguration('compactd.meter')) {
        void server.configurationChanged().catch(() => undefined);
        void vscode.window
          .showInformationMessage('compactd: settings sent to the server. Settings read at start-up apply after a restart.', 'Restart Server')
          .then((action) => action && restart());
      }
    }),
    ...registerCommands({ connection: server, requests, tracker, refresh, restart }),
  );

  // Start now so the meter and the file ledger work before the first request;
  // a failure is reported through onState.
  server.start().catch(() => undefined);

  return {
    apiVersion: 1,
    openSession: async (params) => {
      const result = await requests.open(params);
      tracker.onTokens({ sessionId: result.sessionId, ...result.meter });
      tracker.select(result.sessionId);
      refresh();
      return result;
    },
    append: (sessionId, messages) => requests.append({ sessionId, messages }),
    history: (sessionId) => requests.history({ sessionId }),
    compact: (params, token) => requests.compact(params, { token }),
    showSession: (sessionId) => {
      tracker.select(sessionId);
      refresh();
    },
    followSession: async (sessionId) => {
      const result = await server.methods.subscribe({ sessionId });
      if (result.meter) tracker.onTokens({ sessionId, ...result.meter });
      tracker.select(sessionId);
      refresh();
      return result;
    },
    sendRequest: (method, params, token) => requests.request(method, params, { token }),
    onDidChangeMeter: server.onTokens,
    onDidCompact: server.onDidCompact,
  };
}

export async function deactivate(): Promise<void> {
  await connection?.stop();
}
