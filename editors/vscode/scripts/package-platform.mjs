#!/usr/bin/env node
// A platform .vsix that carries the compactd binary, as rust-analyzer ships
// its server: `node scripts/package-platform.mjs [target]` (default
// linux-x64) copies the release binary (COMPACTD_RELEASE_BIN, default
// ../../target/release/compactd) to bin/compactd, where the extension looks
// when neither `compactd.server.path` nor PATH has one, packages
// compactd-<target>.vsix with `vsce package --target`, and removes bin/ again
// so the universal package stays without it.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const target = process.argv[2] ?? 'linux-x64';
const binary = resolve(process.env.COMPACTD_RELEASE_BIN ?? join(root, '../../target/release/compactd'));
if (!existsSync(binary)) {
  console.error(`no release binary at ${binary}: run \`cargo build --release\` at the repository root or set COMPACTD_RELEASE_BIN`);
  process.exit(1);
}
const bin = join(root, 'bin');
rmSync(bin, { recursive: true, force: true });
mkdirSync(bin);
try {
  copyFileSync(binary, join(bin, 'compactd'));
  chmodSync(join(bin, 'compactd'), 0o755);
  const out = `compactd-${target}.vsix`;
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/@vscode/vsce/vsce'), 'package', '--target', target, '--allow-missing-repository', '-o', out],
    { cwd: root, stdio: 'inherit' },
  );
  console.log(`${out}: the extension with ${binary}`);
} finally {
  rmSync(bin, { recursive: true, force: true });
}
