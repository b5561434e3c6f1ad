// Finding and vetting the server binary. No `vscode` here.

import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type ServerSource = 'setting' | 'PATH' | 'bundled';

export interface ServerCandidate {
  path: string;
  source: ServerSource;
}

export interface LocateInput {
  /** `compactd.server.path`; empty when unset. */
  configuredPath: string;
  /** The PATH environment variable. */
  pathEnv: string;
  /** The extension's own directory (a bundled binary lives in `bin/`). */
  extensionPath: string;
  platform?: NodeJS.Platform;
}

export class ServerNotFound extends Error {}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The server to launch: the setting if set (even when it is wrong, so the
 * user hears about it), else `compactd` on PATH, else the bundled binary.
 */
export function findServer(input: LocateInput, isExecutable = isExecutableFile): ServerCandidate {
  const exe = (input.platform ?? process.platform) === 'win32' ? 'compactd.exe' : 'compactd';
  if (input.configuredPath.trim() !== '') {
    const path = input.configuredPath.trim();
    if (!isExecutable(path)) {
      throw new ServerNotFound(
        `compactd.server.path is set to ${path}, which is not an executable file. Fix the setting or clear it to use compactd from PATH.`,
      );
    }
    return { path, source: 'setting' };
  }
  for (const dir of input.pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, exe);
    if (isExecutable(path)) return { path, source: 'PATH' };
  }
  const bundled = join(input.extensionPath, 'bin', exe);
  if (isExecutable(bundled)) return { path: bundled, source: 'bundled' };
  throw new ServerNotFound(
    'compactd was not found: set compactd.server.path, put compactd on PATH, or install the extension build that bundles it.',
  );
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
          new ServerNotFound(
            `The program at ${where} is not compactd: \`--version\` printed ${JSON.stringify(version.slice(0, 80))}.`,
          ),
        );
        return;
      }
      resolve(version);
    });
  });
}
