// The real compactd binary for the tests, each server in a scratch HOME so
// no user configuration or session leaks in or out.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CompactdClient, type SpawnOptions } from '../../src';
import type { Config } from '../../src/generated/types';

/** clients/typescript, from out/test/support. */
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

/** Spawn options for a server of this repository's build in a fresh HOME; `cleanup` removes it. */
export function isolated(options: SpawnOptions = {}): SpawnOptions & { cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), 'compactd-client-test-'));
  return {
    path: serverBinary(),
    args: ['--no-user-config'],
    env: { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config'), COMPACTD_LOG: 'debug' },
    ...options,
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

export async function spawnIsolated(options: SpawnOptions = {}): Promise<CompactdClient & { cleanup(): void }> {
  const spawn = isolated(options);
  const client = await CompactdClient.spawn(spawn);
  return Object.assign(client, { cleanup: spawn.cleanup });
}

/** Runs `body` with a client of an isolated server, then closes it, whatever happened. */
export async function withClient(options: SpawnOptions, body: (client: CompactdClient) => Promise<void>): Promise<void> {
  const spawn = isolated(options);
  const client = await CompactdClient.spawn(spawn);
  try {
    await body(client);
  } finally {
    await client.close();
    spawn.cleanup();
  }
}

/** Resolves with the first value `subscribe` delivers that matches (rejecting after PATIENCE_MS). */
export function next<T>(what: string, subscribe: (handler: (value: T) => void) => { dispose(): void }, match: (value: T) => boolean = () => true): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), PATIENCE_MS);
    const subscription = subscribe((value) => {
      if (!match(value)) return;
      clearTimeout(timer);
      subscription.dispose();
      resolvePromise(value);
    });
  });
}

/** A coding conversation of `turns` user/assistant/tool rounds (as the VS Code tests use). */
export function conversation(turns: number, toolChars = 1200): any[] {
  const messages: any[] = [];
  for (let i = 1; i <= turns; i++) {
    messages.push({ role: 'user', content: `Step ${i}: fix the failing test in src/module${i}.rs and explain why it failed.` });
    messages.push({ role: 'assistant', content: `Reading src/module${i}.rs.`, toolCalls: [{ id: `call${i}`, name: 'read', arguments: { path: `src/module${i}.rs` } }] });
    const line = `fn item_${i}(x: u64) -> u64 { x.wrapping_mul(${i}) + ${i * 7} } // module ${i}\n`;
    messages.push({ role: 'tool', toolCallId: `call${i}`, toolName: 'read', content: line.repeat(Math.ceil(toolChars / line.length)) });
    messages.push({ role: 'assistant', content: `Fixed item_${i}: the multiplier overflowed, so it now wraps.` });
  }
  return messages;
}

/**
 * The `test` summarizer paces each chunk, so a compaction runs long enough to cancel.
 * The server accepts it, but it is no user's choice, so the published `Config` type
 * leaves it out.
 */
export const SLOW_SUMMARIZER = {
  keepRecentTokens: 400,
  summarizer: { provider: 'test', delayMs: 30000 },
} as unknown as Config;
