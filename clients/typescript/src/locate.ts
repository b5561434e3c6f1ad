// Finding and vetting the compactd binary: an explicit path (a setting, a
// flag), else `compactd` on PATH, else a bundled binary beside the caller.

import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type ServerSource = 'explicit' | 'PATH' | 'bundled';

export interface ServerCandidate {
  path: string;
  source: ServerSource;
}

export interface LocateOptions {
  /** An explicit path; when set it wins, even when it is wrong (so the user hears about it). */
  path?: string;
  /** How errors name the explicit path, e.g. `compactd.server.path`. Default: `the compactd path`. */
  pathName?: string;
  /** The PATH to search. Default: `process.env.PATH`. */
  pathEnv?: string;
  /** Directories searched last, in order, for a bundled binary (e.g. an extension's `bin/`). */
  bundledDirs?: string[];
  platform?: NodeJS.Platform;
}

export class ServerNotFound extends Error {
  readonly name = 'ServerNotFound';
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The server to launch, or `ServerNotFound` saying where it looked. */
export function findServer(options: LocateOptions = {}, isExecutable = isExecutableFile): ServerCandidate {
  const exe = (options.platform ?? process.platform) === 'win32' ? 'compactd.exe' : 'compactd';
  const explicit = options.path?.trim() ?? '';
  const pathName = options.pathName ?? 'the compactd path';
  if (explicit !== '') {
    if (!isExecutable(explicit)) {
      throw new ServerNotFound(
        `${pathName} is set to ${explicit}, which is not an executable file. Fix it or clear it to use compactd from PATH.`,
      );
    }
    return { path: explicit, source: 'explicit' };
  }
  for (const dir of (options.pathEnv ?? process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, exe);
    if (isExecutable(path)) return { path, source: 'PATH' };
  }
  for (const dir of options.bundledDirs ?? []) {
    const path = join(dir, exe);
    if (isExecutable(path)) return { path, source: 'bundled' };
  }
  const bundled = options.bundledDirs?.length ? `, nor in ${options.bundledDirs.join(', ')}` : '';
  throw new ServerNotFound(`compactd was not found: set ${pathName} or put compactd on PATH (it is not on PATH${bundled}).`);
}

/**
 * Runs `<path> --version` and returns what it printed. Rejects with a message
 * that names the binary and why, when it cannot run, exits non-zero, or does
 * not say it is compactd.
 */
export function checkServerVersion(candidate: ServerCandidate, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(candidate.path, ['--version'], { timeout: timeoutMs }, (error, stdout, stderr) => {
      const where = `${candidate.path} (from ${candidate.source})`;
      if (error) {
        const detail = (stderr || error.message).trim().split('\n').slice(0, 3).join(' ');
        const how = error.killed ? `did not answer within ${timeoutMs} ms` : `failed (${detail})`;
        reject(new ServerNotFound(`The compactd server at ${where} is not usable: \`--version\` ${how}.`));
        return;
      }
      const version = stdout.trim();
      if (!/^compactd\s+\S+/.test(version)) {
        reject(
          new ServerNotFound(`The program at ${where} is not compactd: \`--version\` printed ${JSON.stringify(version.slice(0, 80))}.`),
        );
        return;
      }
      resolve(version);
    });
  });
}
