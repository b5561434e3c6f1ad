// compactd for opencode: opencode's own compaction keeps what compactd knows.
//
// Written by `compactd setup opencode` into opencode's plugins folder
// (~/.config/opencode/plugins/, or .opencode/plugins/ with --project), or
// copied there by hand. One file with no dependencies: opencode runs it as
// it is (plugin API V1, opencode-ai 1.18.33; see README.md for V2).
//
// - It mirrors each opencode session into a compactd session
//   (`opencode-<session id>`, over JSON-RPC on compactd's stdio) as messages
//   complete, so compactd's log, file ledger and meter follow it; the
//   session records opencode's id (`mirrors`), so a follow of the opencode
//   session (`compactd follow`, an editor) is that session, not a second.
// - Before opencode compacts (`experimental.session.compacting`) it adds
//   compactd's instructions to the summarization prompt: the task, the
//   latest request, the user's rules verbatim, the files modified and read.
// - After, in every request that starts from opencode's summary
//   (`experimental.chat.messages.transform`), compactd's record of the
//   session follows the summary: its digest and <modified-files>/<read-files>.
// - When opencode has compacted (`session.compacted`) it logs what
//   opencode's summary left out.
//
// It never holds opencode up: when compactd is missing or fails, opencode
// compacts as it would without it, and one line goes to opencode's log.

import type { Plugin } from '@opencode-ai/plugin';
import { spawn, type ChildProcess } from 'node:child_process';

/** The compactd binary (`compactd setup opencode` writes its own path here). */
const COMPACTD_PATH = 'compactd';
/** Written by compactd setup: do not edit this line (setup recognises the file by it). */
const MARK = 'compactd-opencode-plugin';
/** What a request to compactd may take before the plugin gives up on it. */
const TIMEOUT_MS = 60_000;
/** The most compactd's record adds after opencode's summary. */
const RECORD_CHARS = 10_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Loose = Record<string, any>;

/** A JSON-RPC 2.0 client with LSP framing over a child's stdio. */
class Rpc {
  private next = 1;
  private buffer = Buffer.alloc(0);
  private waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }>();
  private dead?: Error;

  constructor(private readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => this.read(chunk));
    child.on('exit', (code) => this.fail(new Error(`compactd exited (${code})`)));
    child.on('error', (e) => this.fail(e));
    child.stdin!.on('error', (e) => this.fail(e));
  }

  private fail(e: Error) {
    this.dead ??= e;
    for (const [, w] of this.waiting) {
      clearTimeout(w.timer);
      w.reject(e);
    }
    this.waiting.clear();
  }

  private read(chunk: Buffer) {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length:\s*(\d+)/i.exec(this.buffer.subarray(0, end).toString('latin1'))?.[1]);
      if (!Number.isFinite(length)) return this.fail(new Error('compactd sent a frame without Content-Length'));
      if (this.buffer.length < end + 4 + length) return;
      const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
      this.buffer = this.buffer.subarray(end + 4 + length);
      let message: Loose;
      try {
        message = JSON.parse(body);
      } catch {
        continue;
      }
      const w = typeof message.id === 'number' && !message.method ? this.waiting.get(message.id) : undefined;
      if (!w) continue; // notifications (the meter) are not needed here
      this.waiting.delete(message.id);
      clearTimeout(w.timer);
      if (message.error) w.reject(new Error(`${message.error.message} (${message.error.code})`));
      else w.resolve(message.result);
    }
  }

  private send(message: Loose) {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }), 'utf8');
    this.child.stdin!.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]));
  }

  request<T = any>(method: string, params: Json | Loose): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`compactd did not answer ${method} within ${TIMEOUT_MS / 1000} s`));
      }, TIMEOUT_MS);
      this.waiting.set(id, { resolve, reject, timer });
      this.send({ id, method, params });
    });
  }

  notify(method: string, params: Json | Loose) {
    if (!this.dead) this.send({ method, params });
  }

  stop() {
    if (this.dead) return;
    this.request('shutdown', null)
      .then(() => this.notify('exit', null))
      .catch(() => undefined)
      .finally(() => this.child.stdin!.end());
  }
}

/** compactd session ids are file names: opencode's ids fit, anything else is reduced to the allowed alphabet. */
function compactdSessionId(sessionID: string): string {
  return `opencode-${sessionID.replace(/[^A-Za-z0-9._-]/g, '-')}`.slice(0, 100);
}

