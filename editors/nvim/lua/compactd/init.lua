-- compactd for Neovim: setup() and the Lua API for agent plugins.
--
-- Every API function takes the protocol's params table (see
-- docs/protocol.md; `sessionId` defaults to the current session) and an
-- optional `callback(err, result)`, called exactly once; without a callback
-- an error is shown with vim.notify. Each returns the request id, or nil when
-- the server could not be reached (the callback has the reason).
local client = require('compactd.client')
local config = require('compactd.config')
local state = require('compactd.state')
local statusline = require('compactd.statusline')

local M = {}

local group = vim.api.nvim_create_augroup('compactd', { clear = true })

--- Configures the plugin. Plugin keys are listed in config.plugin_keys; every
--- other key is compactd configuration, sent as `initializationOptions`.
function M.setup(opts)
  if not config.supported(vim.version()) then
    vim.notify(config.requirement, vim.log.levels.ERROR)
    return
  end
  config.set(opts)
  -- New options deserve a new try at starting the server.
  state.rejected = nil
  state.last_error = nil
  statusline.define_highlights()
  vim.api.nvim_clear_autocmds({ group = group })
  vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = statusline.define_highlights })
  if config.get().autostart then
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
      group = group,
      callback = function(args)
        client.attach(args.buf)
      end,
    })
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) then
        client.attach(bufnr)
      end
    end
  end
end

--- Starts the server if needed; returns the client, or nil and the reason.
function M.start()
  return client.start()
end

function M.stop()
  client.stop()
end

--- The running vim.lsp client, or nil.
function M.client()
  return client.get()
end

--- The agents the running server follows (`{name, displayName}`), as
--- `initialize` reported them; none before it started.
function M.agents()
  local running = client.get()
  local capabilities = running and running.server_capabilities or {}
  local own = (capabilities.experimental or {}).compactd or {}
  return own.agents or {}
end

--- The current session id: the one last opened, or set with `use`.
function M.session()
  return state.current
end

function M.use(session_id)
  state.current = session_id
  if not (state.sessions[session_id] or {}).followed then
    state.own = session_id
  end
  pcall(vim.cmd.redrawstatus, { bang = true })
end

--- The last `conversation/tokens` meter of a session (default: current).
function M.meter(session_id)
  local session = state.sessions[session_id or state.current]
  return session and session.meter
end

--- The last compaction this Neovim saw for a session (result or notification).
function M.last_compaction(session_id)
  local session = state.sessions[session_id or state.current]
  return session and session.last_compaction
end

local function report(method, callback, err, result)
  if callback then
    callback(err, result)
  elseif err then
    vim.notify(('compactd: %s: %s'):format(method, err.message), vim.log.levels.ERROR)
  end
end

-- An API function for `method`. opts.session = false: no session needed;
-- opts.prepare(params) may add to params and returns extra pending fields;
-- opts.after(params, result) updates the state on success.
local function api(method, opts)
  return function(params, callback)
    params = vim.deepcopy(params or {})
    if opts.session ~= false then
      params.sessionId = params.sessionId or state.current
      if not params.sessionId then
        report(method, callback, { code = -32602, message = 'no conversation open: call open() first' })
        return nil
      end
    end
    local extra = opts.prepare and opts.prepare(params)
    return client.request(method, params, function(err, result)
      if result and opts.after then
        opts.after(params, result)
      end
      report(method, callback, err, result)
    end, extra)
  end
end

--- Any request, for methods without a wrapper here.
function M.request(method, params, callback)
  return api(method, { session = false })(params, callback)
end

local function store_meter(params, result)
  state.set_meter(params.sessionId, result.meter)
end

