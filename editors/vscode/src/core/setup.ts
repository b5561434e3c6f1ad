// Offering `compactd setup <agent>` when the editor first follows a session
// of an agent compactd can take part in (its hooks). No `vscode` here.

import { execFile } from 'node:child_process';
import type { AgentInfo } from 'compactd-client';

/**
 * The question to ask, or undefined when there is none: an agent whose own
 * compactions compactd's hooks take no part in (`supports.hooks` in the
 * server's `initialize` answer, `agents`), one the user declined for good,
 * or one already set up (the dry run of `compactd setup <agent>` has
 * nothing to change).
 */
export function setupQuestion(
  agent: string,
  agentName: string,
  dryRun: string,
  declined: readonly string[],
  agents: readonly AgentInfo[] | undefined,
): string | undefined {
  const hooks = (agents ?? []).some((a) => a.name === agent && a.supports.hooks);
  if (!hooks || declined.includes(agent)) return undefined;
  if (/: nothing to change/.test(dryRun)) return undefined;
  return `Set up ${agentName}'s hooks, so its own compactions keep the files, rules and task compactd knows?`;
}

/** `compactd setup <agent> [--dry-run]`: what it printed (stdout and stderr). */
export function runSetup(binary: string, agent: string, dryRun: boolean): Promise<string> {
  const args = ['setup', agent, ...(dryRun ? ['--dry-run'] : [])];
  return new Promise((resolve, reject) => {
    execFile(binary, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const printed = `${stdout}${stderr}`.trim();
      if (error) reject(new Error(printed || error.message));
      else resolve(printed);
    });
  });
}
