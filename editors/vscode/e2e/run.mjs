#!/usr/bin/env node
// End to end in a real VS Code: installs compactd.vsix and a test-only
// "agent" extension into code-server, opens a workspace in headless
// Chromium, appends a conversation through compactd's public API, and
// asserts from the page that the status bar shows the meter, that Compact
// Conversation shows the compacted message, and that the meter drops; then
// opens the summary, toggles auto-compact and previews a compaction. Then,
// with `compactd.follow` at the extension's default (`auto`), it writes a
// Claude Code transcript line by line into the temporary HOME's
// ~/.claude/projects/<workspace>/ as Claude Code does, and asserts that the
// status bar follows it (`Claude Code 13.6k/200k (7%)`, then more), that the
// tooltip names the transcript and where Claude Code compacts, and runs
// Show Tracked Files, Follow Agent Session… and Write Handoff on it.
// Screenshots and the code-server log go to e2e-artifacts/.
//
// With --shared the extension attaches to a shared compactd (`compactd
// serve --listen`, `compactd.server.connect: auto`) instead of starting
// one, runs the same steps over WebSocket, and then, in place of the Claude
// Code part (a shared compactd keeps its own configuration, so the
// extension's `compactd.follow` does not reach it), watches the session a
// test agent drives from its own process (Watch Shared Session…,
// compactd-client over WebSocket): the status bar shows the agent's meter
// as it appends and compacts.
//
// With --bundled it installs compactd-linux-x64.vsix (npm run
// package:linux-x64), the platform package that carries the release binary,
// sets no `compactd.server.path` and runs code-server with no `compactd` on
// PATH: the extension must find the binary it ships with.
//
// Needs: compactd.vsix (npm run package), the compactd binary (COMPACTD_BIN,
// default ../../target/debug/compactd), code-server (e2e/install-code-server.sh,
// cached) and Debian's chromium (CHROMIUM, default /usr/bin/chromium).

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import client from 'compactd-client';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const artifacts = join(root, 'e2e-artifacts');
const serverBin = resolve(process.env.COMPACTD_BIN ?? join(root, '../../target/debug/compactd'));
const bundledMode = process.argv.includes('--bundled');
const vsix = join(root, bundledMode ? 'compactd-linux-x64.vsix' : 'compactd.vsix');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** A bound on each wait, so a broken run fails instead of hanging. Never used to wait for something to happen. */
const PATIENCE_MS = 120_000;
const started = Date.now();
const sharedMode = process.argv.includes('--shared');

function step(message) {
  console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}

function need(path, hint) {
  if (!existsSync(path)) throw new Error(`missing ${path}: ${hint}`);
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolvePort(port));
    });
  });
}

/** `90.4k/200k (45%)` → 90400. */
function meterTokens(text) {
  const match = /^([\d.]+)(k|M)?\/[\d.]+(?:k|M)? \(\d+%\)$/.exec(text.trim());
  if (!match) throw new Error(`not a meter: ${JSON.stringify(text)}`);
  return Number(match[1]) * (match[2] === 'k' ? 1e3 : match[2] === 'M' ? 1e6 : 1);
}

function writeJson(path, value) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(value, null, 2));
}

