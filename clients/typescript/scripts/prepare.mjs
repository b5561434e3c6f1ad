#!/usr/bin/env node
// `prepare`: builds out/ with this package's TypeScript. npm runs it after
// `npm ci` here, and when another package installs this directory
// (`npm install /path/to/clients/typescript`, editors/vscode packing it):
// then this package's own dev dependencies may be missing, so they are
// installed first (`npm ci` here, from package-lock.json), and a package
// installed as documented builds.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

function run(command, args, what) {
  const done = spawnSync(command, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, npm_config_global: 'false' } });
  if (done.status !== 0) {
    console.error(`compactd-client: ${what} failed in ${root}`);
    process.exit(done.status ?? 1);
  }
}

if (!existsSync(tsc)) {
  // The npm that runs this script, else the one on PATH.
  const npm = process.env.npm_execpath;
  const [command, args] = npm ? [process.execPath, [npm]] : ['npm', []];
  run(command, [...args, 'ci', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund'], '`npm ci` (its TypeScript)');
}
run(process.execPath, [tsc, '-p', root], 'tsc');