--- Opens (or resumes) a session and makes it current.
--- params: {sessionId?, model?, contextWindow?, systemPrompt?, toolDefinitions?}
M.open = api('conversation/open', {
  session = false,
  after = function(_, result)
    state.current = result.sessionId
    state.own = result.sessionId
    state.set_meter(result.sessionId, result.meter)
  end,
})
--- Closes a session (default: current) when the conversation ends: compactd
--- cancels its running compaction and releases its log and lock (another
--- process may open it), and this Neovim forgets it. On a shared compactd it
--- stays open while another client uses it (`closed = false`).
--- params: {sessionId?}
M.close = api('conversation/close', {
  after = function(params)
    state.forget(params.sessionId)
    if state.own == params.sessionId then
      state.own = nil
      if state.current == params.sessionId then
        state.current = nil
      end
    end
  end,
})
--- Follows a session another client drives (a shared compactd): its meter
--- and compactions reach this Neovim, and it becomes current, so the
--- statusline shows it. params: {sessionId}
M.subscribe = api('conversation/subscribe', {
  after = function(_, result)
    state.current = result.sessionId
    state.set_meter(result.sessionId, result.meter)
  end,
})
--- Stops following a session. params: {sessionId?}
M.unsubscribe = api('conversation/unsubscribe', {})
--- The URL of the shared compactd this Neovim attached to, or nil.
function M.attached()
  return config.attached
end
--- params: {sessionId?, messages}
M.append = api('conversation/append', { after = store_meter })
--- params: {sessionId?}
M.history = api('conversation/history', { after = store_meter })
--- params: {sessionId?, strategy?, keepRecentTokens?}
M.preview = api('conversation/preview', {})
--- params: {sessionId?}
M.compactions = api('conversation/compactions', {})
--- params: {sessionId?}
M.check = api('conversation/check', {})
--- params: {sessionId?, enabled}
M.set_auto_compact = api('conversation/setAutoCompact', {})
--- params: {sessionId?}
M.files = api('files/list', {})

-- The agents' sessions are looked for in the plugin's workspace root, the
-- directory the agent runs in when it was started there.
local function in_workspace(params)
  if params.workspace == nil then
    local running = client.start()
    params.workspace = running and (running.root_dir or running.config.root_dir) or nil
  end
end

--- Follows an agent's transcript (read-only) and makes it current.
--- params: {agent? (a name from agents()) | path?, workspace?}
M.follow = api('conversation/follow', {
  session = false,
  prepare = in_workspace,
  after = function(_, result)
    state.set_followed(result, true)
  end,
})
--- Stops following; the editor's own session is current again.
--- params: {sessionId?}
M.unfollow = api('conversation/unfollow', {
  after = function(params, result)
    -- Also when the server no longer knew it (it restarted): not followed here either.
    if M.followed(params.sessionId) then
      state.forget(result.sessionId)
    end
  end,
})
--- The agents' sessions of the workspace, newest first.
--- params: {workspace?, limit?}
M.agent_sessions = api('conversation/listAgentSessions', { session = false, prepare = in_workspace })

--- What a session follows: {agent, agentName, path, workspace, autoCompact,
--- explicit}, or nil for a session of its own (default: current).
function M.followed(session_id)
  local session = state.sessions[session_id or state.current]
  return session and session.followed
end

local next_token = 0

--- Compacts a session, with progress under a token of its own.
--- params: {sessionId?, instructions?, keepRecentTokens?, strategy?, goal?}
M.compact = api('conversation/compact', {
  prepare = function(params)
    next_token = next_token + 1
    params.workDoneToken = params.workDoneToken or ('compactd.nvim/%d'):format(next_token)
    return { token = params.workDoneToken }
  end,
  after = function(params, result)
    state.set_compaction(params.sessionId, result)
  end,
})

--- Cancels a pending request by id; without an id, the newest pending
--- compaction. Its callback gets a -32800 error at once. Returns whether
--- something was cancelled.
function M.cancel(id)
  if id == nil then
    for _, entry in ipairs(client.pending()) do
      if entry.method == 'conversation/compact' then
        id = entry.id
      end
    end
  end
  return id ~= nil and client.cancel(id)
end

--- Requests in flight: {id, method, params, token?, progress?}.
function M.pending()
  return client.pending()
end

--- `90.4k/200k 45%`, or '' without a session. opts: {escape?, highlight?}.
function M.statusline(opts)
  return statusline.render(opts)
end

--- The highlight group for the current level.
function M.statusline_hl()
  return statusline.group()
end

--- A ready-made lualine component.
function M.lualine()
  return statusline.lualine()
end

return M