async function main() {
  need(vsix, bundledMode ? 'run `npm run package:linux-x64` first' : 'run `npm run package` first');
  need(serverBin, 'run `cargo build` at the repository root or set COMPACTD_BIN');
  need(chromiumPath, 'apt-get install chromium, or set CHROMIUM');
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });

  step('code-server');
  const csDir = execFileSync(join(root, 'e2e/install-code-server.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const node24 = join(csDir, 'node/bin/node');
  const entry = join(csDir, 'app/node_modules/code-server/out/node/entry.js');

  const scratch = mkdtempSync(join(tmpdir(), 'compactd-e2e-'));
  const userData = join(scratch, 'user-data');
  const extensions = join(scratch, 'extensions');
  const workspace = join(scratch, 'workspace');
  const env = { ...process.env, HOME: scratch, XDG_CONFIG_HOME: join(scratch, 'config'), XDG_DATA_HOME: join(scratch, 'data') };
  if (bundledMode) {
    // No `compactd` anywhere on PATH: only the one in the package can run.
    env.PATH = (env.PATH ?? '').split(':').filter((dir) => dir && !existsSync(join(dir, 'compactd'))).join(':');
    const found = spawnSync('sh', ['-c', 'command -v compactd'], { env, encoding: 'utf8' });
    if (found.status === 0) throw new Error(`compactd is still on PATH: ${found.stdout}`);
    step('no compactd on PATH; the extension must use the binary it bundles');
  }
  let shared;
  if (sharedMode) {
    step('starting a shared compactd');
    shared = await startShared(scratch, env);
    // The extension host inherits code-server's environment.
    env.COMPACTD_DISCOVERY_FILE = shared.discoveryFile;
  }
  writeJson(join(userData, 'User/settings.json'), {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'chat.disableAIFeatures': true,
  });
  // The workspace's settings are what the extension sends as initializationOptions.
  writeJson(join(workspace, '.vscode/settings.json'), {
    ...(bundledMode ? {} : { 'compactd.server.path': serverBin }),
    'compactd.dataDir': join(scratch, 'sessions'),
    'compactd.keepRecentTokens': 400,
    ...(sharedMode ? { 'compactd.server.connect': 'auto' } : {}),
  });
  mkdirSync(join(workspace, 'src'), { recursive: true });
  writeFileSync(join(workspace, 'src/main.rs'), 'fn main() {\n    println!("hello");\n}\n');

  let codeServer;
  let browser;
  try {
    step('packaging the fixture agent extension');
    const fixtureVsix = join(scratch, 'compactd-e2e-agent.vsix');
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/@vscode/vsce/vsce'), 'package', '--skip-license', '--allow-missing-repository', '-o', fixtureVsix],
      { cwd: join(root, 'e2e/fixture-extension'), stdio: ['ignore', 'ignore', 'inherit'] },
    );

    const common = ['--user-data-dir', userData, '--extensions-dir', extensions, '--config', join(scratch, 'code-server.yaml')];
    step('installing compactd.vsix and the fixture into code-server');
    execFileSync(node24, [entry, ...common, '--install-extension', vsix, '--install-extension', fixtureVsix], {
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    });

    const port = await freePort();
    step(`starting code-server on 127.0.0.1:${port}`);
    codeServer = spawn(
      node24,
      [entry, ...common, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
        '--disable-workspace-trust', '--disable-getting-started-override', '--ignore-last-opened', workspace],
      { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const logPath = join(artifacts, 'code-server.log');
    let log = '';
    const appendLog = (chunk) => {
      log += chunk;
      writeFileSync(logPath, log);
    };
    codeServer.stdout.on('data', appendLog);
    codeServer.stderr.on('data', appendLog);
    await new Promise((resolveListening, reject) => {
      const timer = setTimeout(() => reject(new Error(`code-server did not listen:\n${log}`)), PATIENCE_MS);
      const check = () => {
        if (/HTTP server listening/.test(log)) {
          clearTimeout(timer);
          resolveListening();
        }
      };
      codeServer.stdout.on('data', check);
      codeServer.stderr.on('data', check);
      codeServer.once('exit', (code) => reject(new Error(`code-server exited (${code}):\n${log}`)));
    });

    step('opening the workspace in headless chromium');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(PATIENCE_MS);
    const consoleLines = [];
    page.on('console', (m) => consoleLines.push(`[${m.type()}] ${m.text()}`));
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.monaco-workbench').waitFor();

    const statusbar = page.locator('#workbench\\.parts\\.statusbar');
    // The idle meter means compactd activated and its server passed `--version`.
    // compactd's item: its id is `<extension id>.<item id>`.
    const meter = statusbar.locator('.statusbar-item[id="compactd.compactd.compactd.meter"]');
    await meter.filter({ hasText: 'compactd' }).waitFor();
    step('compactd is active');

    // Opening a file feeds the server's file ledger (textDocument/didOpen).
    await openFile(page, 'main.rs');
    await page.locator('.editor-instance .view-line', { hasText: 'println!' }).waitFor();

    await runCommand(page, 'compactd E2E: Append Sample Conversation');
    await meter.filter({ hasText: /\(\d+%\)/ }).waitFor();
    await page.locator('.notifications-toasts', { hasText: 'compactd E2E: appended 32 messages to e2e-demo' }).waitFor();
    const before = (await meter.innerText()).trim();
    step(`meter shows ${before}`);
    if (!/\/128k \(\d+%\)$/.test(before) || meterTokens(before) < 2000) throw new Error(`unexpected meter ${before}`);
    await meter.hover();
    // The tooltip breaks the meter down (Markdown, rendered).
    await page.locator('.monaco-hover, .workbench-hover', { hasText: 'session e2e-demo' }).filter({ hasText: 'Auto-compact at' }).first().waitFor();
    await page.screenshot({ path: join(artifacts, '01-meter.png') });
    await page.mouse.move(700, 400);

    // What a compaction would do, before doing it.
    await runCommand(page, 'compactd: Preview Compaction');
    await page.locator('.editor-instance .view-line', { hasText: '# Compaction preview' }).waitFor();
    await page.locator('.editor-instance .view-line', { hasText: /Summarize:\s[1-9]\d*\smessages/ }).waitFor();
    await page.screenshot({ path: join(artifacts, '02-preview.png') });

    await runCommand(page, 'compactd: Compact Conversation');
    const input = page.locator('.quick-input-widget', { hasText: 'Optional instructions for the summary' });
    await input.waitFor();
    await page.keyboard.type('keep the module names');
    await page.keyboard.press('Enter');
    const compacted = page.locator('.notifications-toasts .notification-toast', { hasText: /Conversation compacted: \d+ messages → summary; tokens \d+ → \d+/ });
    await compacted.waitFor();
    // The progress notification closes when the request is answered.
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'Compacting conversation' }).waitFor({ state: 'detached' });
    const announcement = (await compacted.locator('.notification-list-item-message').innerText()).trim();
    step(`notification: ${announcement}`);
    const [, , tokensBefore, tokensAfter] = /Conversation compacted: (\d+) messages → summary; tokens (\d+) → (\d+)/.exec(announcement).map(Number);
    if (!(tokensAfter < tokensBefore)) throw new Error(`compaction did not reduce tokens: ${announcement}`);
    await page.screenshot({ path: join(artifacts, '03-compacted.png') });

    // The meter drops to the compacted count.
    await page.waitForFunction(
      ({ before }) => {
        const item = document.getElementById('compactd.compactd.compactd.meter');
        const text = item?.textContent.trim();
        return text !== undefined && /^[\d.]+[kM]?\/[\d.]+[kM]? \(\d+%\)$/.test(text) && text !== before;
      },
      { before },
      { timeout: PATIENCE_MS },
    );
    const after = (await meter.innerText()).trim();
    step(`meter drops: ${before} → ${after}`);
    if (!(meterTokens(after) < meterTokens(before))) throw new Error(`meter did not drop: ${before} → ${after}`);
    if (Math.abs(meterTokens(after) - tokensAfter) > Math.max(50, tokensAfter * 0.05)) {
      throw new Error(`meter ${after} does not show the compacted ${tokensAfter} tokens`);
    }
    await page.screenshot({ path: join(artifacts, '04-meter-after.png') });

    // The notification's action opens the summary in an editor.
    await compacted.getByRole('button', { name: 'Open Summary' }).click();
    await page.locator('.editor-instance .view-line', { hasText: '# Compaction summary' }).waitFor();
    await page.screenshot({ path: join(artifacts, '05-summary.png') });

    // Another command of the palette, against the same session.
    await runCommand(page, 'compactd: Toggle Auto-Compact');
    await page.locator('.notifications-toasts', { hasText: 'compactd: auto-compact is off for e2e-demo.' }).waitFor();

    // The chat extension closes what it opened: closed once, then nothing to close.
    await runCommand(page, 'compactd E2E: Close Sample Conversation');
    await page.locator('.notifications-toasts', { hasText: 'compactd E2E: closed e2e-demo: true, then false' }).waitFor();
    step('the sample conversation closed');

    // A shared compactd keeps its own configuration (the extension's
    // `compactd.follow: auto` is not applied to it), so with --shared the
    // window watches a test agent's session instead of following Claude Code.
    const followed = sharedMode ? await watchTheAgent(page, meter, shared) : await followClaudeCode(page, scratch, workspace);

    writeFileSync(join(artifacts, 'browser-console.log'), consoleLines.join('\n'));
    step(`passed: meter ${before} → ${after}, "${announcement}"; ${sharedMode ? "watched the agent's session" : 'followed Claude Code'}: ${followed.join(' → ')}`);
    console.log('e2e: 1 passed, 0 failed');
  } catch (error) {
    if (browser) {
      const pages = browser.contexts().flatMap((c) => c.pages());
      if (pages[0]) {
        await pages[0].screenshot({ path: join(artifacts, 'failure.png') }).catch(() => undefined);
        const html = await pages[0].locator('#workbench\\.parts\\.statusbar').innerHTML().catch(() => '');
        writeFileSync(join(artifacts, 'failure-statusbar.html'), html);
      }
    }
    throw error;
  } finally {
    await browser?.close().catch(() => undefined);
    if (codeServer && codeServer.exitCode === null) {
      // code-server and its extension host (and so compactd) are one process group.
      try {
        process.kill(-codeServer.pid, 'SIGTERM');
      } catch {}
    }
    if (shared) await shared.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** `compactd serve --listen 127.0.0.1:0` with its own compactd.toml; resolves once it printed its address. */
async function startShared(scratch, env) {
  const dir = join(scratch, 'shared');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'compactd.toml'), `dataDir = ${JSON.stringify(join(scratch, 'sessions'))}\nkeepRecentTokens = 400\n`);
  const discoveryFile = join(scratch, 'run', 'server.json');
  const child = spawn(serverBin, ['--no-user-config', 'serve', '--listen', '127.0.0.1:0', '--discovery-file', discoveryFile], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error('the shared compactd printed no address')), PATIENCE_MS);
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /compactd listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    });
  });
  step(`shared compactd at ${url}`);
  return {
    url,
    discoveryFile,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`the shared compactd exited ${code}`);
      if (existsSync(discoveryFile)) throw new Error('the shared compactd left its discovery file');
    },
  };
}

