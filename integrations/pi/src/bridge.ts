// One pi session mirrored in one compactd session, and compactd's
// compaction handed to pi.
//
// The compactd session holds pi's current branch: imported when the
// extension starts on a session that has messages (pi's own and earlier
// compactions included), then each entry appended as pi records it, with
// the pi entry id as the message id. When the two stop matching (pi
// compacted by itself, the user moved in the tree, compactd restarted),
// the branch is imported again into a fresh compactd session: pi's session
// is the truth, compactd's is derived from it.
//
// Every failure leaves pi's own compaction to run, with one notice; the
// extension never cancels a compaction and never blocks the agent.

import { join } from 'node:path';
import type {
  CompactionEntry,
  CompactionResult,
  ExtensionContext,
  SessionBeforeCompactEvent,
  SessionEntry,
  SessionHeader,
} from '@mariozechner/pi-coding-agent';
import {
  CompactdClient,
  errorCode,
  methods as m,
  type CompactionInfo,
  type CompactParams,
  type CompactResult,
  type Message,
  type MeterInfo,
  type OpenParams,
} from 'compactd-client';
import { entryMessage, sessionJsonl } from './convert';
import { oneLine, report } from './format';
import { loadPiCompaction, type PiCompaction, type Settings } from './settings';
import { compactEventProblems, trace } from './shapes';

export type Level = 'info' | 'warning' | 'error';

/** How the bridge talks to pi beyond the events: notices and the footer. */
export interface PiSide {
  notify(text: string, level: Level): void;
  status(meter: MeterInfo): void;
}

/**
 * What the bridge needs of pi's session, read at once when an event
 * arrives: pi may invalidate a handler's context while the handler awaits
 * compactd (print mode disposes the session while its last automatic
 * compaction runs), so nothing reads the context after an await.
 */
export interface PiState {
  cwd: string;
  sessionId: string;
  header: SessionHeader | null;
  /** The current branch, root to leaf. */
  branch: SessionEntry[];
  model?: { id: string; contextWindow: number };
  systemPrompt?: string;
  /** The tools pi sends with each request, as the provider gets them (name, description, parameters). */
  tools: unknown[];
}

/** Reads the state from a handler's context (synchronously, before any await). */
export function readState(ctx: ExtensionContext, tools: unknown[]): PiState {
  const sm = ctx.sessionManager;
  let systemPrompt: string | undefined;
  try {
    systemPrompt = ctx.getSystemPrompt() || undefined;
  } catch {
    systemPrompt = undefined;
  }
  return {
    cwd: ctx.cwd,
    sessionId: sm.getSessionId(),
    header: sm.getHeader(),
    branch: sm.getBranch(),
    model: ctx.model ? { id: ctx.model.id, contextWindow: ctx.model.contextWindow } : undefined,
    systemPrompt,
    tools,
  };
}

/** What pi's compaction entry carries in `details` when compactd wrote it. */
export interface CompactdDetails {
  engine: 'compactd';
  compactdSessionId: string;
  readFiles: string[];
  modifiedFiles: string[];
  tokensAfter: number;
  messagesSummarized: number;
  strategy: string;
  summarizer: string;
  recall: number;
  degraded: boolean;
}

/** What a `session_before_compact` handler returns to have pi record a compaction (pi's SessionBeforeCompactResult, which pi's index does not export). */
export interface CompactionHandOver {
  compaction: CompactionResult<CompactdDetails>;
}

/** compactd session ids are file names: pi's uuid fits, anything else is reduced to the allowed alphabet. */
export function compactdSessionId(piSessionId: string): string {
  return `pi-${piSessionId.replace(/[^A-Za-z0-9._-]/g, '-')}`.slice(0, 100);
}

export function isCompactdCompaction(entry: SessionEntry, sessionId: string | undefined): boolean {
  const details = (entry as CompactionEntry<Partial<CompactdDetails>>).details;
  return entry.type === 'compaction' && details?.engine === 'compactd' && details.compactdSessionId === sessionId;
}

