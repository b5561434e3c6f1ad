#!/usr/bin/env node
// `prepare`: builds out/ with this package's TypeScript. npm runs it after
// `npm ci` here, and when another package installs this directory
// (editors/vscode packs it, install-links): then this package's own
// node_modules must exist, so say so plainly instead of "tsc: not found".
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');
if (!existsSync(tsc)) {
  console.error(`compactd-client: no TypeScript in ${join(root, 'node_modules')}: run \`npm ci\` in ${root} first`);
  process.exit(1);
}
const run = spawnSync(process.execPath, [tsc, '-p', root], { stdio: 'inherit' });
process.exit(run.status ?? 1);