/**
 * A test agent in this process drives a session on the shared compactd; the
 * window watches it (Watch Shared Session…) and shows its meter. Returns the
 * texts the meter showed.
 */
async function watchTheAgent(page, meter, shared) {
  const agent = await client.CompactdClient.connect({ discoveryFile: shared.discoveryFile, clientInfo: { name: 'e2e-agent' } });
  const shown = [];
  const show = async (what) => {
    shown.push((await meter.innerText()).trim());
    step(`${what}: the status bar shows ${shown.at(-1)}`);
  };
  try {
    const { conversation } = await import('./fixture-extension/conversation.js').then((m) => m.default ?? m);
    await agent.open({ sessionId: 'agent-1', model: 'gpt-4o', contextWindow: 200000 });
    const first = await agent.append({ sessionId: 'agent-1', messages: conversation(6) });
    step(`the agent appended to agent-1: ${first.meter.contextTokens} tokens`);
    await runCommand(page, 'compactd: Watch Shared Session…');
    await page.locator('.quick-input-widget', { hasText: 'Watch a session another client drives' }).waitFor();
    await page.keyboard.type('agent-1');
    await page.keyboard.press('Enter');
    await page.locator('.notifications-toasts', { hasText: `compactd: watching agent-1 on ${shared.url}` }).waitFor();
    await waitForMeter(page, meter, first.meter.contextTokens, '/200k');
    await show("the agent's meter");
    await page.screenshot({ path: join(artifacts, '06-agent-meter.png') });
    // The agent goes on in its own process; the window shows it.
    const second = await agent.append({ sessionId: 'agent-1', messages: conversation(12).slice(24) });
    await waitForMeter(page, meter, second.meter.contextTokens, '/200k');
    await show('the agent appended more');
    const compacted = await agent.compact({ sessionId: 'agent-1', keepRecentTokens: 200 });
    if (!compacted.compacted) throw new Error(`the agent's compaction did not apply: ${compacted.reason}`);
    await waitForMeter(page, meter, compacted.tokensAfter, '/200k');
    await show(`the agent compacted (${compacted.tokensBefore} → ${compacted.tokensAfter})`);
    await page.screenshot({ path: join(artifacts, '07-agent-compacted.png') });
  } finally {
    await agent.close();
  }
  return shown;
}

