-- Options: the plugin's own keys, and everything else, which is compactd's
-- configuration and goes to the server as `initializationOptions`.
local M = {}

-- Keys the plugin reads itself; they never reach the server, whose
-- configuration rejects unknown fields.
M.plugin_keys = {
  cmd = true,
  cmd_env = true,
  connect = true,
  autostart = true,
  root_markers = true,
  statusline = true,
  open_summary = true,
  offer_setup = true,
}

M.defaults = {
  -- The server command. A string or a list; default `$COMPACTD_BIN`, else
  -- `compactd` on `PATH`.
  cmd = nil,
  -- Extra environment for the server. Neovim logs every line the server
  -- writes to stderr as an error in lsp.log, so compactd logs warnings only
  -- unless `COMPACTD_LOG` says otherwise.
  cmd_env = nil,
  -- Attach to a shared compactd (`compactd serve --listen`) instead of
  -- starting one: 'auto' attaches when its discovery file names a live one
  -- (else starts compactd as usual), a `ws://` URL attaches to that one,
  -- nil starts compactd. Attached through `compactd connect`, a stdio
  -- bridge; the shared server keeps its own configuration (the options
  -- below are not sent).
  connect = nil,
  -- Attach every file buffer, so its textDocument/* notifications feed the
  -- file ledger. When false the server starts on the first command or API call.
  autostart = true,
  -- Where the workspace root (and its compactd.toml) is looked for.
  root_markers = { 'compactd.toml', '.git' },
  -- Percentages of the context window where the statusline turns to
  -- CompactdStatusWarn and CompactdStatusError (also at the auto-compaction
  -- limit).
  statusline = { warn = 70, error = 90 },
  -- :Compact opens the summary in a scratch buffer when it is done.
  open_summary = true,
  -- The first time a Claude Code or Codex session is followed, offer
  -- `compactd setup <agent>` (its hooks; vim.ui.select), unless it is set
  -- up already or was declined for good.
  offer_setup = true,
  -- compactd's `follow` setting, with the editors' default (the server's is
  -- `off`): `auto` follows the workspace's newest Claude Code, Codex, pi or
  -- Gemini CLI session and each one that starts later; `off` only
  -- :CompactFollow.
  follow = 'auto',
}

local current = vim.deepcopy(M.defaults)

--- Neovim 0.10 or newer; `version` is a `vim.version()` table.
function M.supported(version)
  return version.major > 0 or version.minor >= 10
end

M.requirement = 'compactd.nvim requires Neovim 0.10 or newer'

local function check_type(path, value, expected)
  if value ~= nil and type(value) ~= expected then
    error(('compactd: `%s` must be a %s, got %s'):format(path, expected, type(value)), 0)
  end
end

--- Validates and stores options; raises a message naming the bad field.
function M.set(opts)
  opts = opts or {}
  check_type('opts', opts, 'table')
  if type(opts.cmd) ~= 'string' then
    check_type('cmd', opts.cmd, 'table')
  end
  check_type('cmd_env', opts.cmd_env, 'table')
  if
    opts.connect ~= nil
    and opts.connect ~= 'auto'
    and not (type(opts.connect) == 'string' and opts.connect:match('^ws://'))
  then
    error(("compactd: `connect` must be 'auto' or a ws:// URL, got %s"):format(vim.inspect(opts.connect)), 0)
  end
  check_type('autostart', opts.autostart, 'boolean')
  check_type('root_markers', opts.root_markers, 'table')
  check_type('statusline', opts.statusline, 'table')
  check_type('open_summary', opts.open_summary, 'boolean')
  check_type('offer_setup', opts.offer_setup, 'boolean')
  if opts.follow ~= nil and opts.follow ~= 'auto' and opts.follow ~= 'off' then
    error(('compactd: `follow` must be "auto" or "off", got %s'):format(vim.inspect(opts.follow)), 0)
  end
  if opts.statusline then
    check_type('statusline.warn', opts.statusline.warn, 'number')
    check_type('statusline.error', opts.statusline.error, 'number')
  end
  current = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- Lists replace the defaults instead of merging into them by index.
  current.cmd = opts.cmd
  current.root_markers = opts.root_markers or vim.deepcopy(M.defaults.root_markers)
  return current
end

function M.get()
  return current
end

--- The server command as a list.
function M.cmd()
  local cmd = current.cmd or vim.env.COMPACTD_BIN
  if cmd == nil or cmd == '' then
    return { 'compactd' }
  end
  if type(cmd) == 'string' then
    return { cmd }
  end
  return vim.deepcopy(cmd)
end

--- The command Neovim runs: compactd, or `compactd connect` when `connect`
--- finds a shared compactd. `M.attached` is its URL then, else nil.
function M.server_cmd()
  local cmd = M.cmd()
  local connect = current.connect
  M.attached = nil
  if connect == 'auto' then
    local check = vim.list_extend(vim.deepcopy(cmd), { 'connect', '--check' })
    local ok, found = pcall(function()
      return vim.system(check, { env = M.cmd_env(), text = true }):wait()
    end)
    if ok and found.code == 0 then
      M.attached = vim.trim(found.stdout)
      return vim.list_extend(cmd, { 'connect' })
    end
  elseif type(connect) == 'string' then
    M.attached = connect
    return vim.list_extend(cmd, { 'connect', '--url', connect })
  end
  return cmd
end

function M.cmd_env()
  return vim.tbl_extend('force', { COMPACTD_LOG = vim.env.COMPACTD_LOG or 'warn' }, current.cmd_env or {})
end

--- The options that are compactd's configuration, or nil when there are none.
function M.server_options()
  local server = {}
  for key, value in pairs(current) do
    if not M.plugin_keys[key] then
      server[key] = value
    end
  end
  if next(server) == nil then
    return nil
  end
  return server
end

return M
