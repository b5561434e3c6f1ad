// The extension's settings: the `compactd` key of pi's own settings files,
// `<agent dir>/settings.json` (global) and `<cwd>/.pi/settings.json`
// (project, which wins key by key; `configuration` is merged one level
// deeper). pi gives extensions no settings getter, so they are read here,
// the way pi finds those files.

import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config } from 'compactd-client';

export interface Settings {
  /** false: the extension stays out of the way and pi compacts itself. Default true. */
  enabled: boolean;
  /** The compactd binary; default `compactd` on PATH, then `bin/` beside the extension. */
  path?: string;
  /** Arguments after the binary. */
  args: string[];
  /** compactd's configuration (`initializationOptions`): summarizer, fileTools, maxListedFiles, … `compactd.toml` fills the rest. */
  configuration: Config;
  /** Newest tokens compactd keeps verbatim; default pi's `compaction.keepRecentTokens`. */
  keepRecentTokens?: number;
  /** How long a compaction may take before pi's own runs instead. Default 10 minutes. */
  timeoutMs: number;
  /** Show compactd's meter in pi's footer. Default true. */
  status: boolean;
}

/** pi's own compaction settings (`compaction` in the same files), with pi's defaults. */
export interface PiCompaction {
  reserveTokens: number;
  keepRecentTokens: number;
}

/** pi's agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. */
export function agentDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.PI_CODING_AGENT_DIR;
  if (!dir) return join(homedir(), '.pi', 'agent');
  return dir === '~' ? homedir() : dir.startsWith('~/') ? join(homedir(), dir.slice(2)) : resolve(dir);
}

/** The `key` object of a settings file; {} when the file or the key is absent, a problem when it is not an object. */
function readKey(file: string, key: string, problems: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return {};
  }
  try {
    const value = (JSON.parse(text) as Record<string, unknown>)?.[key];
    if (value === undefined) return {};
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    problems.push(`${file}: "${key}" must be an object`);
  } catch (e) {
    problems.push(`${file}: ${(e as Error).message}`);
  }
  return {};
}

/** pi's compaction settings as pi merges them (project over global), with pi's defaults (16,384 and 20,000). */
export function loadPiCompaction(cwd: string, env: NodeJS.ProcessEnv = process.env): PiCompaction {
  const ignored: string[] = [];
  const merged = { ...readKey(join(agentDir(env), 'settings.json'), 'compaction', ignored), ...readKey(join(cwd, '.pi', 'settings.json'), 'compaction', ignored) };
  const n = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback);
  return { reserveTokens: n(merged.reserveTokens, 16_384), keepRecentTokens: n(merged.keepRecentTokens, 20_000) };
}

/** The merged settings, and what was wrong with them (each problem falls back to the default). */
export function loadSettings(cwd: string, env: NodeJS.ProcessEnv = process.env): { settings: Settings; problems: string[] } {
  const problems: string[] = [];
  const global = readKey(join(agentDir(env), 'settings.json'), 'compactd', problems);
  const project = readKey(join(cwd, '.pi', 'settings.json'), 'compactd', problems);
  const raw: Record<string, unknown> = { ...global, ...project };
  const configuration = { ...(asObject(global.configuration) ?? {}), ...(asObject(project.configuration) ?? {}) };
  const pick = <T>(key: string, ok: (v: unknown) => v is T, fallback: T): T => {
    const v = raw[key];
    if (v === undefined) return fallback;
    if (ok(v)) return v;
    problems.push(`compactd.${key}: ${JSON.stringify(v)} is not valid`);
    return fallback;
  };
  const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
  const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
  const isString = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';
  const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((a) => typeof a === 'string');
  return {
    settings: {
      enabled: pick('enabled', isBool, true),
      path: pick<string | undefined>('path', isString, undefined),
      args: pick('args', isStrings, []),
      configuration: configuration as Config,
      keepRecentTokens: pick<number | undefined>('keepRecentTokens', isPositive, undefined),
      timeoutMs: pick('timeoutMs', isPositive, 600_000),
      status: pick('status', isBool, true),
    },
    problems,
  };
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
