-- The compactd LSP client: starting it, attaching buffers, requests with the
-- plugin's own pending table, cancellation and the server's notifications.
local config = require('compactd.config')
local state = require('compactd.state')

local M = {}

M.name = 'compactd'
M.REQUEST_CANCELLED = -32800
-- Not a server code: the plugin's answer when the server is gone.
M.SERVER_GONE = -32099

-- Requests in flight, by request id. Neovim never calls a request's callback
-- when the answer is -32800, so `cancel` removes the entry and answers the
-- caller itself; a response that still arrives finds no entry and is dropped.
local pending = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

-- Neovim 0.11 made the client's functions methods; 0.10 has plain fields.
local function call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function invoke(callback, err, result)
  if not callback then
    if err then
      vim.notify(('compactd: %s'):format(err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    return
  end
  local ok, failure = pcall(callback, err, result)
  if not ok then
    vim.notify(('compactd: callback failed: %s'):format(failure), vim.log.levels.ERROR)
  end
end

local function progress_handler(err, params, ctx)
  state.on_progress(params)
  for _, entry in pairs(pending) do
    if entry.token ~= nil and entry.token == params.token then
      entry.progress = params.value
    end
  end
  return vim.lsp.handlers['$/progress'](err, params, ctx)
end

M.handlers = {
  ['conversation/tokens'] = function(_, params)
    state.on_tokens(params)
  end,
  ['conversation/didCompact'] = function(_, params)
    state.on_did_compact(params)
    require('compactd.ui').compacted_notice(params)
  end,
  ['conversation/autoCompactStopped'] = function(_, params)
    require('compactd.ui').warn(
      ('auto-compaction stopped for %s: %s (:CompactAuto on resumes it)'):format(params.sessionId, params.reason)
    )
    vim.api.nvim_exec_autocmds('User', { pattern = 'CompactdAutoCompactStopped', modeline = false, data = params })
  end,
  ['conversation/didFollow'] = function(_, params)
    state.on_did_follow(params)
    require('compactd.offer').offer(params)
  end,
  ['files/didChange'] = function(_, params)
    vim.api.nvim_exec_autocmds('User', { pattern = 'CompactdFileChanged', modeline = false, data = params })
  end,
  ['$/progress'] = progress_handler,
}

local function on_exit(code, signal, client_id)
  -- A new server knows none of these sessions until they are reopened.
  state.progress = {}
  state.sessions = {}
  if code ~= 0 and not state.last_error then
    state.last_error = ('compactd exited with code %d (signal %d); see :LspLog'):format(code, signal)
  end
  for id, entry in pairs(pending) do
    if entry.client_id == client_id then
      pending[id] = nil
      invoke(entry.callback, {
        code = M.SERVER_GONE,
        message = 'compactd exited before answering' .. (state.last_error and (': ' .. state.last_error) or ''),
      })
    end
  end
end

local function on_error(code, err)
  state.last_error = ('%s: %s'):format(vim.lsp.client_errors[code] or code, err)
end

local function on_init()
  state.last_error = nil
  state.rejected = nil
end

-- Starts the process. Neovim only asserts on an `initialize` error (a stack
-- trace for the user), so the answer is read here: the reason is shown once
-- and kept for :checkhealth, the process ends, and the server is not started
-- again until setup() runs, instead of once per buffer.
local function spawn(dispatchers, cfg)
  local rpc = vim.lsp.rpc.start(config.server_cmd(), dispatchers, {
    cwd = cfg and cfg.cmd_cwd,
    env = config.cmd_env(),
  })
  local request = rpc.request
  rpc.request = function(method, params, callback, ...)
    if method == 'initialize' then
      local inner = callback
      callback = function(err, result)
        if not err then
          return inner(err, result)
        end
        state.rejected = ('compactd rejected its configuration: %s'):format(err.message)
        state.last_error = state.rejected
        vim.schedule(function()
          vim.notify(state.rejected, vim.log.levels.ERROR)
          rpc.terminate()
        end)
      end
    end
    return request(method, params, callback, ...)
  end
  return rpc
end

--- The client configuration, for `vim.lsp.start` and `vim.lsp.config`.
function M.lsp_config()
  return {
    name = M.name,
    cmd = spawn,
    root_markers = config.get().root_markers,
    init_options = config.server_options(),
    handlers = M.handlers,
    on_init = on_init,
    on_exit = on_exit,
    on_error = on_error,
  }
end

--- The running compactd client, whether this plugin or `vim.lsp.enable`
--- started it.
function M.get()
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if not call(client, 'is_stopped') then
      return client
    end
  end
end

local function root_dir(bufnr)
  return vim.fs.root(bufnr or 0, config.get().root_markers) or vim.uv.cwd()
end

--- Starts the server unless it runs; returns the client, or nil and why not.
function M.start(bufnr)
  local client = M.get()
  if client then
    return client
  end
  if state.rejected then
    return nil, state.rejected
  end
  local cmd = config.cmd()
  if vim.fn.executable(cmd[1]) ~= 1 then
    state.last_error = ('compactd binary `%s` not found: set `cmd` in setup() or $COMPACTD_BIN'):format(cmd[1])
    return nil, state.last_error
  end
  local cfg = M.lsp_config()
  cfg.root_markers = nil
  cfg.root_dir = root_dir(bufnr)
  local id
  if has_011 then
    id = vim.lsp.start(cfg, { attach = false, silent = true })
  else
    id = vim.lsp.start_client(cfg)
  end
  client = id and vim.lsp.get_client_by_id(id)
  if not client then
    state.last_error = state.last_error or ('could not start `%s`; see :LspLog'):format(table.concat(cmd, ' '))
    return nil, state.last_error
  end
  return client
end

--- Attaches a buffer that holds a file, so the server hears about it.
function M.attach(bufnr)
  if vim.bo[bufnr].buftype ~= '' or vim.api.nvim_buf_get_name(bufnr) == '' then
    return
  end
  local client = M.start(bufnr)
  if client then
    vim.lsp.buf_attach_client(bufnr, client.id)
  end
end

--- Sends a request; `callback(err, result)` is called exactly once, also
--- when the request is cancelled or the server exits. Returns the id.
function M.request(method, params, callback, extra)
  local client, why = M.start()
  if not client then
    invoke(callback, { code = M.SERVER_GONE, message = why })
    return nil
  end
  if vim.tbl_isempty(params) then
    -- An empty Lua table would go out as `[]`; params are always an object.
    params = vim.empty_dict()
  end
  local id
  local ok
  ok, id = call(client, 'request', method, params, function(err, result)
    local entry = pending[id]
    if not entry then
      return
    end
    pending[id] = nil
    invoke(entry.callback, err, result)
  end)
  if not ok or not id then
    invoke(callback, { code = M.SERVER_GONE, message = 'compactd is shutting down' })
    return nil
  end
  pending[id] = vim.tbl_extend('force', extra or {}, {
    id = id,
    method = method,
    params = params,
    callback = callback,
    client_id = client.id,
  })
  return id
end

--- Cancels a pending request: tells the server, forgets the request and
--- answers its callback with -32800. False when it was not pending.
function M.cancel(id)
  local entry = pending[id]
  if not entry then
    return false
  end
  pending[id] = nil
  if entry.token ~= nil then
    state.progress[entry.token] = nil
  end
  local client = vim.lsp.get_client_by_id(entry.client_id)
  if client then
    call(client, 'cancel_request', id)
  end
  invoke(entry.callback, { code = M.REQUEST_CANCELLED, message = 'request cancelled' })
  return true
end

--- Pending requests, oldest first: {id, method, params, progress?, token?}.
function M.pending()
  local list = {}
  for _, entry in pairs(pending) do
    list[#list + 1] = {
      id = entry.id,
      method = entry.method,
      params = entry.params,
      token = entry.token,
      progress = entry.progress,
    }
  end
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

function M.stop()
  local client = M.get()
  if client then
    call(client, 'stop')
  end
end

return M
