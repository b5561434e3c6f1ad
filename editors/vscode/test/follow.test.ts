// Following an agent against the real binary, as the extension does it:
// `compactd.follow` left at its default (`auto`), a Claude Code transcript
// written line by line into the server's HOME as Claude Code writes it, and
// the status bar's text, tooltip, pickers and handoff built from what the
// server sends.

import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DidCompactNotification, DidFollowNotification, TokensNotification } from 'compactd-client';
import { followedTooltip, meterText } from '../src/core/meter';
import { agentSessionItems, fileItems } from '../src/core/pickers';
import { SessionTracker } from '../src/core/sessions';
import { serverConfiguration } from '../src/core/settings';
import { compactedMessage } from '../src/core/summary';
import { startServer, type Event, type TestServer } from './support/server';

/** Claude Code's folder for a workspace: its real path, every character but [A-Za-z0-9] as '-'. */
export function claudeProjectDir(home: string, workspace: string): string {
  return join(home, '.claude/projects', realpathSync(workspace).replace(/[^a-zA-Z0-9]/g, '-'));
}

const line = (value: object) => `${JSON.stringify(value)}\n`;

/** Claude Code's lines: a prompt, one line of a response (with the usage of its request), a tool result. */
export const claude = {
  prompt: (uuid: string, text: string) => line({ type: 'user', uuid, sessionId: 's1', message: { role: 'user', content: text } }),
  response: (uuid: string, messageId: string, block: object, usage: [number, number, number, number]) =>
    line({
      type: 'assistant', uuid, sessionId: 's1',
      message: {
        id: messageId, role: 'assistant', model: 'claude-sonnet-4-5', content: [block], stop_reason: 'tool_use',
        usage: { input_tokens: usage[0], cache_creation_input_tokens: usage[1], cache_read_input_tokens: usage[2], output_tokens: usage[3] },
      },
    }),
  result: (uuid: string, call: string, content: string) =>
    line({ type: 'user', uuid, sessionId: 's1', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: call, content }] } }),
  compaction: (preTokens: number, summary: string) =>
    line({ type: 'system', subtype: 'compact_boundary', uuid: 'b1', parentUuid: null, sessionId: 's1', content: 'Conversation compacted', compactMetadata: { trigger: 'auto', preTokens } }) +
    line({ type: 'user', uuid: 'cs', parentUuid: 'b1', sessionId: 's1', isCompactSummary: true, message: { role: 'user', content: summary } }),
};

const total = (usage: number[]) => usage.reduce((a, b) => a + b, 0);

