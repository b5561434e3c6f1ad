-- :checkhealth compactd
local config = require('compactd.config')
local state = require('compactd.state')

local M = {}

local function check_neovim(health)
  health.start('compactd: Neovim')
  local version = vim.version()
  local text = ('%d.%d.%d'):format(version.major, version.minor, version.patch)
  if config.supported(version) then
    health.ok('Neovim ' .. text)
  else
    health.error(('Neovim %s: %s'):format(text, config.requirement))
  end
end

local function check_binary(health)
  health.start('compactd: binary')
  local cmd = config.cmd()
  local path = vim.fn.exepath(cmd[1])
  if path == '' then
    health.error(('`%s` not found or not executable'):format(cmd[1]), {
      'Build it: run `cargo build --release` in the compactd repository',
      '(with lazy.nvim: `:Lazy build compactd`); the binary is target/release/compactd.',
      'Then put target/release on PATH, or set `cmd` in require("compactd").setup() or $COMPACTD_BIN.',
    })
    return
  end
  local ok, run = pcall(vim.system, { path, '--version' }, { text = true })
  local result = ok and run:wait(10000)
  if not result or result.code ~= 0 then
    local why = ok and (result and result.stderr or 'timed out') or run
    health.error(('`%s --version` failed: %s'):format(path, vim.trim(why or '')))
    return
  end
  health.ok(('%s (%s)'):format(vim.trim(result.stdout), path))
end

local function check_server(health)
  health.start('compactd: server')
  local client = require('compactd.client').get()
  if client then
    local info = client.server_info or {}
    health.ok(
      ('running: client %d, %s %s, root %s'):format(
        client.id,
        info.name or 'compactd',
        info.version or '?',
        client.root_dir or client.config.root_dir or '(none)'
      )
    )
    if state.current then
      local session = state.sessions[state.current] or {}
      health.info(
        ('current session %s: %s'):format(
          state.current,
          session.meter and require('compactd').statusline() or 'no meter yet'
        )
      )
      if session.followed then
        health.info(
          ('following %s (%s): %s'):format(
            session.followed.agentName,
            session.followed.explicit and ':CompactFollow' or 'follow = auto',
            session.followed.path
          )
        )
      end
    end
  elseif state.last_error then
    health.error('not running: ' .. state.last_error)
  else
    health.info('not running: it starts with the first file buffer (autostart) or command')
  end
end

local function check_config(health)
  health.start('compactd: configuration')
  local opts = config.get()
  health.ok(
    ('cmd = %s, autostart = %s, follow = %s, statusline warn %d%% error %d%%'):format(
      table.concat(config.cmd(), ' '),
      tostring(opts.autostart),
      opts.follow,
      opts.statusline.warn,
      opts.statusline.error
    )
  )
  if opts.statusline.warn > opts.statusline.error then
    health.warn('statusline.warn is above statusline.error: the warning level never shows')
  end
  local server = config.server_options()
  health.info('initializationOptions: ' .. (server and vim.inspect(server, { newline = ' ', indent = '' }) or '{}'))
end

function M.check()
  local health = vim.health
  check_neovim(health)
  check_binary(health)
  check_server(health)
  check_config(health)
end

return M
