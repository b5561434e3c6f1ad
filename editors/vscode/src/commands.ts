// The commands. Texts and labels come from the vscode-free modules in core/.

import { errorCode, methods as m, type CompactdMethods, type DidCompactNotification } from 'compactd-client';
import * as vscode from 'vscode';
import type { ServerConnection } from './connection';
import { agentList } from './core/follow';
import { agentSessionItems, branchItems, fileItems, sessionItems } from './core/pickers';
import type { SessionState, SessionTracker } from './core/sessions';
import { compactedMessage, previewDocument, summaryDocument } from './core/summary';

interface Deps {
  connection: ServerConnection;
  requests: CompactdMethods;
  tracker: SessionTracker;
  /** Re-renders the meter after the tracker changed. */
  refresh: () => void;
  /** Restarts the server and resumes the sessions it had open. */
  restart: () => Promise<void>;
  /** Reads a session's last compaction (a followed agent's own included) into the tracker. */
  lastCompaction: (sessionId: string) => Promise<void>;
}

let nextProgressToken = 0;

function describe(error: unknown, method?: string): string {
  if (errorCode(error) === m.METHOD_NOT_FOUND && method) {
    return `this compactd server does not support ${method}; update compactd.`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Read-only documents (summaries, previews) under the `compactd:` scheme: never dirty, nothing to save. */
const documents = new Map<string, string>();
let nextDocument = 0;

export function registerDocuments(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider('compactd', {
    provideTextDocumentContent: (uri) => documents.get(uri.toString()) ?? '',
  });
}

async function openMarkdown(name: string, content: string): Promise<vscode.Uri> {
  const uri = vscode.Uri.from({ scheme: 'compactd', path: `/${++nextDocument}/${name}.md` });
  documents.set(uri.toString(), content);
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(doc, { preview: true });
  return uri;
}

export async function showSummary(sessionId: string, n: DidCompactNotification): Promise<void> {
  await openMarkdown(`${sessionId} summary`, summaryDocument(sessionId, n));
}

/** "Conversation compacted: …" (or "Claude Code compacted its conversation: …") with an action that opens the summary. */
export async function announceCompaction(n: DidCompactNotification, agentName?: string): Promise<void> {
  if (!n.compacted) return;
  const action = await vscode.window.showInformationMessage(compactedMessage(n, agentName), 'Open Summary');
  if (action === 'Open Summary') await showSummary(n.sessionId, n);
}

function activeSession(deps: Deps): SessionState | undefined {
  const session = deps.tracker.active;
  if (!session) {
    void vscode.window.showInformationMessage('compactd: no conversation is open yet.');
  }
  return session;
}

async function compact(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  const instructions = await vscode.window.showInputBox({
    title: `Compact Conversation (${session.sessionId})`,
    prompt: 'Optional instructions for the summary. Press Enter for none.',
    placeHolder: 'e.g. keep the failing test names',
  });
  if (instructions === undefined) return; // Escape: nothing happens.
  const workDoneToken = `compactd-vscode/${++nextProgressToken}`;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'compactd', cancellable: true },
    async (progress, token) => {
      let reported = 0;
      const subscription = await deps.connection.onProgress(workDoneToken, (value) => {
        if (value.kind === 'end') return;
        const percentage = value.percentage ?? reported;
        progress.report({
          message: value.kind === 'begin' ? `${value.title}: ${value.message ?? ''}` : value.message,
          increment: Math.max(0, percentage - reported),
        });
        reported = Math.max(reported, percentage);
      });
      try {
        const result = await deps.requests.compact(
          { sessionId: session.sessionId, instructions: instructions.trim() || undefined, workDoneToken },
          { token },
        );
        // A compaction that happened is announced by conversation/didCompact.
        if (!result.compacted) {
          void vscode.window.showInformationMessage(`compactd: nothing to compact. ${result.reason ?? ''}`.trim());
        }
      } catch (error) {
        if (token.isCancellationRequested || errorCode(error) === m.REQUEST_CANCELLED) {
          void vscode.window.showInformationMessage('Compaction cancelled; the conversation is unchanged.');
        } else {
          void vscode.window.showErrorMessage(`compactd: compaction failed: ${describe(error)}`);
        }
      } finally {
        subscription.dispose();
      }
    },
  );
}

