-- The statusline component: `90.4k/200k 45%` for the current session, and
-- `Claude Code 90.4k/200k 45% · auto-compact ~177k` for a followed agent's.
local config = require('compactd.config')
local state = require('compactd.state')

local M = {}

M.groups = {
  ok = 'CompactdStatus',
  warn = 'CompactdStatusWarn',
  error = 'CompactdStatusError',
}

--- Default highlight links; a colorscheme may override them.
function M.define_highlights()
  vim.api.nvim_set_hl(0, M.groups.ok, { link = 'StatusLine', default = true })
  vim.api.nvim_set_hl(0, M.groups.warn, { link = 'DiagnosticWarn', default = true })
  vim.api.nvim_set_hl(0, M.groups.error, { link = 'DiagnosticError', default = true })
end

--- 950, 1.3k, 90.4k, 200k, 1M.
function M.human(n)
  if n < 1000 then
    return tostring(math.floor(n))
  end
  local value, suffix = n / 1000, 'k'
  if n >= 999950 then
    value, suffix = n / 1e6, 'M'
  end
  local text = ('%.1f'):format(value):gsub('%.0$', '')
  return text .. suffix
end

local function percent(meter)
  if meter.percent then
    return meter.percent
  end
  if meter.contextWindow and meter.contextWindow > 0 then
    return meter.contextTokens * 100 / meter.contextWindow
  end
  return 0
end

local function current_session()
  return state.current and state.sessions[state.current]
end

local function current_meter()
  local session = current_session()
  return session and session.meter
end

-- ` · auto-compact 977k` (`~177k` when estimated) where the agent compacts
-- by itself; the meter carries the latest point, the follow result the first.
local function agent_point(meter, followed)
  local point = meter.agentAutoCompact or followed.autoCompact
  if type(point) ~= 'table' or type(point.at) ~= 'number' or point.basis == 'off' then
    return ''
  end
  return (' · auto-compact %s%s'):format(point.basis == 'estimate' and '~' or '', M.human(point.at))
end

--- `90.4k/200k 45%` (plain text) for the meter; for a followed agent's
--- session (`followed`, see compactd.followed()) its name first and its
--- auto-compaction point after; ' compacting' is added while a compaction runs.
function M.format(meter, followed)
  local text = ('%s/%s %d%%'):format(
    M.human(meter.contextTokens or 0),
    M.human(meter.contextWindow or 0),
    -- Rounded, as the status line, `compactd follow` and VS Code show it.
    math.floor(percent(meter) + 0.5)
  )
  if followed then
    text = ('%s %s%s'):format(followed.agentName or followed.agent, text, agent_point(meter, followed))
  end
  if state.compacting() then
    text = text .. ' compacting'
  end
  return text
end

--- The highlight group for the meter's level.
function M.group(meter)
  meter = meter or current_meter()
  if not meter then
    return M.groups.ok
  end
  local thresholds = config.get().statusline
  local pct = percent(meter)
  local at_limit = (meter.autoCompactAt or 0) > 0 and (meter.contextTokens or 0) >= meter.autoCompactAt
  if at_limit or pct >= thresholds.error then
    return M.groups.error
  end
  if pct >= thresholds.warn then
    return M.groups.warn
  end
  return M.groups.ok
end

--- The component. `opts.escape` doubles `%` for statusline strings
--- (lualine); `opts.highlight` also wraps the text in its highlight group.
--- Empty while no session is open.
function M.render(opts)
  opts = type(opts) == 'table' and opts or {}
  local session = current_session()
  local meter = session and session.meter
  if not meter then
    return ''
  end
  local text = M.format(meter, session.followed)
  if opts.escape or opts.highlight then
    text = text:gsub('%%', '%%%%')
  end
  if opts.highlight then
    text = ('%%#%s#%s%%*'):format(M.group(meter), text)
  end
  return text
end

--- A lualine component: text, colour by level, hidden without a session.
function M.lualine()
  return {
    function()
      return M.render({ escape = true })
    end,
    color = function()
      return M.group()
    end,
    cond = function()
      return current_meter() ~= nil
    end,
  }
end

return M
