// What every generator from schemas/ in TypeScript land shares (this
// package's and editors/vscode's): its command line, and writing or checking
// the files it generates.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * `--root DIR` (default `defaultRoot`), `--schemas DIR` (default the
 * repository's schemas/ two levels above the root) and `--check`.
 */
export function generatorOptions(defaultRoot) {
  const argValue = (name, fallback) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? resolve(process.argv[i + 1]) : fallback;
  };
  const root = argValue('--root', defaultRoot);
  return { root, schemasDir: argValue('--schemas', resolve(root, '../../schemas')), check: process.argv.includes('--check') };
}

/**
 * Writes each of `outputs` (path under `root` → text) that differs; with
 * `check`, writes nothing and exits 1 naming the stale files. `regenerate`
 * says how to fix them.
 */
export function writeOutputs({ root, check }, outputs, regenerate) {
  const stale = [];
  for (const [path, text] of Object.entries(outputs)) {
    const full = join(root, path);
    let current = null;
    try {
      current = readFileSync(full, 'utf8');
    } catch {}
    if (current === text) continue;
    stale.push(path);
    if (!check) {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
    }
  }
  if (check && stale.length) {
    console.error(`stale (regenerate from schemas/ with ${regenerate}): ${stale.join(', ')}`);
    process.exit(1);
  }
  console.log(check ? 'generated files are up to date' : stale.length ? `wrote ${stale.join(', ')}` : 'nothing to regenerate');
}