async function preview(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  try {
    await openMarkdown(`${session.sessionId} preview`, previewDocument(session.sessionId, await deps.requests.preview({ sessionId: session.sessionId })));
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: preview failed: ${describe(error, m.PREVIEW)}`);
  }
}

async function toggleAutoCompact(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  try {
    const current = session.autoCompact ?? (await deps.requests.check({ sessionId: session.sessionId })).autoCompact;
    const result = await deps.requests.setAutoCompact({ sessionId: session.sessionId, enabled: !current });
    deps.tracker.setAutoCompact(session.sessionId, result.enabled);
    deps.refresh();
    void vscode.window.showInformationMessage(`compactd: auto-compact is ${result.enabled ? 'on' : 'off'} for ${session.sessionId}.`);
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: could not toggle auto-compact: ${describe(error, m.SET_AUTO_COMPACT)}`);
  }
}

async function showLastSummary(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  const seen = session.lastCompaction?.notification;
  if (seen) {
    await showSummary(session.sessionId, seen);
    return;
  }
  try {
    const { compactions } = await deps.requests.compactions({ sessionId: session.sessionId });
    const last = compactions[compactions.length - 1];
    if (!last) {
      void vscode.window.showInformationMessage(`compactd: ${session.sessionId} has not been compacted yet.`);
      return;
    }
    await openMarkdown(`${session.sessionId} summary`, summaryDocument(session.sessionId, last));
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: could not read the summary: ${describe(error, m.COMPACTIONS)}`);
  }
}

async function showTrackedFiles(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  try {
    const { files } = await deps.requests.filesList({ sessionId: session.sessionId });
    if (files.length === 0) {
      void vscode.window.showInformationMessage(`compactd: no files tracked in ${session.sessionId} yet.`);
      return;
    }
    const title = session.followed ? `Files ${session.followed.agentName}'s session touched` : `Files in ${session.sessionId}`;
    const picked = await vscode.window.showQuickPick(fileItems(files), { title, matchOnDetail: true });
    if (picked && picked.value.status !== 'deleted') {
      await vscode.window.showTextDocument(vscode.Uri.file(picked.value.path));
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: could not list files: ${describe(error, m.FILES_LIST)}`);
  }
}

async function branch(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  try {
    const { messages } = await deps.requests.history({ sessionId: session.sessionId });
    const picked = await vscode.window.showQuickPick(branchItems(messages), {
      title: `Branch ${session.sessionId} before…`,
      placeHolder: 'The new session keeps every message before the one you pick',
      matchOnDescription: true,
    });
    if (!picked) return;
    const result = await deps.requests.branch({ sessionId: session.sessionId, beforeMessageId: picked.value });
    deps.tracker.onTokens({ sessionId: result.sessionId, ...result.meter });
    deps.tracker.select(result.sessionId);
    deps.refresh();
    void vscode.window.showInformationMessage(`compactd: branched into ${result.sessionId} (${result.messageCount} messages).`);
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: branch failed: ${describe(error, m.BRANCH)}`);
  }
}

/**
 * Watches a session another client (an agent) drives on a shared compactd
 * (`conversation/subscribe`). Not Follow Agent Session…, which mirrors an
 * agent's transcript file (`conversation/follow`).
 */
async function watchSharedSession(deps: Deps): Promise<void> {
  const sessionId = await vscode.window.showInputBox({
    title: 'Watch a session another client drives (a shared compactd)',
    prompt: 'The session id, e.g. the one your agent opened',
  });
  if (!sessionId) return;
  try {
    const result = await deps.connection.methods.subscribe({ sessionId });
    if (result.meter) deps.tracker.onTokens({ sessionId, ...result.meter });
    deps.tracker.select(sessionId);
    deps.refresh();
    const where = deps.connection.attached ? ` on ${deps.connection.attached}` : ' (this window started its own compactd: set compactd.server.connect to share one)';
    void vscode.window.showInformationMessage(`compactd: watching ${sessionId}${result.open ? '' : ' (not open yet)'}${where}.`);
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: watching failed: ${describe(error, m.SUBSCRIBE)}`);
  }
}

async function selectSession(deps: Deps): Promise<void> {
  const sessions = deps.tracker.list();
  if (sessions.length === 0) {
    void vscode.window.showInformationMessage('compactd: no conversation is open yet.');
    return;
  }
  const picked = await vscode.window.showQuickPick(sessionItems(sessions, deps.tracker.active?.sessionId), {
    title: 'Show the meter of…',
  });
  if (!picked) return;
  deps.tracker.select(picked.value);
  deps.refresh();
}

async function followAgentSession(deps: Deps): Promise<void> {
  try {
    const { sessions, workspace } = await deps.requests.listAgentSessions({});
    if (sessions.length === 0) {
      void vscode.window.showInformationMessage(
        `compactd: no ${agentList(deps.connection.agents())} session for ${workspace} yet.`,
      );
      return;
    }
    const picked = await vscode.window.showQuickPick(agentSessionItems(sessions, Date.now()), {
      title: 'Follow Agent Session…',
      placeHolder: `The agents' sessions of ${workspace}, newest first`,
      matchOnDetail: true,
    });
    if (!picked) return;
    const result = await deps.requests.follow({ path: picked.value.path });
    deps.tracker.onFollow(result, true);
    deps.tracker.select(result.sessionId);
    deps.refresh();
    await deps.lastCompaction(result.sessionId);
  } catch (error) {
    void vscode.window.showErrorMessage(`compactd: could not follow: ${describe(error, m.FOLLOW)}`);
  }
}

