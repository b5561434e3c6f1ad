-- :CompactFollow, :CompactUnfollow and auto-follow against the real binary,
-- with a Claude Code transcript written line by line into a throwaway
-- CLAUDE_CONFIG_DIR as Claude Code writes it (the line shapes of
-- tests/it/follow.rs).
local H = require('helpers')

-- Usage of the scripted responses: input, cache write, cache read, output.
local FIRST = { 3, 1500, 12000, 96 }
local SECOND = { 5, 400, 13500, 80 }
local THIRD = { 5, 300, 13900, 70 }

local function total(usage)
  return usage[1] + usage[2] + usage[3] + usage[4]
end

local function line(value)
  return vim.json.encode(value) .. '\n'
end

local function prompt(uuid, text)
  return line({
    type = 'user',
    uuid = uuid,
    sessionId = 's1',
    isSidechain = false,
    message = { role = 'user', content = text },
  })
end

local function response(uuid, message_id, block, usage)
  return line({
    type = 'assistant',
    uuid = uuid,
    sessionId = 's1',
    isSidechain = false,
    message = {
      id = message_id,
      role = 'assistant',
      model = 'claude-sonnet-4-5',
      content = { block },
      stop_reason = 'tool_use',
      usage = {
        input_tokens = usage[1],
        cache_creation_input_tokens = usage[2],
        cache_read_input_tokens = usage[3],
        output_tokens = usage[4],
      },
    },
  })
end

local function tool_use(id, name, input)
  return { type = 'tool_use', id = id, name = name, input = input }
end

local function tool_result(uuid, call, content)
  return line({
    type = 'user',
    uuid = uuid,
    sessionId = 's1',
    message = { role = 'user', content = { { type = 'tool_result', tool_use_id = call, content = content } } },
  })
end

-- Appends with one write, as Claude Code's appendFileSync does.
local function write(path, text)
  local file = assert(io.open(path, 'a'))
  file:write(text)
  file:close()
end

-- The workspace (H.dir, as its real path: Claude Code's folder name is
-- made from it) and Claude Code's folder for it under the throwaway
-- CLAUDE_CONFIG_DIR.
local function claude_home()
  local root = vim.uv.fs_realpath(H.dir)
  local config_dir = root .. '/claude'
  local projects = config_dir .. '/projects/' .. root:gsub('[^%w]', '-')
  vim.fn.mkdir(projects, 'p')
  return root, config_dir, projects
end

local function setup(config_dir, opts)
  return H.setup(vim.tbl_extend('force', { cmd_env = { CLAUDE_CONFIG_DIR = config_dir } }, opts or {}))
end

