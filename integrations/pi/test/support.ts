// Running the pinned pi (node_modules/.bin/pi, from devDependencies) with
// this extension against tests/agents/scripted_model.py, in a scratch HOME,
// and reading what it wrote: its session file, the extension's trace, and
// compactd's own record of the session.

import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { CompactdClient } from 'compactd-client';

export const PACKAGE = join(__dirname, '..', '..');
export const REPO = join(PACKAGE, '..', '..');
export const PI = join(PACKAGE, 'node_modules', '.bin', 'pi');
export const COMPACTD = process.env.COMPACTD_BIN ?? join(REPO, 'target', 'debug', 'compactd');
export const AGENTS = join(REPO, 'tests', 'agents');
/** A bound on waiting, so a broken run fails instead of hanging; never used to wait for something to happen. */
export const PATIENCE_MS = 60_000;

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export function readJsonl(file: string): Json[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** tests/agents/scripted_model.py on a free port; the URL is its first stdout line. */
export class ScriptedModel {
  private constructor(
    readonly url: string,
    private readonly process: ChildProcessWithoutNullStreams,
    private readonly log: string,
  ) {}

  static start(scenario: string, log: string): Promise<ScriptedModel> {
    const child = spawn('python3', [join(AGENTS, 'scripted_model.py'), '--scenario', scenario, '--log', log]);
    return new Promise((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (d) => (err += d));
      child.stdout.on('data', (d) => {
        out += d;
        const line = out.split('\n')[0];
        if (out.includes('\n')) resolve(new ScriptedModel(line.trim(), child, log));
      });
      child.once('exit', (code) => reject(new Error(`scripted_model.py exited ${code}: ${err}`)));
    });
  }

  requests(): Json[] {
    return existsSync(this.log) ? readJsonl(this.log) : [];
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill();
    await exited;
  }
}

/** A scratch directory with a workspace (a.txt, src/b.py), a HOME and compactd's data directory. */
export class Scratch {
  readonly root = mkdtempSync(join(tmpdir(), 'compactd-pi-'));
  readonly home = join(this.root, 'home');
  readonly ws = join(this.root, 'ws');
  readonly data = join(this.root, 'data');
  readonly trace = join(this.root, 'trace.jsonl');

  constructor() {
    mkdirSync(join(this.ws, 'src'), { recursive: true });
    mkdirSync(join(this.home, '.pi', 'agent'), { recursive: true });
    writeFileSync(join(this.ws, 'a.txt'), 'alpha\nbeta\n');
    writeFileSync(join(this.ws, 'src', 'b.py'), 'def f():\n    return 1\n');
  }

