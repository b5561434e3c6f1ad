-- The setup offer when a Claude Code or Codex session is first followed,
-- against the real binary's `compactd setup`.
local H = require('helpers')

describe('the setup offer', function()
  local offer, asked, answer, claude_dir

  before_each(function()
    H.reset()
    offer = require('compactd.offer')
    offer.reset()
    claude_dir = H.dir .. '/claude'
    vim.env.CLAUDE_CONFIG_DIR = claude_dir
    asked = {}
    answer = 'Set up'
    vim.ui.select = function(items, opts, on_choice)
      table.insert(asked, opts.prompt)
      on_choice(answer, vim.fn.index(items, answer) + 1)
    end
  end)

  after_each(function()
    vim.env.CLAUDE_CONFIG_DIR = nil
  end)

  -- The server started: which agents have hooks is its word.
  local function started()
    local compactd = H.setup({ offer_setup = true })
    assert(compactd.start())
    H.wait_for('the server initialized', function()
      return #compactd.agents() > 0
    end)
    return compactd.agents()
  end

  it('asks only for agents with hooks, until set up or declined', function()
    local agents = started()
    local dry = '/x/settings.json would change:\n  add hooks.PreCompact: compactd hook claude-code'
    assert.matches("^Set up Claude Code's hooks", offer.question('claude-code', 'Claude Code', dry, {}, agents))
    assert.matches("^Set up Gemini CLI's hooks", offer.question('gemini', 'Gemini CLI', dry, {}, agents))
    assert.is_nil(offer.question('pi', 'pi', dry, {}, agents))
    assert.is_nil(offer.question('claude-code', 'Claude Code', dry, {}, {}))
    assert.is_nil(offer.question('claude-code', 'Claude Code', dry, { 'claude-code' }, agents))
    assert.is_nil(offer.question('claude-code', 'Claude Code', '/x/settings.json: nothing to change', {}, agents))
  end)

  it('sets Claude Code up when asked to, and asks once', function()
    started()
    offer.offer({ agent = 'claude-code', agentName = 'Claude Code' })
    local settings = claude_dir .. '/settings.json'
    H.wait_for('the settings written', function()
      return vim.fn.filereadable(settings) == 1
    end)
    assert.matches('hook claude%-code', table.concat(vim.fn.readfile(settings), '\n'))
    H.wait_notice('settings.json changed')
    assert.are.equal(1, #asked)
    -- Once per agent; and once set up, a fresh offer finds nothing to ask.
    local decided = {}
    offer.offer({ agent = 'claude-code', agentName = 'Claude Code' }, function(asked_now)
      table.insert(decided, asked_now)
    end)
    offer.reset()
    offer.offer({ agent = 'claude-code', agentName = 'Claude Code' }, function(asked_now)
      table.insert(decided, asked_now)
    end)
    H.wait_for('both offers decided', function()
      return #decided == 2
    end)
    assert.are.same({ false, false }, decided)
    assert.are.equal(1, #asked)
  end)
end)
