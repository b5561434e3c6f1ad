// The README's complete example (the first `ts` block, which imports what
// it uses) runs as written: type-checked against this package's types,
// compiled, and run by node with `compactd` found on PATH, as a user has it.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { PACKAGE_ROOT, serverBinary } from './support/server';

function firstExample(): string {
  const readme = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'the README has a ts block');
  return block[1];
}

test("the README's example type-checks and runs against the real binary", () => {
  const scratch = mkdtempSync(join(tmpdir(), 'compactd-client-readme-'));
  try {
    // The package as a user imports it, and the example in an async main
    // (a CommonJS module has no top-level await).
    // The package as a user imports it (this build of it), and the rest in
    // an async main (a CommonJS module has no top-level await).
    const example = firstExample();
    const imports = example.split('\n').filter((l) => l.startsWith('import ')).join('\n');
    const body = example.split('\n').filter((l) => !l.startsWith('import ')).join('\n');
    const source = `${imports.replace(`'compactd-client'`, JSON.stringify(join(PACKAGE_ROOT, 'out', 'src')))}\nasync function main() {\n${body}\n}\nmain().catch((e) => { console.error(e); process.exit(1); });\n`;
    const file = join(scratch, 'example.ts');
    writeFileSync(file, source);
    const program = ts.createProgram([file], { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: true, esModuleInterop: true, skipLibCheck: true, noEmit: true, types: ['node'], typeRoots: [join(PACKAGE_ROOT, 'node_modules', '@types')] });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(diagnostics, [], source);
    const js = ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS } }).outputText;
    writeFileSync(join(scratch, 'example.js'), js);
    const home = join(scratch, 'home');
    const out = execFileSync(process.execPath, [join(scratch, 'example.js')], {
      cwd: scratch,
      env: { ...process.env, PATH: `${dirname(serverBinary())}${delimiter}${process.env.PATH}`, HOME: home, XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.match(out, /^\d+\/\d+$/m, 'the meter was printed');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