  /** pi's models.json (the scripted provider) and settings.json (`settings` merged over the default model). */
  configure(url: string, settings: Json, contextWindow = 16000): void {
    const agent = join(this.home, '.pi', 'agent');
    const models = {
      providers: {
        scripted: {
          baseUrl: `${url}/v1`,
          api: 'openai-completions',
          apiKey: 'scripted-key',
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: 'scripted-model', contextWindow, maxTokens: 2000 }],
        },
      },
    };
    writeFileSync(join(agent, 'models.json'), JSON.stringify(models, null, 2));
    writeFileSync(join(agent, 'settings.json'), JSON.stringify({ defaultProvider: 'scripted', defaultModel: 'scripted-model', ...settings }, null, 2));
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: this.home,
      PI_OFFLINE: '1',
      XDG_DATA_HOME: this.data,
      XDG_CONFIG_HOME: join(this.root, 'config'),
      COMPACTD_PI_TRACE: this.trace,
      ...extra,
    };
    delete env.PI_CODING_AGENT_DIR;
    delete env.PI_CODING_AGENT_SESSION_DIR;
    return env;
  }

  /** pi's session directory for the workspace: --<realpath without its leading '/', '/' '\' ':' as '-'>--. */
  sessionFile(): string {
    const name = `--${realpathSync(this.ws).replace(/^[/\\]/, '').replace(/[/\\:]/g, '-')}--`;
    const dir = join(this.home, '.pi', 'agent', 'sessions', name);
    const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
    if (files.length !== 1) throw new Error(`expected one session in ${dir}, found ${files.join(', ')}`);
    return join(dir, files[0]);
  }

  traced(event: string): Json[] {
    return existsSync(this.trace) ? readJsonl(this.trace).filter((t) => t.event === event).map((t) => t.shape) : [];
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `pi -e <this package> …` to completion (`extension`: another copy of it; null: none named, pi's settings say). */
export function runPi(args: string[], scratch: Scratch, env: NodeJS.ProcessEnv = {}, extension: string | null = PACKAGE): Promise<Run> {
  // stdin closed: pi reads piped input into the prompt.
  const child = spawn(PI, [...(extension === null ? [] : ['-e', extension]), ...args], { cwd: scratch.ws, env: scratch.env(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), PATIENCE_MS);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** `pi --mode rpc -e <this package>`: JSON lines in and out (split on '\n' only, as pi's docs/rpc.md asks). */
export class Rpc {
  readonly events: Json[] = [];
  private buffer = '';
  private waiters: (() => void)[] = [];
  stderr = '';
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly closed: Promise<number | null>;

  constructor(scratch: Scratch, env: NodeJS.ProcessEnv = {}) {
    this.child = spawn(PI, ['--mode', 'rpc', '-e', PACKAGE], { cwd: scratch.ws, env: scratch.env(env) });
    this.child.stderr.on('data', (d) => (this.stderr += d));
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        if (line.trim()) this.events.push(JSON.parse(line));
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => this.child.once('close', resolve));
    void this.closed.then(() => this.waiters.splice(0).forEach((wake) => wake()));
  }

  send(command: Json): void {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  /** The first event from index `from` on that satisfies `predicate`, waiting for it (bounded by PATIENCE_MS). */
  async until(predicate: (e: Json) => boolean, from = 0): Promise<Json> {
    const deadline = Date.now() + PATIENCE_MS;
    for (;;) {
      const found = this.events.slice(from).find(predicate);
      if (found) return found;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`pi rpc: no matching event (exit ${this.child.exitCode}); stderr: ${this.stderr.slice(-2000)}`);
      }
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, deadline - Date.now());
        this.waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Sends a command with an id and waits for its response. */
  async request(command: Json): Promise<Json> {
    const from = this.events.length;
    this.send(command);
    return this.until((e) => e.type === 'response' && e.id === command.id, from);
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), PATIENCE_MS);
    const code = await this.closed;
    clearTimeout(timer);
    return code;
  }
}

/** compactd's own view of a session the extension wrote (read-only, so it can be read while nothing holds it). */
export async function compactdView(scratch: Scratch, sessionId: string): Promise<{ compactions: Json[]; messages: Json[]; messageCount: number }> {
  const client = await CompactdClient.spawn({ path: COMPACTD, args: ['--no-user-config'], env: scratch.env() });
  try {
    const opened = await client.open({ sessionId, readOnly: true });
    const { compactions } = await client.compactions({ sessionId });
    const { messages } = await client.history({ sessionId });
    return { compactions, messages, messageCount: opened.messageCount };
  } finally {
    await client.close();
  }
}

/** compactd's import of a pi session file: the same conversation the extension should have built message by message. */
export async function importedView(scratch: Scratch, path: string): Promise<Json[]> {
  const client = await CompactdClient.spawn({ path: COMPACTD, args: ['--no-user-config'], env: scratch.env() });
  try {
    const { sessionId } = await client.import({ path, format: 'pi' });
    return (await client.history({ sessionId })).messages;
  } finally {
    await client.close();
  }
}

/** The lines of a `<tag>…</tag>` section of a summary, without compactd's status suffixes. */
export function section(summary: string, tag: string): string[] {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(summary);
  return match ? match[1].split('\n').map((l) => l.replace(/ \((created|deleted)\)$/, '')).sort() : [];
}

/** The files pi's own tool calls in a session file read and changed (the ground truth for the file sections). */
export function touchedFiles(entries: Json[]): { read: string[]; modified: string[] } {
  const read = new Set<string>();
  const modified = new Set<string>();
  for (const e of entries) {
    if (e.type !== 'message' || e.message.role !== 'assistant') continue;
    for (const block of e.message.content) {
      if (block.type !== 'toolCall') continue;
      if (block.name === 'read') read.add(block.arguments.path);
      if (block.name === 'edit' || block.name === 'write') modified.add(block.arguments.path);
    }
  }
  return { read: [...read].filter((p) => !modified.has(p)).sort(), modified: [...modified].sort() };
}

/** A PATH where `compactd` is not found (node stays, for pi itself; /usr/bin and /bin for its bash tool). */
export function pathWithoutCompactd(): string {
  const path = [dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter);
  const found = spawnSync('sh', ['-c', 'command -v compactd'], { env: { PATH: path } });
  if (found.status === 0) throw new Error(`compactd is on ${path} (${found.stdout}); the test needs a PATH without it`);
  return path;
}

export function scenario(name: string): string {
  return join(AGENTS, 'scenarios', name);
}