export class Bridge {
  private client?: CompactdClient;
  /** Why compactd cannot be started (the notice was given once). */
  private unavailable?: string;
  private sessionId?: string;
  /** The newest branch entry the compactd session reflects. */
  private syncedTo?: string;
  /** A compaction compactd applied that pi has not recorded yet. */
  private unconfirmed?: string;
  private declared = '';
  /**
   * Whether compactd is told pi's system prompt and tools: only for a
   * session it holds from its first message. In a session with usage
   * already logged (imported, resumed), compactd's calibration has learned
   * them from that usage, and declaring them too would count them twice.
   */
  private declaresPrompt = false;
  private queue: Promise<unknown> = Promise.resolve();
  /** pi shut the session down: compactd runs only for what still comes (a last compaction), then exits. */
  private closed = false;

  constructor(
    private readonly settings: Settings,
    private readonly extensionDir: string,
    private readonly pi: PiSide,
  ) {}

  /** Runs `task` after everything queued before it: appends, compactions and reports never interleave. */
  private serially<T>(task: () => Promise<T>): Promise<T> {
    const step = async () => {
      try {
        return await task();
      } finally {
        if (this.closed) await this.stop();
      }
    };
    const run = this.queue.then(step, step);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Starts compactd and attaches pi's session. A failure is one notice; pi carries on. */
  start(state: PiState): Promise<void> {
    return this.serially(async () => {
      await this.ensure(state, 'pi compacts by itself in this session');
    });
  }

  /** Brings compactd up to pi's branch (appending what pi recorded since). */
  sync(state: PiState): Promise<void> {
    return this.serially(async () => {
      if (this.client && this.sessionId) await this.catchUp(state, this.client).catch((e) => this.fail(e, 'pi compacts by itself until compactd is back'));
    });
  }

  /** `session_before_compact`: compactd's compaction for pi to record, or undefined (pi's own runs). */
  compact(event: SessionBeforeCompactEvent, state: PiState): Promise<CompactionHandOver | undefined> {
    return this.serially(async () => {
      if (!this.settings.enabled) return undefined;
      const problems = compactEventProblems(event);
      if (problems.length) {
        this.pi.notify(oneLine(`compactd: pi sent an unexpected session_before_compact (${problems.join('; ')}); pi's own compaction runs`), 'warning');
        return undefined;
      }
      const client = await this.ensure(state, "pi's own compaction runs");
      if (!client || !this.sessionId) return undefined;
      try {
        await this.catchUp(state, client);
        await this.passFileOps(client, event, state.cwd);
        const result = await this.compactWith(client, event);
        return this.handOver(result, event);
      } catch (e) {
        this.fail(e, "pi's own compaction runs");
        return undefined;
      }
    });
  }

  /** `session_compact`: ours is confirmed; pi's own means compactd no longer mirrors pi, so re-import. */
  compacted(entry: CompactionEntry, state: PiState): Promise<void> {
    return this.serially(async () => {
      if (!this.client || !this.sessionId) return;
      if (isCompactdCompaction(entry, this.sessionId)) {
        this.unconfirmed = undefined;
        this.syncedTo = entry.id;
        return;
      }
      await this.attach(state, this.client, true).catch((e) => this.fail(e, 'pi compacts by itself until compactd is back'));
    });
  }

  /** `/compactd`: the meter, a preview of the next compaction, the last summary. */
  report(state: PiState): Promise<string> {
    return this.serially(async () => {
      if (!this.settings.enabled) return 'compactd is switched off (compactd.enabled in pi settings): pi compacts by itself.';
      if (this.unavailable) return `compactd is unavailable (${this.unavailable}): pi compacts by itself.`;
      const client = await this.ensure(state, 'pi compacts by itself');
      if (!client || !this.sessionId) return `compactd is unavailable (${this.unavailable ?? 'see the notice above'}): pi compacts by itself.`;
      await this.catchUp(state, client);
      const sessionId = this.sessionId;
      const keepRecentTokens = this.keepRecentTokens(state);
      const [check, preview, list] = await Promise.all([
        client.check({ sessionId }),
        client.preview({ sessionId, strategy: 'checkpoint', keepRecentTokens }),
        client.compactions({ sessionId }),
      ]);
      const window = state.model?.contextWindow;
      return report({
        sessionId,
        meter: check.meter,
        piCompactsAbove: window !== undefined ? Math.max(0, window - this.piCompaction(state).reserveTokens) : undefined,
        preview,
        keepRecentTokens,
        last: list.compactions.at(-1) as CompactionInfo | undefined,
      });
    });
  }

  /** pi's model or tools changed: tell compactd (window, tokenizer, prompt overhead). */
  declare(state: PiState): Promise<void> {
    return this.serially(async () => {
      if (this.client && this.sessionId) await this.declareTo(state, this.client).catch((e) => this.fail(e, 'pi compacts by itself until compactd is back'));
    });
  }

  /** `session_shutdown`: compactd exits (its session lock is free for the next pi); a later compaction starts it again for itself. */
  close(): Promise<void> {
    this.closed = true;
    return this.serially(async () => undefined);
  }

  private async stop(): Promise<void> {
    const client = this.client;
    this.client = this.sessionId = undefined;
    await client?.close();
  }

  // ---------------------------------------------------------------- internals

  /** The client with pi's session attached, starting compactd when needed; undefined (after one notice) when it cannot run. */
  private async ensure(state: PiState, fallback: string): Promise<CompactdClient | undefined> {
    if (!this.settings.enabled) return undefined;
    if (this.client && this.sessionId) return this.client;
    if (this.unavailable) {
      this.pi.notify(oneLine(`compactd unavailable (${this.unavailable}); ${fallback}`), 'warning');
      return undefined;
    }
    try {
      const client = this.client ?? (await this.spawn(state));
      await this.attach(state, client, false);
      return client;
    } catch (e) {
      this.fail(e, fallback);
      return undefined;
    }
  }

  private async spawn(state: PiState): Promise<CompactdClient> {
    const client = await CompactdClient.spawn({
      path: this.settings.path,
      pathName: 'compactd.path (pi settings.json)',
      bundledDirs: [join(this.extensionDir, 'bin')],
      args: this.settings.args,
      cwd: state.cwd,
      workspaceFolders: [state.cwd],
      // pi decides when to compact; compactd compacting by itself would leave pi's context behind.
      configuration: { ...this.settings.configuration, autoCompact: false },
      workDoneProgress: false,
      clientInfo: { name: 'compactd-pi', version: '0.1.0' },
    });
    client.onTokens(({ sessionId, ...meter }) => {
      if (sessionId === this.sessionId && this.settings.status) this.pi.status(meter);
    });
    void client.exited.then(() => {
      if (this.client === client) this.client = this.sessionId = undefined;
    });
    this.client = client;
    return client;
  }

  /** Opens or imports pi's session: `pi-<pi session id>` when it matches pi's branch, else a fresh import of the branch. */
  private async attach(state: PiState, client: CompactdClient, fresh: boolean): Promise<void> {
    const branch = state.branch;
    const base = compactdSessionId(state.sessionId);
    this.sessionId = this.syncedTo = this.unconfirmed = undefined;
    this.declared = '';
    const hasMessages = branch.some((e) => entryMessage(e) !== undefined);
    if (!fresh) {
      if (!hasMessages) {
        const opened = await client.open({ sessionId: base, ...this.declaration(state, true) });
        if (!opened.resumed || opened.messageCount === 0) return this.attached(state, client, base, undefined, true);
      } else if (await this.importBranch(state, client, base)) {
        return;
      } else if (await this.resume(state, client, base, branch)) {
        return;
      }
    }
    const id = `${base}-${Date.now().toString(36)}`;
    if (!hasMessages) {
      await client.open({ sessionId: id, ...this.declaration(state, true) });
      return this.attached(state, client, id, undefined, true);
    }
    if (!(await this.importBranch(state, client, id))) throw new Error(`could not import pi's session as ${id}`);
  }

  /** Imports pi's branch as `sessionId`; false when that session already exists. */
  private async importBranch(state: PiState, client: CompactdClient, sessionId: string): Promise<boolean> {
    const branch = state.branch;
    try {
      await client.import({ content: sessionJsonl(state.header, branch), format: 'pi', sessionId, model: state.model?.id, contextWindow: state.model?.contextWindow });
    } catch (e) {
      if (errorCode(e) === m.INVALID_PARAMS && /already exists/.test((e as Error).message)) return false;
      throw e;
    }
    await this.attached(state, client, sessionId, branch.at(-1)?.id, false);
    return true;
  }

  /** Resumes `sessionId` when its newest message is on pi's branch and no foreign compaction came after it; then appends the rest. */
  private async resume(state: PiState, client: CompactdClient, sessionId: string, branch: SessionEntry[]): Promise<boolean> {
    await client.open({ sessionId, ...this.declaration(state, false) });
    const { messages } = await client.history({ sessionId });
    const onBranch = new Map(branch.map((e, i) => [e.id, i]));
    const ids = messages.map((msg) => msg.id ?? '').filter((id) => id !== 'system' && !id.startsWith('summary-'));
    if (ids.length === 0 || ids.some((id) => !onBranch.has(id))) return false;
    const last = onBranch.get(ids.at(-1)!)!;
    if (branch.slice(last + 1).some((e) => e.type === 'compaction' && !isCompactdCompaction(e, sessionId))) return false;
    await this.attached(state, client, sessionId, branch[last].id, false);
    await this.catchUp(state, client);
    return true;
  }

  private async attached(state: PiState, client: CompactdClient, sessionId: string, syncedTo: string | undefined, declaresPrompt: boolean): Promise<void> {
    this.sessionId = sessionId;
    this.syncedTo = syncedTo;
    this.declaresPrompt = declaresPrompt;
    await this.declareTo(state, client);
  }

  /** Appends the branch entries after `syncedTo`; re-imports when the branch no longer continues compactd's session. */
  private async catchUp(state: PiState, client: CompactdClient): Promise<void> {
    const branch = state.branch;
    const from = this.syncedTo === undefined ? 0 : branch.findIndex((e) => e.id === this.syncedTo) + 1;
    const diverged =
      this.unconfirmed !== undefined ||
      (this.syncedTo !== undefined && from === 0) ||
      branch.slice(from).some((e) => e.type === 'compaction' && !isCompactdCompaction(e, this.sessionId));
    if (diverged) return this.attach(state, client, true);
    const newer = branch.slice(from);
    const messages = newer.map(entryMessage).filter((msg): msg is Message => msg !== undefined);
    if (messages.length) {
      await client.append({ sessionId: this.sessionId!, messages });
    }
    if (newer.length) this.syncedTo = newer.at(-1)!.id;
  }

  /** What compactd should count beyond the messages: the model's window and tokenizer, and (see `declaresPrompt`) pi's system prompt and tools. */
  private declaration(state: PiState, withPrompt = this.declaresPrompt): OpenParams {
    const model = { model: state.model?.id, contextWindow: state.model?.contextWindow };
    if (!withPrompt) return model;
    return { ...model, systemPrompt: state.systemPrompt, toolDefinitions: state.tools.length ? state.tools : undefined };
  }

  private async declareTo(state: PiState, client: CompactdClient): Promise<void> {
    const declaration = this.declaration(state);
    const key = JSON.stringify(declaration);
    if (key === this.declared) return;
    const opened = await client.open({ sessionId: this.sessionId, ...declaration });
    this.declared = key;
    if (this.settings.status) this.pi.status(opened.meter);
  }

  /** pi's file operations reach compactd's ledger when compactd does not know them yet (a tool it does not map, an import). */
  private async passFileOps(client: CompactdClient, event: SessionBeforeCompactEvent, cwd: string): Promise<void> {
    const sessionId = this.sessionId!;
    const { files } = await client.filesList({ sessionId });
    const known = new Map(files.flatMap((f) => [[f.path, f.status] as const, [f.displayPath, f.status] as const]));
    const ops = event.preparation.fileOps;
    const modified = new Set([...ops.written, ...ops.edited]);
    for (const path of modified) {
      const status = known.get(path) ?? known.get(join(cwd, path));
      if (status !== 'modified' && status !== 'created') await client.filesDidModify({ sessionId, path });
    }
    for (const path of ops.read) {
      if (!modified.has(path) && !known.has(path) && !known.has(join(cwd, path))) await client.filesDidRead({ sessionId, path });
    }
  }

  private async compactWith(client: CompactdClient, event: SessionBeforeCompactEvent): Promise<CompactResult> {
    const controller = new AbortController();
    const abort = () => controller.abort();
    event.signal.addEventListener('abort', abort);
    const timer = setTimeout(abort, this.settings.timeoutMs);
    const params: CompactParams = {
      sessionId: this.sessionId!,
      // The one strategy pi can record: a summary, then the messages from the cut on.
      strategy: 'checkpoint',
      instructions: event.customInstructions || undefined,
      keepRecentTokens: this.settings.keepRecentTokens ?? event.preparation.settings.keepRecentTokens,
    };
    trace('conversation/compact', () => params);
    try {
      return await client.compact(params, { signal: controller.signal });
    } finally {
      clearTimeout(timer);
      event.signal.removeEventListener('abort', abort);
    }
  }

  /** compactd's result as pi's compaction, when compactd compacted and cut at an entry of pi's branch. */
  private handOver(result: CompactResult, event: SessionBeforeCompactEvent): CompactionHandOver | undefined {
    const cut = result.firstKeptMessageId ?? undefined;
    if (!result.compacted || cut === undefined) {
      this.pi.notify(oneLine(`compactd did not compact (${result.reason ?? 'it kept nothing verbatim'}); pi's own compaction runs`), 'info');
      if (result.compacted) this.unconfirmed = 'kept nothing';
      return undefined;
    }
    if (!event.branchEntries.some((e) => e.id === cut)) {
      this.unconfirmed = cut;
      this.pi.notify(oneLine(`compactd cut at ${cut}, which is not on pi's branch; pi's own compaction runs`), 'warning');
      return undefined;
    }
    this.unconfirmed = cut;
    const details: CompactdDetails = {
      engine: 'compactd',
      compactdSessionId: this.sessionId!,
      readFiles: result.readFiles,
      modifiedFiles: result.modifiedFiles,
      tokensAfter: result.tokensAfter,
      messagesSummarized: result.messagesSummarized,
      strategy: result.strategy,
      summarizer: result.summarizer,
      recall: result.recall,
      degraded: result.degraded,
    };
    return { compaction: { summary: result.summary, firstKeptEntryId: cut, tokensBefore: result.tokensBefore, details } };
  }

  private keepRecentTokens(state: PiState): number {
    return this.settings.keepRecentTokens ?? this.piCompaction(state).keepRecentTokens;
  }

  private piCompaction(state: PiState): PiCompaction {
    return loadPiCompaction(state.cwd);
  }

  /** One notice for a failure; a server that could not start is not tried again this session. */
  private fail(error: unknown, fallback: string): void {
    const why = (error instanceof Error ? error.message : String(error)).replace(/\.\s*$/, '');
    if (!this.client) this.unavailable = why;
    // The bridge spawns its compactd, so there is a process (`process` is
    // undefined only for a client attached to a shared one).
    else if (this.client.process && (this.client.process.exitCode !== null || this.client.process.signalCode !== null)) this.client = this.sessionId = undefined;
    // Attached again (a fresh import) at the next compaction or report, not at every message.
    else this.sessionId = undefined;
    this.pi.notify(oneLine(`compactd: ${why}; ${fallback}`), 'warning');
  }
}
