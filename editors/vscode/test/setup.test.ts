import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { AgentInfo } from 'compactd-client';
import { runSetup, setupQuestion } from '../src/core/setup';
import { serverBinary, startServer } from './support/server';

test('the setup offer asks once per agent that has hooks, until it is set up or declined', async () => {
  // The agents as the real server reports them: which have hooks is its word.
  const server = await startServer();
  const agents: AgentInfo[] = server.initializeResult.capabilities.experimental.compactd.agents;
  await server.close();
  const home = mkdtempSync(join(tmpdir(), 'compactd-setup-'));
  const previous = process.env.HOME;
  process.env.HOME = home;
  try {
    const before = await runSetup(serverBinary(), 'claude-code', true);
    assert.match(before, /would change/);
    assert.match(setupQuestion('claude-code', 'Claude Code', before, [], agents) ?? '', /^Set up Claude Code's hooks/);
    assert.match(setupQuestion('gemini', 'Gemini CLI', before, [], agents) ?? '', /^Set up Gemini CLI's hooks/);
    assert.equal(setupQuestion('claude-code', 'Claude Code', before, ['claude-code'], agents), undefined, 'declined for good');
    assert.equal(setupQuestion('pi', 'pi', before, [], agents), undefined, 'pi has its extension instead');
    assert.equal(setupQuestion('claude-code', 'Claude Code', before, [], undefined), undefined, 'no server, no offer');
    await runSetup(serverBinary(), 'claude-code', false);
    const after = await runSetup(serverBinary(), 'claude-code', true);
    assert.equal(setupQuestion('claude-code', 'Claude Code', after, [], agents), undefined, 'already set up');
  } finally {
    process.env.HOME = previous;
  }
});
