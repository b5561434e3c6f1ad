// Entry point: wires the server connection, the session tracker, the meter
// and the commands, and returns the public API.

import * as vscode from 'vscode';
import type { CompactdApi } from './api';
import { announceCompaction, registerCommands } from './commands';
import { currentServerConfiguration, ServerConnection } from './connection';
import { resumeSessions } from './core/requests';
import { runSetup, setupQuestion } from './core/setup';
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
    // Auto-follow announces what it follows again (conversation/didFollow).
    for (const s of tracker.list()) if (s.followed && !s.followed.explicit) tracker.forget(s.sessionId);
    const failed = await resumeSessions(requests, tracker.list());
    for (const f of failed) output.appendLine(`[compactd] could not resume ${f.sessionId}: ${f.error}`);
    refresh();
  };
  // What a followed agent compacted before this window saw it.
  const lastCompaction = async (sessionId: string) => {
    try {
      const { compactions } = await requests.compactions({ sessionId });
      const last = compactions[compactions.length - 1];
      if (last) tracker.setLastCompaction(sessionId, last);
      refresh();
    } catch (error) {
      output.appendLine(`[compactd] compactions of ${sessionId}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  // The first time this window follows a session of an agent whose own
  // compactions compactd can take part in, offer `compactd setup <agent>`.
  const offered = new Set<string>();
  const offerSetup = async (agent: string, agentName: string) => {
    const binary = server.localBinary();
    if (!binary || offered.has(agent)) return;
    offered.add(agent);
    const declined = context.globalState.get<string[]>('compactd.setupDeclined') ?? [];
    try {
      const dryRun = await runSetup(binary, agent, true);
      const question = setupQuestion(agent, agentName, dryRun, declined, server.agents());
      if (!question) return;
      const choice = await vscode.window.showInformationMessage(question, 'Set Up', 'Not Now', "Don't Ask Again");
      if (choice === 'Set Up') {
        const printed = await runSetup(binary, agent, false);
        output.appendLine(`[compactd] ${printed}`);
        void vscode.window.showInformationMessage(`compactd: ${printed.split('\n')[0]}`);
      } else if (choice === "Don't Ask Again") {
        await context.globalState.update('compactd.setupDeclined', [...declined, agent]);
      }
    } catch (error) {
      output.appendLine(`[compactd] setup ${agent}: ${error instanceof Error ? error.message : String(error)}`);
    }
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
      const state = tracker.onDidCompact(n);
      refresh();
      void announceCompaction(n, state?.followed?.agentName);
    }),
    server.onDidFollow((n) => {
      tracker.onDidFollow(n);
      refresh();
      void lastCompaction(n.sessionId);
      void offerSetup(n.agent, n.agentName);
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
        if (event.affectsConfiguration('compactd.follow') && currentServerConfiguration().follow === 'off') {
          // The server stops following what auto-follow followed.
          for (const s of tracker.list()) if (s.followed && !s.followed.explicit) tracker.forget(s.sessionId);
          refresh();
        }
        void server.configurationChanged().catch(() => undefined);
        void vscode.window
          .showInformationMessage('compactd: settings sent to the server. Settings read at start-up apply after a restart.', 'Restart Server')
          .then((action) => action && restart());
      }
    }),
    ...registerCommands({ connection: server, requests, tracker, refresh, restart, lastCompaction }),
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
    closeSession: async (sessionId) => {
      const result = await requests.closeSession({ sessionId });
      tracker.forget(sessionId);
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
    watchSharedSession: async (sessionId) => {
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