describe('following Claude Code with the extension defaults', () => {
  let server: TestServer;
  let workspace: string;
  let transcript: string;
  const tracker = new SessionTracker();
  const compactions: DidCompactNotification[] = [];
  const isMeter = (contextTokens: number) => (e: Event) =>
    e.kind === 'notification' && e.method === 'conversation/tokens' && e.params.contextTokens === contextTokens;
  const isDidFollow = (path: string) => (e: Event) => e.kind === 'notification' && e.method === 'conversation/didFollow' && e.params.path === path;

  before(async () => {
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'compactd-vscode-ws-')));
    writeFileSync(join(workspace, 'a.txt'), 'alpha\n');
    // Nothing set: the extension's defaults, `follow: "auto"` among them.
    server = await startServer({ workspace, initializationOptions: serverConfiguration(() => undefined) });
    server.onNotification((method, params) => {
      if (method === 'conversation/tokens') tracker.onTokens(params as TokensNotification);
      if (method === 'conversation/didCompact') compactions.push(params), tracker.onDidCompact(params as DidCompactNotification);
      if (method === 'conversation/didFollow') tracker.onDidFollow(params as DidFollowNotification);
    });
    const dir = claudeProjectDir(server.home, workspace);
    mkdirSync(dir, { recursive: true });
    transcript = join(dir, '5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl');
  });
  after(async () => {
    await server.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  test('a session that starts is followed, and its meter grows with the usage Claude Code writes', async () => {
    appendFileSync(transcript, claude.prompt('u1', 'edit a.txt and write c.md'));
    await server.waitFor('didFollow', isDidFollow(transcript));
    const shown = tracker.active;
    assert.equal(shown?.followed?.agentName, 'Claude Code');
    assert.equal(shown?.followed?.path, transcript);
    assert.equal(shown?.followed?.explicit, false);
    // No model yet: Claude Code's default window, as its status line says.
    assert.match(meterText(shown!.meter, shown!.followed!.agentName), /^Claude Code \d+\/200k \(0%\)$/);

    const first = [3, 1500, 12_000, 96];
    const edit = { type: 'tool_use', id: 't1', name: 'Edit', input: { file_path: join(workspace, 'a.txt'), old_string: 'alpha', new_string: 'beta' } };
    appendFileSync(transcript, claude.response('a1', 'msg_1', edit, first as any));
    await server.waitFor('the first usage', isMeter(total(first)));
    assert.equal(meterText(tracker.active!.meter, tracker.active!.followed!.agentName), 'Claude Code 13.6k/200k (7%)');

    writeFileSync(join(workspace, 'a.txt'), 'beta\n');
    appendFileSync(transcript, claude.result('r1', 't1', 'The file a.txt has been updated.'));
    const second = [5, 4000, 86_000, 400];
    appendFileSync(transcript, claude.response('a2', 'msg_2', { type: 'text', text: 'Done.' }, second as any));
    await server.waitFor('the second usage', isMeter(total(second)));
    assert.equal(meterText(tracker.active!.meter, 'Claude Code'), 'Claude Code 90.4k/200k (45%)');

    const tip = followedTooltip(tracker.active!.meter, tracker.active!.followed!, { now: Date.now() });
    assert.match(tip, new RegExp(`Transcript: \`${transcript.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\``));
    assert.match(tip, /Context: 90,405 \/ 200,000 tokens \(45\.2%\)/);
    assert.match(tip, /Claude Code auto-compacts at ~177,000 tokens \(estimate: Claude Code: window 200000/);
    assert.match(tip, /Last compaction: none yet/);
  });

  test('Show Tracked Files lists what the transcript\'s tool calls touched', async () => {
    const { files } = await server.requests.filesList({ sessionId: tracker.active!.sessionId });
    assert.deepEqual(fileItems(files).map((f) => [f.value.displayPath, f.description]), [['a.txt', 'modified']]);
  });

  test('Write Handoff answers a prompt for a fresh session, and the followed session stays as it was', async () => {
    const id = tracker.active!.sessionId;
    const before = await server.requests.history({ sessionId: id });
    const result = await server.requests.compact({ sessionId: id, strategy: 'handoff', goal: 'write c.md' });
    assert.match(result.handoffPrompt ?? '', /^This session continues earlier work in another session\./);
    assert.match(result.handoffPrompt ?? '', /write c\.md/);
    assert.deepEqual(await server.requests.history({ sessionId: id }), before);
  });

  test('Claude Code compacting: the meter drops and the tooltip names its compaction', async () => {
    const id = tracker.active!.sessionId;
    const seen = server.events.length;
    appendFileSync(transcript, claude.compaction(90_405, 'Summary: a.txt edited to beta.'));
    await server.waitFor('didCompact', (e) => e.kind === 'notification' && e.method === 'conversation/didCompact');
    const compacted = compactions[0];
    assert.equal(compacted.summarizer, 'claude-code (imported)');
    assert.match(compactedMessage(compacted, 'Claude Code'), /^Claude Code compacted its conversation: \d+ messages → summary; tokens 90405 → \d+(; its summary dropped .+)?$/);
    const dropped = (e: Event) => e.kind === 'notification' && e.method === 'conversation/tokens' && e.params.contextTokens < 90_405;
    await server.waitFor('the meter after it', (e) => server.events.indexOf(e) >= seen && dropped(e));
    const state = tracker.get(id)!;
    assert.ok(state.meter.contextTokens < 90_405, `${state.meter.contextTokens}`);
    assert.equal(state.meter.source, 'estimate');
    const tip = followedTooltip(state.meter, state.followed!, { lastCompaction: state.lastCompaction, now: Date.now() });
    assert.match(tip, /Last compaction: 90,405 → [\d,]+ tokens, \d+ messages summarized \(threshold, claude-code \(imported\), just now\)/);
  });

  test('a newer session moves auto-follow to it; Follow Agent Session… lists both and follows the older again', async () => {
    const old = tracker.active!.sessionId;
    const newer = join(claudeProjectDir(server.home, workspace), '9a6c1b7e-0c1d-4b1e-9f5a-2f3e4d5c6b7a.jsonl');
    appendFileSync(newer, claude.prompt('n1', 'now write the docs'));
    const moved = await server.waitFor('didFollow of the newer session', isDidFollow(newer));
    assert.equal(moved.kind === 'notification' && moved.params.previousSessionId, old);
    assert.equal(tracker.active?.followed?.path, newer);
    assert.equal(tracker.get(old), undefined, 'the server closed the one auto-follow left');

    const { sessions } = await server.requests.listAgentSessions({});
    const items = agentSessionItems(sessions, Date.now());
    assert.deepEqual(
      items.map((i) => [i.label, i.detail, i.description?.endsWith(' · followed')]),
      [
        ['Claude Code: now write the docs', newer, true],
        ['Claude Code: edit a.txt and write c.md', transcript, false],
      ],
    );
    const followed = await server.requests.follow({ path: items[1].value.path });
    tracker.onFollow(followed, true);
    tracker.select(followed.sessionId);
    assert.equal(followed.sessionId, old);
    assert.equal(tracker.active?.followed?.explicit, true);
    assert.match(meterText(tracker.active!.meter, followed.agentName), /^Claude Code /);
  });
});