/** Whether opencode made the message for its own compaction (the request for it, or the summary). */
function isCompaction(message: { info: Loose; parts: Loose[] }): boolean {
  return message.info.summary === true || message.parts.some((p) => p.type === 'compaction');
}

/**
 * An opencode message (with its parts) as compactd messages: a user
 * message's text and files (what opencode wrote itself, like its "Continue
 * if you have next steps" after a compaction, is no request: left out); an assistant message's text, reasoning and
 * tool calls, then one tool message per finished call. `undefined` while
 * the message is not finished (compactd gets it once it is).
 */
function toCompactd(message: { info: Loose; parts: Loose[] }): Loose[] | undefined {
  const { info, parts } = message;
  if (info.role === 'user') {
    const text = parts
      .map((p) => (p.type === 'text' && !p.ignored && !p.synthetic ? p.text : p.type === 'file' ? `[file ${p.filename ?? p.url}]` : undefined))
      .filter((t): t is string => typeof t === 'string' && t.length > 0)
      .join('\n');
    return text ? [{ id: info.id, role: 'user', content: text }] : [];
  }
  if (info.role !== 'assistant' || !info.time?.completed) return undefined;
  const tools = parts.filter((p) => p.type === 'tool');
  if (tools.some((p) => p.state?.status !== 'completed' && p.state?.status !== 'error')) return undefined;
  const content: Loose[] = [];
  for (const p of parts) {
    if (p.type === 'text' && !p.ignored && p.text) content.push({ type: 'text', text: p.text });
    else if (p.type === 'reasoning' && p.text) content.push({ type: 'thinking', thinking: p.text });
  }
  const onlyText = content.every((c) => c.type === 'text');
  const tokens = info.tokens ?? {};
  const usage = {
    input: tokens.input ?? 0,
    output: (tokens.output ?? 0) + (tokens.reasoning ?? 0),
    cacheRead: tokens.cache?.read ?? 0,
    cacheWrite: tokens.cache?.write ?? 0,
  };
  const assistant: Loose = {
    id: info.id,
    role: 'assistant',
    content: onlyText ? content.map((c) => c.text).join('\n') : content,
    toolCalls: tools.map((p) => ({ id: p.callID, name: p.tool, arguments: p.state.input ?? {} })),
    model: info.modelID,
  };
  if (usage.input || usage.output || usage.cacheRead || usage.cacheWrite) assistant.usage = usage;
  const results = tools.map((p) => {
    const exit = p.state.metadata?.exit;
    const failed = p.state.status === 'error' || (typeof exit === 'number' && exit !== 0);
    return {
      id: `${info.id}.${p.callID}`,
      role: 'tool',
      toolCallId: p.callID,
      toolName: p.tool,
      content: p.state.status === 'error' ? String(p.state.error ?? '') : String(p.state.output ?? ''),
      isError: failed,
    };
  });
  return [assistant, ...results];
}