-- A Claude Code session in `root` that read a.txt, ran ls and is editing
-- a.txt (the edit's result not written yet): the meter is SECOND's usage.
local function started_session(transcript, root)
  local a = root .. '/a.txt'
  vim.fn.writefile({ 'alpha' }, a)
  write(
    transcript,
    prompt('u1', 'edit a.txt and write c.md')
      .. response('a1', 'msg_1', tool_use('t1', 'Read', { file_path = a }), FIRST)
      .. response('a2', 'msg_1', tool_use('t2', 'Bash', { command = 'ls' }), FIRST)
      .. tool_result('u2', 't1', 'alpha')
      .. tool_result('u3', 't2', 'a.txt')
      .. response('a3', 'msg_2', tool_use('t3', 'Edit', { file_path = a, old_string = 'a', new_string = 'A' }), SECOND)
  )
  return a
end

local function wait_meter(compactd, what, predicate)
  H.wait_for(what, function()
    local meter = compactd.meter()
    return meter ~= nil and predicate(meter.contextTokens)
  end)
end

describe(':CompactFollow', function()
  before_each(H.reset)

  it("shows an agent's meter by name, follows its appends, lists its files and unfollows", function()
    local root, config_dir, projects = claude_home()
    local transcript = projects .. '/5217d838-5181-433d-a8b8-c96b9ad7bfb3.jsonl'
    local a = started_session(transcript, root)
    local compactd = setup(config_dir, { follow = 'off' })
    local own = H.open({ contextWindow = 200000 }).sessionId
    assert.matches('^%d+/200k 0%%$', compactd.statusline())

    vim.cmd('CompactFollow claude-code')
    H.wait_notice('following Claude Code: ' .. transcript)
    assert.matches('^follow%-claude%-code%-5217d838', compactd.session())
    local followed = compactd.followed()
    assert.are.same({ 'claude-code', 'Claude Code', transcript, true }, {
      followed.agent,
      followed.agentName,
      followed.path,
      followed.explicit,
    })
    -- The response's usage, exactly; Claude Code's own point for a 200k model.
    assert.are.equal(total(SECOND), compactd.meter().contextTokens)
    assert.are.equal('Claude Code 14k/200k 7% · auto-compact ~177k', compactd.statusline())
    vim.cmd('checkhealth compactd')
    local report = H.buffer_text(vim.api.nvim_get_current_buf())
    assert.is_truthy(report:find('following Claude Code (:CompactFollow): ' .. transcript, 1, true), report)
    assert.is_truthy(report:find('follow = off', 1, true), report)
    vim.cmd('bwipeout')

    -- The edit's result and the next response: the meter moves to its usage.
    local c = root .. '/c.md'
    write(
      transcript,
      tool_result('u4', 't3', 'edited')
        .. response('a4', 'msg_3', tool_use('t4', 'Write', { file_path = c, content = '# c\n' }), THIRD)
    )
    wait_meter(compactd, "the next response's usage", function(tokens)
      return tokens == total(THIRD)
    end)
    assert.are.equal('Claude Code 14.3k/200k 7% · auto-compact ~177k', compactd.statusline())
    write(transcript, tool_result('u5', 't4', 'written'))
    wait_meter(compactd, 'the write result counted', function(tokens)
      return tokens > total(THIRD)
    end)

    -- Exactly the files the tool calls touched (Bash touches none; Write
    -- counts as a modification in the fileTools mapping).
    vim.cmd('CompactFiles')
    H.wait_for('the quickfix list', function()
      return #vim.fn.getqflist() > 0
    end)
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    assert.are.equal(('compactd files: Claude Code (%s)'):format(transcript), qf.title)
    local listed = {}
    for _, item in ipairs(qf.items) do
      listed[vim.api.nvim_buf_get_name(item.bufnr)] = item.text:match('^(%a+):')
    end
    assert.are.same({ [a] = 'modified', [c] = 'modified' }, listed)

    vim.cmd('CompactUnfollow')
    H.wait_notice('stopped following Claude Code: ' .. transcript)
    assert.are.equal(own, compactd.session())
    assert.is_nil(compactd.followed())
    assert.matches('^%d+/200k 0%%$', compactd.statusline())
    -- The server closed it: the list no longer names a session following it.
    local sessions = H.ok('listAgentSessions', function(cb)
      compactd.agent_sessions({}, cb)
    end).sessions
    assert.are.equal(transcript, sessions[1].path)
    assert.is_nil(sessions[1].sessionId)
  end)

  it("without an argument picks from the workspace's agent sessions, newest first", function()
    local root, config_dir, projects = claude_home()
    local older = projects .. '/11111111-1111-4111-8111-111111111111.jsonl'
    write(older, prompt('u1', 'an older request'))
    vim.uv.fs_utime(older, os.time() - 3600, os.time() - 3600)
    local newer = projects .. '/22222222-2222-4222-8222-222222222222.jsonl'
    started_session(newer, root)
    local compactd = setup(config_dir, { follow = 'off' })
    local offered
    vim.ui.select = function(items, opts, on_choice)
      offered = vim.tbl_map(opts.format_item, items)
      on_choice(items[1], 1)
    end

    vim.cmd('CompactFollow')
    H.wait_notice('following Claude Code: ' .. newer)
    assert.are.equal(2, #offered)
    assert.matches('^Claude Code  edit a%.txt and write c%.md  %d+%-%d+%-%d+ %d+:%d+$', offered[1])
    assert.matches('^Claude Code  an older request  ', offered[2])
    assert.are.equal(newer, compactd.followed().path)
    assert.are.equal(total(SECOND), compactd.meter().contextTokens)
    assert.matches('^Claude Code 14k/200k', compactd.statusline())
  end)

  it('completes the agents the server names and reports an agent without a session', function()
    local _, config_dir = claude_home()
    local compactd = setup(config_dir, { follow = 'off' })
    assert(compactd.start())
    H.wait_for('the agents from initialize', function()
      return #compactd.agents() > 0
    end)
    assert.are.same(
      { 'Claude Code', 'Codex', 'pi', 'Gemini CLI', 'opencode' },
      vim.tbl_map(function(agent)
        return agent.displayName
      end, compactd.agents())
    )
    -- The agents, then transcript paths (the workspace holds claude/).
    assert.are.same({ 'claude-code', 'codex', 'claude/' }, vim.fn.getcompletion('CompactFollow c', 'cmdline'))
    assert.are.same({ 'pi' }, vim.fn.getcompletion('CompactFollow p', 'cmdline'))
    vim.cmd('CompactFollow')
    H.wait_notice('no Claude Code, Codex, pi, Gemini CLI or opencode session for ')
    vim.cmd('CompactFollow claude-code')
    local notice = H.wait_notice('conversation/follow: ')
    assert.are.equal(vim.log.levels.ERROR, notice.level)
    assert.matches(config_dir, notice.message, 1, true)
    H.notices = {}
    -- A name the server does not know: its error lists the ones it does.
    vim.cmd('CompactFollow nosuch')
    notice = H.wait_notice('unknown agent `nosuch`')
    assert.is_truthy(notice.message:find('claude-code, codex, pi', 1, true), notice.message)
    H.notices = {}
    local own = H.open({}).sessionId
    vim.cmd('CompactUnfollow')
    H.wait_notice(('session %s follows no agent'):format(own))
  end)

  it('switches to what the server follows by itself (follow = "auto", the default)', function()
    local root, config_dir, projects = claude_home()
    local first = projects .. '/33333333-3333-4333-8333-333333333333.jsonl'
    started_session(first, root)
    local compactd = setup(config_dir)
    local announced = H.capture_event('CompactdFollowed')
    assert(compactd.start())
    H.wait_for('conversation/didFollow', function()
      return compactd.followed() ~= nil
    end)
    assert.are.equal(first, compactd.followed().path)
    assert.is_false(compactd.followed().explicit)
    assert.are.equal(compactd.session(), announced.data.sessionId)
    assert.are.equal('Claude Code 14k/200k 7% · auto-compact ~177k', compactd.statusline())

    -- A new Claude Code session starts in the workspace: auto-follow moves on.
    local previous = compactd.session()
    local second = projects .. '/44444444-4444-4444-8444-444444444444.jsonl'
    write(second, prompt('v1', 'a new task') .. response('b1', 'msg_9', { type = 'text', text = 'On it.' }, THIRD))
    H.wait_for('the switch to the new session', function()
      local now = compactd.followed()
      return now ~= nil and now.path == second
    end)
    assert.are_not.equal(previous, compactd.session())
    assert.is_nil(compactd.meter(previous))
    assert.are.equal(total(THIRD), compactd.meter().contextTokens)
    assert.are.equal('Claude Code 14.3k/200k 7% · auto-compact ~177k', compactd.statusline())
  end)
end)
