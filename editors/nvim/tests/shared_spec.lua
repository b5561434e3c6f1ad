local H = require('helpers')

-- A shared compactd (`compactd serve --listen`), and a test agent driving
-- it over its own connection (through `compactd connect`, as any stdio
-- client attaches), while this Neovim follows the agent's session.

local function start_shared()
  local discovery = H.dir .. '/run/server.json'
  vim.fn.writefile({ ('dataDir = %q'):format(H.dir .. '/shared-sessions') }, H.dir .. '/compactd.toml')
  local lines = {}
  local proc = vim.system(
    { H.bin, '--no-user-config', 'serve', '--listen', '127.0.0.1:0', '--discovery-file', discovery },
    {
      cwd = H.dir,
      env = { COMPACTD_LOG = 'warn' },
      stdout = function(_, data)
        if data then
          table.insert(lines, data)
        end
      end,
    }
  )
  H.wait_for('the shared compactd to print its address', function()
    return table.concat(lines):find('discovery file:', 1, true) ~= nil
  end)
  local url = table.concat(lines):match('compactd listening on (ws://%S+)')
  return { proc = proc, discovery = discovery, url = url }
end

-- The agent: its own process and connection, answering nothing but what
-- its requests get.
local function start_agent(discovery)
  local agent = { notifications = {} }
  agent.rpc = vim.lsp.rpc.start({ H.bin, 'connect', '--discovery-file', discovery }, {
    notification = function(method, params)
      table.insert(agent.notifications, { method = method, params = params })
    end,
    server_request = function()
      return vim.NIL
    end,
    on_exit = function() end,
    on_error = function() end,
  })
  function agent.request(method, params)
    return H.ok(method, function(cb)
      agent.rpc.request(method, params, cb)
    end)
  end
  agent.request('initialize', { processId = vim.NIL, capabilities = vim.empty_dict() })
  return agent
end

local function turn(input)
  return {
    { role = 'user', content = 'Summarize the design.' },
    { role = 'assistant', content = 'Done.', usage = { input = input, output = 400 } },
  }
end

describe('a shared compactd', function()
  before_each(H.reset)

  it("shows the meter and compactions of the session an agent drives, attached with connect = 'auto'", function()
    local shared = start_shared()
    local agent = start_agent(shared.discovery)
    local compactd = H.setup({ connect = 'auto', cmd_env = { COMPACTD_DISCOVERY_FILE = shared.discovery } })
    local followed = H.ok('conversation/subscribe', function(cb)
      compactd.subscribe({ sessionId = 'agent-1' }, cb)
    end)
    assert.are.equal(shared.url, compactd.attached())
    assert.is_false(followed.open)
    assert.are.equal('agent-1', compactd.session())
    assert.are.equal('', compactd.statusline())

    agent.request('conversation/open', { sessionId = 'agent-1', contextWindow = 200000 })
    local appended = agent.request('conversation/append', { sessionId = 'agent-1', messages = turn(90000) })
    assert.are.equal(90400, appended.meter.contextTokens)
    H.wait_for("the agent's meter in the statusline", function()
      return compactd.statusline() == '90.4k/200k 45%'
    end)

    local compacted = H.capture_event('CompactdCompacted')
    agent.request('conversation/append', { sessionId = 'agent-1', messages = turn(91000) })
    local result = agent.request('conversation/compact', { sessionId = 'agent-1', keepRecentTokens = 10 })
    assert.is_true(result.compacted)
    H.wait_for("the agent's compaction", function()
      return compacted.data ~= nil
    end)
    assert.are.equal('agent-1', compacted.data.sessionId)
    assert.are.equal(result.tokensAfter, compacted.data.tokensAfter)
    assert.are.equal(result.summary, compactd.last_compaction().summary)
    H.wait_for('the meter after the compaction', function()
      return compactd.meter().contextTokens == result.tokensAfter
    end)

    agent.rpc.terminate()
    shared.proc:kill('sigterm')
    local exit = shared.proc:wait(H.PATIENCE_MS)
    assert.are.equal(0, exit.code)
    assert.are.equal(0, vim.fn.filereadable(shared.discovery))
  end)

  it("starts its own compactd when 'auto' finds no shared one", function()
    local compactd = H.setup({ connect = 'auto', cmd_env = { COMPACTD_DISCOVERY_FILE = H.dir .. '/none.json' } })
    local opened = H.open({ contextWindow = 200000 })
    assert.is_nil(compactd.attached())
    assert.are.equal(opened.sessionId, compactd.session())
    -- Its own server took the options: the data dir is this test's.
    assert.are.equal(1, vim.fn.filereadable(H.dir .. '/sessions/' .. opened.sessionId .. '.jsonl'))
  end)

  it('refuses a connect value that is neither auto nor a ws:// URL', function()
    local ok, err = pcall(H.setup, { connect = 'http://127.0.0.1:1/' })
    assert.is_false(ok)
    assert.matches("`connect` must be 'auto' or a ws:// URL", err)
  end)
end)