export const CompactdPlugin: Plugin = async ({ client }) => {
  let rpc: Rpc | undefined;
  let unavailable: string | undefined;
  /** Per opencode session: the compactd message ids it holds. */
  const mirrored = new Map<string, Set<string>>();
  /** compactd's record, by the id of the opencode summary it follows. */
  const records = new Map<string, string>();
  let queue: Promise<unknown> = Promise.resolve();

  const log = (level: 'info' | 'warn' | 'error', message: string) =>
    client.app.log({ body: { service: 'compactd', level, message } }).catch(() => undefined);

  /** Runs `task` after everything queued before it (appends never interleave); a failure is logged and gives undefined. */
  function serially<T>(what: string, task: () => Promise<T>): Promise<T | undefined> {
    const run = queue.then(task, task).catch((e: unknown) => {
      log('warn', `compactd: ${what} failed (${e instanceof Error ? e.message : String(e)}); opencode compacts as it would without compactd`);
      return undefined;
    });
    queue = run;
    return run;
  }

  async function connect(): Promise<Rpc> {
    if (rpc) return rpc;
    if (unavailable) throw new Error(unavailable);
    const program = process.env.COMPACTD_BIN || COMPACTD_PATH;
    try {
      const child = spawn(program, [], { stdio: ['pipe', 'pipe', 'ignore'] });
      const started = new Rpc(child);
      await started.request('initialize', { processId: process.pid, rootUri: null, capabilities: {}, clientInfo: { name: 'compactd-opencode' } });
      started.notify('initialized', {});
      child.unref();
      rpc = started;
      process.once('exit', () => child.kill());
      return started;
    } catch (e) {
      unavailable = `compactd (${program}) could not start: ${e instanceof Error ? e.message : String(e)}`;
      throw new Error(unavailable);
    }
  }

  async function messagesOf(sessionID: string): Promise<{ info: Loose; parts: Loose[] }[]> {
    const answer: Loose = await client.session.messages({ path: { id: sessionID } });
    if (!Array.isArray(answer.data)) throw new Error(`opencode gave no messages for ${sessionID}`);
    return answer.data;
  }

  /** Appends what opencode finished since the last sync, in order. */
  async function sync(sessionID: string, messages?: { info: Loose; parts: Loose[] }[]) {
    const server = await connect();
    const id = compactdSessionId(sessionID);
    let held = mirrored.get(sessionID);
    if (!held) {
      // The session records opencode's id, so a follow of opencode's session (its database) is this one.
      await server.request('conversation/open', { sessionId: id, mirrors: { agent: 'opencode', sessionId: sessionID } });
      // opencode decides when to compact; compactd only mirrors, so its history lists every message it holds.
      await server.request('conversation/setAutoCompact', { sessionId: id, enabled: false });
      const history: Loose = await server.request('conversation/history', { sessionId: id });
      held = new Set((history.messages ?? []).map((m: Loose) => m.id));
      mirrored.set(sessionID, held);
    }
    const batch: Loose[] = [];
    for (const message of messages ?? (await messagesOf(sessionID))) {
      if (isCompaction(message)) continue;
      const converted = toCompactd(message);
      if (!converted) break; // not finished yet: what follows waits for it
      for (const m of converted) if (!held.has(m.id)) batch.push(m);
    }
    if (batch.length === 0) return;
    await server.request('conversation/append', { sessionId: id, messages: batch });
    for (const m of batch) held.add(m.id);
  }

  async function recap(sessionID: string, summary?: string): Promise<Loose> {
    await sync(sessionID);
    return (await connect()).request('conversation/recap', { sessionId: compactdSessionId(sessionID), maxChars: RECORD_CHARS, summary });
  }

  return {
    event: async ({ event }) => {
      const e = event as Loose;
      if (e.type === 'session.idle') await serially('mirroring the session', () => sync(e.properties.sessionID));
      else if (e.type === 'message.updated' && e.properties.info.role === 'assistant' && e.properties.info.time?.completed) {
        await serially('mirroring the session', () => sync(e.properties.info.sessionID));
      } else if (e.type === 'session.compacted') {
        await serially('checking opencode\'s summary', async () => {
          const sessionID: string = e.properties.sessionID;
          const messages = await messagesOf(sessionID);
          const summary = [...messages].reverse().find((m) => m.info.role === 'assistant' && m.info.summary === true);
          if (!summary) return;
          const text = summary.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
          const answer = await recap(sessionID, text);
          if (answer.dropped?.length) {
            log('info', `compactd: opencode's summary dropped ${answer.dropped.join(', ')}; compactd's record of them follows the summary`);
          }
        });
      } else if (e.type === 'server.instance.disposed' || e.type === 'global.disposed') {
        rpc?.stop();
      }
    },

    'experimental.session.compacting': async ({ sessionID }, output) => {
      const answer = await serially('preparing opencode\'s compaction', () => recap(sessionID));
      if (!answer) return;
      output.context.push(answer.instructions);
    },

    'experimental.chat.messages.transform': async (_input, output) => {
      const messages = output.messages as unknown as { info: Loose; parts: Loose[] }[];
      const at = messages.map((m) => m.info.role === 'assistant' && m.info.summary === true).lastIndexOf(true);
      if (at < 0) return;
      const summary = messages[at];
      let record = records.get(summary.info.id);
      if (record === undefined) {
        const sessionID: string = summary.info.sessionID;
        const answer = await serially('adding compactd\'s record', () => recap(sessionID));
        if (!answer) return;
        record = String(answer.context);
        records.set(summary.info.id, record);
      }
      if (!record || summary.parts.some((p) => p.id === `${summary.info.id}-${MARK}`)) return;
      summary.parts.push({
        id: `${summary.info.id}-${MARK}`,
        sessionID: summary.info.sessionID,
        messageID: summary.info.id,
        type: 'text',
        text: `\n\n${record}`,
        synthetic: true,
      });
    },
  };
};