/** Waits until the status bar's meter shows `tokens` (as rounded for display) of a `window` like `/200k`. */
async function waitForMeter(page, meter, tokens, window) {
  await page.waitForFunction(
    ({ tokens, window }) => {
      const text = document.getElementById('compactd.compactd.compactd.meter')?.textContent.trim() ?? '';
      const match = /^([\d.]+)(k|M)?(\/[\d.]+(?:k|M)?) \(\d+%\)$/.exec(text);
      if (!match || match[3] !== window) return false;
      const shown = Number(match[1]) * (match[2] === 'k' ? 1e3 : match[2] === 'M' ? 1e6 : 1);
      return Math.abs(shown - tokens) <= Math.max(50, tokens * 0.001);
    },
    { tokens, window },
    { timeout: PATIENCE_MS },
  );
}

const line = (value) => `${JSON.stringify(value)}\n`;
/** One line of a Claude Code response: a content block and the usage of its request (input, cache write, cache read, output). */
const claudeResponse = (uuid, id, block, [input, write, read, output]) =>
  line({
    type: 'assistant', uuid, sessionId: 'e2e', message: {
      id, role: 'assistant', model: 'claude-sonnet-4-5', content: [block], stop_reason: 'tool_use',
      usage: { input_tokens: input, cache_creation_input_tokens: write, cache_read_input_tokens: read, output_tokens: output },
    },
  });