/** The handoff documents' text, for Copy Handoff Prompt. */
const handoffs = new Set<string>();

async function writeHandoff(deps: Deps): Promise<void> {
  const session = activeSession(deps);
  if (!session) return;
  const fresh = session.followed ? `a fresh ${session.followed.agentName} session` : 'a fresh session';
  const goal = await vscode.window.showInputBox({
    title: `Write Handoff (${session.followed?.agentName ?? session.sessionId})`,
    prompt: `The goal of ${fresh}: the handoff carries what it needs of this conversation.`,
    placeHolder: 'e.g. finish the parser refactor and make its tests pass',
    validateInput: (text) => (text.trim() ? undefined : 'A handoff needs a goal.'),
  });
  if (goal === undefined) return;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'compactd: writing the handoff', cancellable: true },
    (_progress, token) => deps.requests.compact({ sessionId: session.sessionId, strategy: 'handoff', goal }, { token }),
  );
  // The handoff's new session announced its meter; keep showing this one.
  deps.tracker.select(session.sessionId);
  deps.refresh();
  if (!result.handoffPrompt) {
    void vscode.window.showInformationMessage(`compactd: no handoff written. ${result.reason ?? ''}`.trim());
    return;
  }
  const uri = await openMarkdown('handoff', result.handoffPrompt);
  handoffs.add(uri.toString());
  const action = await vscode.window.showInformationMessage(`compactd: a handoff prompt for ${fresh} is open.`, 'Copy to Clipboard');
  if (action) await copyHandoff(uri);
}

/** Copies a handoff document (the one given, else the active editor's). */
async function copyHandoff(uri?: vscode.Uri): Promise<void> {
  const target = (uri ?? vscode.window.activeTextEditor?.document.uri)?.toString();
  const text = target && handoffs.has(target) ? documents.get(target) : undefined;
  if (text === undefined) {
    void vscode.window.showInformationMessage('compactd: open a handoff prompt first (compactd: Write Handoff).');
    return;
  }
  await vscode.env.clipboard.writeText(text);
  void vscode.window.showInformationMessage('compactd: handoff prompt copied to the clipboard.');
}

export function registerCommands(deps: Deps): vscode.Disposable[] {
  const guard = (run: (deps: Deps) => Promise<void>) => () =>
    run(deps).catch((error) => vscode.window.showErrorMessage(`compactd: ${describe(error)}`));
  return [
    registerDocuments(),
    vscode.commands.registerCommand('compactd.compact', guard(compact)),
    vscode.commands.registerCommand('compactd.preview', guard(preview)),
    vscode.commands.registerCommand('compactd.toggleAutoCompact', guard(toggleAutoCompact)),
    vscode.commands.registerCommand('compactd.showLastSummary', guard(showLastSummary)),
    vscode.commands.registerCommand('compactd.showTrackedFiles', guard(showTrackedFiles)),
    vscode.commands.registerCommand('compactd.branch', guard(branch)),
    vscode.commands.registerCommand('compactd.selectSession', guard(selectSession)),
    vscode.commands.registerCommand('compactd.followAgentSession', guard(followAgentSession)),
    vscode.commands.registerCommand('compactd.writeHandoff', guard(writeHandoff)),
    vscode.commands.registerCommand('compactd.copyHandoff', (uri?: vscode.Uri) => copyHandoff(uri)),
    vscode.commands.registerCommand('compactd.watchSharedSession', guard(watchSharedSession)),
    vscode.commands.registerCommand('compactd.restart', guard(() => deps.restart())),
    vscode.commands.registerCommand('compactd.showLog', () => deps.connection.output.show()),
  ];
}
