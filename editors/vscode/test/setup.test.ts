import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runSetup, setupQuestion } from '../src/core/setup';
import { serverBinary } from './support/server';

test('the setup offer asks once per agent that has hooks, until it is set up or declined', async () => {
  const home = mkdtempSync(join(tmpdir(), 'compactd-setup-'));
  const previous = process.env.HOME;
  process.env.HOME = home;
  try {
    const before = await runSetup(serverBinary(), 'claude-code', true);
    assert.match(before, /would change/);
    assert.match(setupQuestion('claude-code', 'Claude Code', before, []) ?? '', /^Set up Claude Code's hooks/);
    assert.equal(setupQuestion('claude-code', 'Claude Code', before, ['claude-code']), undefined, 'declined for good');
    assert.equal(setupQuestion('pi', 'pi', before, []), undefined, 'pi has its extension instead');
    await runSetup(serverBinary(), 'claude-code', false);
    const after = await runSetup(serverBinary(), 'claude-code', true);
    assert.equal(setupQuestion('claude-code', 'Claude Code', after, []), undefined, 'already set up');
  } finally {
    process.env.HOME = previous;
  }
});
