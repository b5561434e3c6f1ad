import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentSessionItems, branchItems, fileItems, sessionItems } from '../src/core/pickers';
import { agentList } from '../src/core/follow';
import type { FileInfo, Message } from 'compactd-client';

test('branchItems: newest first, no system prompt or summary, tool names shown', () => {
  const messages: Message[] = [
    { id: 'system', role: 'system', content: 'You are…' },
    { id: 'summary-3f2a', role: 'user', content: 'The earlier part…' },
    { id: 'm2', role: 'assistant', content: 'Editing.', toolCalls: [{ id: 'c1', name: 'edit', arguments: {} }] },
    { id: 'm3', role: 'tool', toolCallId: 'c1', content: '' },
    { id: 'm4', role: 'user', content: `Now run the tests.\nAll of them.${'x'.repeat(100)}` },
  ];
  const items = branchItems(messages);
  assert.deepEqual(items.map((i) => i.value), ['m4', 'm3', 'm2']);
  assert.equal(items[0].label, 'user: Now run the tests.');
  assert.equal(items[1].label, 'tool: (empty)');
  assert.equal(items[2].label, 'assistant: Editing. [edit]');
});

test('fileItems: changed files first, then by path', () => {
  const file = (displayPath: string, status: FileInfo['status']): FileInfo => ({
    path: `/w/${displayPath}`, displayPath, status, firstOp: 'read', lastOp: status === 'read' ? 'read' : 'modify',
    reads: 1, modifications: status === 'read' ? 0 : 1, origins: ['tool'], generation: 0, watched: true,
  });
  const items = fileItems([file('b.rs', 'read'), file('a.rs', 'read'), file('z.rs', 'modified'), file('n.rs', 'created')]);
  assert.deepEqual(items.map((i) => i.value.displayPath), ['z.rs', 'n.rs', 'a.rs', 'b.rs']);
  assert.equal(items[0].label, '$(edit) z.rs');
  assert.equal(items[0].detail, '1 reads, 1 modifications · tool');
});

test('sessionItems marks the shown session', () => {
  const meter = { contextTokens: 90_400, contextWindow: 200_000, percent: 45.2, autoCompactAt: 1, source: 'usage' as const, overheadTokens: 0 };
  const items = sessionItems([{ sessionId: 'a', meter, updatedAt: 2 }, { sessionId: 'b', meter, updatedAt: 1 }], 'b');
  assert.equal(items[0].description, '90.4k/200k (45%)');
  assert.equal(items[1].description, '90.4k/200k (45%) · shown');
});

test('agentSessionItems: the agent and the first request, when and how big, the transcript', () => {
  const now = Date.UTC(2026, 10, 22, 12);
  const items = agentSessionItems(
    [
      { agent: 'claude-code', agentName: 'Claude Code', path: '/h/.claude/projects/-w/a.jsonl', title: 'edit a.txt', modified: now - 3 * 60_000, size: 4_608, sessionId: 'follow-claude-code-a' },
      { agent: 'codex', agentName: 'Codex', path: '/h/.codex/sessions/2026/11/22/rollout-b.jsonl', modified: now - 3 * 3_600_000, size: 900 },
      { agent: 'pi', agentName: 'pi', path: '/h/.pi/agent/sessions/--w--/c.jsonl', title: '  ', modified: now - 30_000, size: 3 * 1024 * 1024 },
    ],
    now,
  );
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.detail]),
    [
      ['Claude Code: edit a.txt', '3 min ago · 4.5 KB · followed', '/h/.claude/projects/-w/a.jsonl'],
      ['Codex: (no request yet)', '3 h ago · 900 B', '/h/.codex/sessions/2026/11/22/rollout-b.jsonl'],
      ['pi: (no request yet)', 'just now · 3.0 MB', '/h/.pi/agent/sessions/--w--/c.jsonl'],
    ],
  );
});

test('agentList: the agents the server reported, as people know them', () => {
  const supports = { setup: true, hooks: false, statusLine: false };
  const agent = (name: 'claude-code' | 'codex' | 'pi', displayName: string) => ({ name, displayName, supports });
  assert.equal(agentList([agent('claude-code', 'Claude Code'), agent('codex', 'Codex'), agent('pi', 'pi')]), 'Claude Code, Codex or pi');
  assert.equal(agentList([agent('pi', 'pi')]), 'pi');
  assert.equal(agentList(undefined), 'agent', 'an older server reports none');
});
