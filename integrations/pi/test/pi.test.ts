// The extension in the real pi (the pinned @mariozechner/pi-coding-agent),
// against the scripted OpenAI-compatible model of tests/agents: tool calls
// (read, edit, write, bash) with usage, then a compaction, automatic (print
// mode) or asked for (RPC `compact` with instructions). Each test reads
// pi's own session file, compactd's record of the session, and the shapes
// of the events the extension received.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  compactdView,
  COMPACTD,
  importedView,
  pathWithoutCompactd,
  PI,
  readJsonl,
  Rpc,
  runPi,
  scenario,
  ScriptedModel,
  Scratch,
  section,
  touchedFiles,
  type Json,
} from './support';

const PROMPT = 'edit a.txt and write c.md';
const FINAL_TEXT = 'Done: a.txt edited, c.md written.';
/** pi's compaction settings that make it compact after the scripted session (1,512 tokens > 16,000 − 14,700). */
const COMPACT_AFTER_THE_SESSION = { reserveTokens: 14700, keepRecentTokens: 50 };
/** …and that leave it alone (manual compaction only). */
const NO_AUTO_COMPACTION = { reserveTokens: 1000, keepRecentTokens: 50 };
/** What the scripted model answers pi's own summarization request. */
const PI_OWN_SUMMARY = '## Goal\nEdit a.txt and write c.md.';

before(() => {
  assert.ok(existsSync(PI), `no pi at ${PI}: run npm ci in integrations/pi`);
  assert.ok(existsSync(COMPACTD), `no compactd at ${COMPACTD}: run cargo build (or set COMPACTD_BIN)`);
});

/** A scratch HOME and a scripted model for one test. */
async function setUp(settings: Json): Promise<{ scratch: Scratch; model: ScriptedModel }> {
  const scratch = new Scratch();
  const model = await ScriptedModel.start(scenario('pi-tools.json'), join(scratch.root, 'requests.jsonl'));
  scratch.configure(model.url, settings);
  return { scratch, model };
}

function compactions(file: string): Json[] {
  return readJsonl(file).filter((e) => e.type === 'compaction');
}

/** The message entries of a session file, before its first compaction entry. */
function messageEntries(file: string): Json[] {
  const entries = readJsonl(file);
  const end = entries.findIndex((e) => e.type === 'compaction');
  return entries.slice(0, end < 0 ? undefined : end).filter((e) => e.type === 'message');
}

describe('print mode: pi compacts automatically, compactd writes the compaction', () => {
  let scratch: Scratch;
  let model: ScriptedModel;
  before(async () => ({ scratch, model } = await setUp({ compaction: COMPACT_AFTER_THE_SESSION, compactd: { path: COMPACTD } })));
  after(async () => {
    await model.stop();
    scratch.cleanup();
  });

  test("pi's compaction entry holds compactd's summary, its file sections are the files the session touched, its cut is compactd's", async () => {
    const run = await runPi(['-p', PROMPT], scratch);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), FINAL_TEXT);
    assert.doesNotMatch(run.stderr, /Extension error|compactd/, 'no error and no notice');

    const file = scratch.sessionFile();
    const [entry, ...more] = compactions(file);
    assert.equal(more.length, 0);
    assert.equal(entry.fromHook, true);
    assert.equal(entry.details.engine, 'compactd');
    const entries = messageEntries(file);
    const touched = touchedFiles(entries);
    assert.deepEqual(touched, { read: ['src/b.py'], modified: ['a.txt', 'c.md'] });
    assert.deepEqual(section(entry.summary, 'read-files'), touched.read);
    assert.deepEqual(section(entry.summary, 'modified-files'), touched.modified);
    assert.deepEqual({ read: [...entry.details.readFiles].sort(), modified: [...entry.details.modifiedFiles].sort() }, touched);

    // compactd's own record: the same summary and figures, and its cut is pi's firstKeptEntryId.
    const sessionId = entry.details.compactdSessionId;
    const header = readJsonl(file)[0];
    assert.equal(sessionId, `pi-${header.id}`);
    const view = await compactdView(scratch, sessionId);
    assert.equal(view.compactions.length, 1);
    assert.equal(view.compactions[0].summary, entry.summary);
    assert.equal(view.compactions[0].tokensBefore, entry.tokensBefore);
    assert.equal(view.compactions[0].tokensAfter, entry.details.tokensAfter);
    const kept = entries.slice(entries.findIndex((e) => e.id === entry.firstKeptEntryId));
    assert.ok(kept.length > 0 && kept.length < entries.length, 'the cut is inside the session');
    assert.ok(['user', 'assistant'].includes(kept[0].message.role));
    assert.deepEqual(
      view.messages.filter((m) => m.role !== 'system').map((m) => m.id),
      [view.messages.find((m) => m.id.startsWith('summary-')).id, ...kept.map((e) => e.id)],
      "compactd's history after the compaction is the summary and pi's kept entries, by pi's entry ids",
    );
    assert.equal(view.messageCount, entries.length, 'every message pi recorded reached compactd');

    // pi never asked the model for a summary, and the model refused nothing.
    const requests = model.requests();
    assert.equal(requests.filter((r) => r.compaction).length, 0);
    assert.equal(requests.filter((r) => r.rejected).length, 0);
  });

  test('the messages appended one by one are the conversation compactd imports from the session file', async () => {
    const file = scratch.sessionFile();
    const live = await compactdView(scratch, compactions(file)[0].details.compactdSessionId);
    const imported = await importedView(scratch, file);
    const comparable = (messages: Json[]) =>
      messages
        .filter((m) => m.role !== 'system')
        .map(({ id, role, content, toolCalls, toolCallId, isError }) => ({ id: id.startsWith('summary-') ? 'summary' : id, role, content, toolCalls, toolCallId, isError }));
    assert.deepEqual(comparable(live.messages), comparable(imported));
  });
});