/**
 * Claude Code runs in the workspace (as far as compactd can tell): its
 * transcript grows line by line in ~/.claude/projects/<the workspace's real
 * path, every character but [A-Za-z0-9] as '-'>/, and the status bar must
 * follow it. Returns the texts the meter showed.
 */
async function followClaudeCode(page, home, workspace) {
  const dir = join(home, '.claude/projects', realpathSync(workspace).replace(/[^a-zA-Z0-9]/g, '-'));
  mkdirSync(dir, { recursive: true });
  const transcript = join(dir, '5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl');
  const meter = page.locator('#workbench\\.parts\\.statusbar .statusbar-item[id="compactd.compactd.compactd.meter"]');
  const shown = [];
  const expect = async (text, what) => {
    await meter.filter({ hasText: text }).waitFor();
    shown.push((await meter.innerText()).trim());
    step(`${what}: the status bar shows ${shown.at(-1)}`);
  };

  appendFileSync(transcript, line({ type: 'user', uuid: 'u1', sessionId: 'e2e', message: { role: 'user', content: 'edit main.rs and write docs' } }));
  // Followed at once; no model yet, so Claude Code's default window.
  await expect(/^Claude Code \d+\/200k \(0%\)$/, 'a Claude Code session started');
  const edit = { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: join(workspace, 'src/main.rs'), old_string: 'hello', new_string: 'hello, world' } };
  appendFileSync(transcript, claudeResponse('a1', 'msg_1', edit, [3, 1500, 12_000, 96]));
  await expect('Claude Code 13.6k/200k (7%)', 'its first response');
  appendFileSync(
    transcript,
    line({ type: 'user', uuid: 'r1', sessionId: 'e2e', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'The file src/main.rs has been updated.' }] } }),
  );
  appendFileSync(transcript, claudeResponse('a2', 'msg_2', { type: 'text', text: 'Done.' }, [5, 4000, 86_000, 400]));
  await expect('Claude Code 90.4k/200k (45%)', 'its second response');

  await meter.hover();
  await page
    .locator('.monaco-hover, .workbench-hover', { hasText: 'Transcript:' })
    .filter({ hasText: 'Claude Code auto-compacts at ~177,000 tokens' })
    .first()
    .waitFor();
  await page.screenshot({ path: join(artifacts, '06-followed-meter.png') });
  await page.mouse.move(700, 400);

  await runCommand(page, 'compactd: Show Tracked Files');
  await page.locator('.quick-input-widget', { hasText: "Files Claude Code's session touched" }).locator('.quick-input-list-entry', { hasText: 'src/main.rs' }).waitFor();
  await page.screenshot({ path: join(artifacts, '07-followed-files.png') });
  await page.keyboard.press('Escape');

  await runCommand(page, 'compactd: Follow Agent Session…');
  await page.locator('.quick-input-widget .quick-input-list-entry', { hasText: 'Claude Code: edit main.rs and write docs' }).waitFor();
  await page.screenshot({ path: join(artifacts, '08-follow-picker.png') });
  await page.keyboard.press('Escape');

  await runCommand(page, 'compactd: Write Handoff');
  await page.locator('.quick-input-widget', { hasText: 'The goal of a fresh Claude Code session' }).waitFor();
  await page.keyboard.type('write the docs for main.rs');
  await page.keyboard.press('Enter');
  await page.locator('.editor-instance .view-line', { hasText: 'This session continues earlier work in another session.' }).waitFor();
  await page.locator('.notifications-toasts', { hasText: 'a handoff prompt for a fresh Claude Code session is open' }).waitFor();
  await page.screenshot({ path: join(artifacts, '09-handoff.png') });
  // The status bar still shows the agent, not the handoff's new session.
  await expect('Claude Code 90.4k/200k (45%)', 'after the handoff');
  return shown;
}

/** Opens the quick input with `key`, types `text`, and accepts the first entry showing it. */
async function quickInput(page, key, text) {
  await page.keyboard.press(key);
  const palette = page.locator('.quick-input-widget');
  await palette.locator('input').waitFor();
  await page.keyboard.type(text);
  await palette.locator('.quick-input-list-entry', { hasText: text }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Runs a command from the command palette, by its exact title. */
const runCommand = (page, title) => quickInput(page, 'F1', title);

/** Opens a workspace file with Quick Open. */
const openFile = (page, name) => quickInput(page, 'Control+P', name);

main().catch((error) => {
  console.error(`e2e failed: ${error.stack ?? error}`);
  console.log('e2e: 0 passed, 1 failed');
  process.exit(1);
});