describe('RPC mode: /compact with instructions, /compactd, and the event shapes the extension relies on', () => {
  let scratch: Scratch;
  let model: ScriptedModel;
  let rpc: Rpc;
  before(async () => {
    ({ scratch, model } = await setUp({ compaction: NO_AUTO_COMPACTION, compactd: { path: COMPACTD } }));
    rpc = new Rpc(scratch);
  });
  after(async () => {
    await rpc.close();
    await model.stop();
    scratch.cleanup();
  });

  /** Runs `/compactd` and returns the text it showed (an extension UI notice in RPC mode). */
  async function report(id: string): Promise<string> {
    const from = rpc.events.length;
    await rpc.request({ id, type: 'prompt', message: '/compactd' });
    const shown = await rpc.until((e) => e.type === 'extension_ui_request' && e.method === 'notify' && /^compactd pi-/.test(e.message), from);
    return shown.message;
  }

  test('the session runs, and /compactd shows the meter and what the next compaction would do', async () => {
    await rpc.request({ id: 'p1', type: 'prompt', message: PROMPT });
    await rpc.until((e) => e.type === 'agent_end');
    const text = await report('c1');
    assert.match(text, /^compactd pi-[0-9a-f-]+: [\d.]+k? of 16k tokens \([\d.]+%\), from the provider's usage; .* of them system prompt and tools; pi compacts above 15k/);
    assert.match(text, /Next compaction \(keeping 50 tokens verbatim\): summarizes \d+ messages, keeps \d+ from [0-9a-f]{8}; about [\d.]+k → [\d.]+k? tokens\./);
    assert.match(text, /No compaction yet\./);
    // The footer follows compactd's meter as messages arrive.
    const footer = rpc.events.filter((e) => e.type === 'extension_ui_request' && e.method === 'setStatus' && e.statusKey === 'compactd');
    assert.ok(footer.length >= 2, JSON.stringify(footer));
    for (const e of footer) assert.match(e.statusText, /^compactd [\d.]+k?\/16k \d+%$/);
  });

  test("pi's compact command with instructions records compactd's summary; /compactd then shows it", async () => {
    const response = await rpc.request({ id: 'k1', type: 'compact', customInstructions: 'keep the file names' });
    assert.equal(response.success, true, JSON.stringify(response));
    const [entry] = compactions(scratch.sessionFile());
    assert.equal(entry.fromHook, true);
    assert.equal(response.data.summary, entry.summary);
    const view = await compactdView(scratch, entry.details.compactdSessionId);
    assert.equal(view.compactions.at(-1).summary, entry.summary);
    assert.equal(view.compactions.at(-1).trigger, 'manual');
    assert.deepEqual(scratch.traced('conversation/compact'), [
      { sessionId: entry.details.compactdSessionId, strategy: 'checkpoint', instructions: 'keep the file names', keepRecentTokens: 50 },
    ]);
    assert.deepEqual(section(entry.summary, 'modified-files'), ['a.txt', 'c.md']);

    const text = await report('c2');
    assert.match(text, /Last compaction \(manual, checkpoint, offline\): [\d.]+k → [\d.]+k? tokens, \d+ messages summarized\. Its summary:/);
    assert.ok(text.endsWith(entry.summary), text);
  });

  test("after the compaction pi sends compactd's summary and the messages from compactd's cut", async () => {
    const from = rpc.events.length;
    await rpc.request({ id: 'p2', type: 'prompt', message: 'anything else?' });
    await rpc.until((e) => e.type === 'agent_end', from);
    const request = model.requests().at(-1).body;
    const [entry] = compactions(scratch.sessionFile());
    const first = request.messages.find((m: Json) => m.role === 'user');
    const firstText = typeof first.content === 'string' ? first.content : first.content.map((c: Json) => c.text).join('');
    assert.ok(firstText.includes(entry.summary), firstText);
    const entries = messageEntries(scratch.sessionFile());
    const keptFrom = entries.findIndex((e) => e.id === entry.firstKeptEntryId);
    const callIds = (es: Json[]) => es.flatMap((e) => (e.message.role === 'assistant' ? e.message.content.filter((b: Json) => b.type === 'toolCall').map((b: Json) => b.id) : []));
    const sent = JSON.stringify(request.messages);
    for (const id of callIds(entries.slice(keptFrom))) assert.ok(sent.includes(id), `kept call ${id} is sent`);
    for (const id of callIds(entries.slice(0, keptFrom))) assert.ok(!sent.includes(id), `summarized call ${id} is not sent`);
    assert.equal(model.requests().filter((r) => r.rejected).length, 0);
  });

  test('pi handed the extension the event shapes it relies on', () => {
    const [compact] = scratch.traced('session_before_compact');
    assert.equal(compact.type, 'string');
    assert.equal(compact.customInstructions, 'string');
    assert.equal(compact.signal, 'AbortSignal');
    const p = compact.preparation;
    // Sets of paths (JSON.stringify would show {}); `written` is empty when the write is in the kept part.
    assert.equal(p.fileOps.read, 'Set<string>');
    assert.equal(p.fileOps.edited, 'Set<string>');
    assert.match(p.fileOps.written, /^Set<(string|empty)>$/);
    assert.equal(p.firstKeptEntryId, 'string');
    assert.equal(p.tokensBefore, 'number');
    assert.equal(p.settings.keepRecentTokens, 'number');
    assert.ok(compact.branchEntries.every((e: Json) => e.id === 'string' && e.type === 'string'));

    const ends = scratch.traced('message_end').map((s) => s.message);
    const roles = new Set(ends.map((m) => m.role));
    assert.deepEqual([...roles].sort(), ['string']);
    const assistant = ends.find((m) => Array.isArray(m.content) && m.content.some((b: Json) => b.arguments));
    assert.ok(assistant, 'an assistant message with a tool call');
    assert.deepEqual(assistant.usage && Object.keys(assistant.usage).sort(), ['cacheRead', 'cacheWrite', 'cost', 'input', 'output', 'totalTokens']);
    const call = assistant.content.find((b: Json) => b.arguments);
    assert.deepEqual({ type: call.type, id: call.id, name: call.name }, { type: 'string', id: 'string', name: 'string' });
    const toolResult = ends.find((m) => m.toolCallId);
    assert.deepEqual({ toolCallId: toolResult.toolCallId, toolName: toolResult.toolName, isError: toolResult.isError }, { toolCallId: 'string', toolName: 'string', isError: 'boolean' });

    const [compacted] = scratch.traced('session_compact');
    assert.equal(compacted.fromExtension, 'boolean');
    assert.equal(compacted.compactionEntry.firstKeptEntryId, 'string');
    assert.deepEqual(scratch.traced('notice'), [], 'no notice: nothing failed');
  });
});

describe('without compactd, pi compacts by itself, with a one-line notice', () => {
  let scratch: Scratch;
  let model: ScriptedModel;
  before(async () => ({ scratch, model } = await setUp({ compaction: COMPACT_AFTER_THE_SESSION })));
  after(async () => {
    await model.stop();
    scratch.cleanup();
  });

  test("print mode: pi's own compaction runs and the notice is on stderr", async () => {
    const run = await runPi(['-p', PROMPT], scratch, { PATH: pathWithoutCompactd() });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), FINAL_TEXT);
    const notices = run.stderr.trim().split('\n');
    assert.equal(notices.length, 2, run.stderr);
    assert.match(notices[0], /^compactd: compactd was not found: set compactd\.path \(pi settings\.json\) or put compactd on PATH .*; pi compacts by itself in this session$/);
    assert.match(notices[1], /^compactd unavailable \(compactd was not found: .*\); pi's own compaction runs$/);
    const [entry] = compactions(scratch.sessionFile());
    assert.equal(entry.fromHook, false);
    assert.ok(entry.summary.includes(PI_OWN_SUMMARY), entry.summary);
    assert.equal(model.requests().filter((r) => r.compaction).length, 1, "pi's own summarization request");
  });

  test("RPC mode: the notices reach pi's UI, and pi's compact command still works", async () => {
    const second = new Scratch();
    const rpc = new Rpc(second, { PATH: pathWithoutCompactd() });
    try {
      second.configure(model.url, { compaction: NO_AUTO_COMPACTION });
      await rpc.request({ id: 'p1', type: 'prompt', message: PROMPT });
      await rpc.until((e) => e.type === 'agent_end');
      const response = await rpc.request({ id: 'k1', type: 'compact' });
      assert.equal(response.success, true, JSON.stringify(response));
      const notices = rpc.events.filter((e) => e.type === 'extension_ui_request' && e.method === 'notify').map((e) => [e.notifyType, e.message]);
      assert.equal(notices.length, 2, JSON.stringify(notices));
      assert.equal(notices[0][0], 'warning');
      assert.match(notices[0][1], /^compactd: compactd was not found/);
      assert.match(notices[1][1], /^compactd unavailable \(.*\); pi's own compaction runs$/);
      const [entry] = compactions(second.sessionFile());
      assert.equal(entry.fromHook, false);
      assert.equal(response.data.summary, entry.summary);
    } finally {
      await rpc.close();
      second.cleanup();
    }
  });
});

const NOTHING_ELSE = 'Nothing else: the notes only record passing builds.';
const THAT_IS_ALL = 'That is all.';

describe('a session continued across runs: imported once, then resumed', () => {
  let scratch: Scratch;
  let model: ScriptedModel;
  before(async () => {
    scratch = new Scratch();
    // pi-tools.json and two later prompts, every answer reporting the request's real size (auto usage, over pi's threshold),
    // as a provider does: compactd calibrates its count of pi's system prompt and tools from it.
    const script = JSON.parse(readFileSync(scenario('pi-tools.json'), 'utf8'));
    for (const turn of script.turns) turn.reply.usage = 'auto';
    // Each later prompt reads a long file, so each run leaves something worth summarizing.
    for (const [ask, call, answer] of [['anything else', 'call_notes_1', NOTHING_ELSE], ['last thing', 'call_notes_2', THAT_IS_ALL]]) {
      script.turns.push({ match: { last_user_contains: ask }, reply: { text: 'Checking the notes.', tool_calls: [{ id: call, name: 'read', arguments: { path: 'notes.md' } }], usage: 'auto' } });
      script.turns.push({ match: { tool_result_for: call }, reply: { text: answer, usage: 'auto' } });
    }
    writeFileSync(join(scratch.ws, 'notes.md'), Array.from({ length: 120 }, (_, i) => `- note ${i}: the nightly build ${i} passed after the cache was cleared.`).join('\n'));
    const file = join(scratch.root, 'scenario.json');
    writeFileSync(file, JSON.stringify(script));
    model = await ScriptedModel.start(file, join(scratch.root, 'requests.jsonl'));
  });
  after(async () => {
    await model.stop();
    scratch.cleanup();
  });

  test("pi's own compaction without compactd, then compactd imports the session with it, then resumes it", async () => {
    scratch.configure(model.url, { compaction: COMPACT_AFTER_THE_SESSION });
    const first = await runPi(['-p', PROMPT], scratch, { PATH: pathWithoutCompactd() });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(compactions(scratch.sessionFile())[0].fromHook, false);

    scratch.configure(model.url, { compaction: COMPACT_AFTER_THE_SESSION, compactd: { path: COMPACTD } });
    const second = await runPi(['-c', '-p', 'anything else?'], scratch);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout.trim(), NOTHING_ELSE);
    const third = await runPi(['-c', '-p', 'one last thing'], scratch);
    assert.equal(third.code, 0, third.stderr);
    assert.equal(third.stdout.trim(), THAT_IS_ALL);
    assert.doesNotMatch(second.stderr + third.stderr, /Extension error|compactd/);

    const file = scratch.sessionFile();
    const [own, ...ours] = compactions(file);
    assert.equal(own.fromHook, false);
    assert.equal(ours.length, 2);
    const sessionId = `pi-${readJsonl(file)[0].id}`;
    for (const entry of ours) {
      assert.equal(entry.fromHook, true);
      assert.equal(entry.details.compactdSessionId, sessionId, 'the same compactd session both times: resumed, not imported again');
      // The ledger holds the files of the whole session, from before the import too.
      assert.deepEqual(section(entry.summary, 'read-files'), ['notes.md', 'src/b.py']);
      assert.deepEqual(section(entry.summary, 'modified-files'), ['a.txt', 'c.md']);
    }
    const logs = readdirSync(join(scratch.data, 'compactd', 'sessions')).filter((f) => f.endsWith('.jsonl'));
    assert.deepEqual(logs, [`${sessionId}.jsonl`]);
    const view = await compactdView(scratch, sessionId);
    assert.deepEqual(view.compactions.map((c) => c.summarizer), ['pi (imported)', 'offline', 'offline']);
    assert.equal(view.compactions[0].summary, own.summary, "pi's own compaction, imported as it was");
    assert.deepEqual(view.compactions.slice(1).map((c) => c.summary), ours.map((e) => e.summary));
    assert.equal(view.messageCount, readJsonl(file).filter((e) => e.type === 'message').length);
  });
});
