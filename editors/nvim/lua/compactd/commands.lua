-- The user commands; plugin/compactd.lua defines them and requires this
-- module on first use.
local compactd = require('compactd')
local config = require('compactd.config')
local ui = require('compactd.ui')

local M = {}

local function failed(method, err)
  if err.code == -32601 then
    ui.error(('this compactd does not support `%s`; update the binary'):format(method))
  elseif err.code == -32800 then
    ui.info(('%s cancelled'):format(method))
  else
    ui.error(('%s: %s'):format(method, err.message))
  end
end

-- A command on the current session: `fn(session, args)`.
local function on_session(fn)
  return function(args)
    local session = compactd.session()
    if not session then
      return ui.error('no conversation open: an agent opens one with require("compactd").open()')
    end
    fn(session, args or { args = '' })
  end
end

-- Calls an API function; `on_result(result)` on success, a notice otherwise.
local function ask(api, method, params, on_result)
  api(params, function(err, result)
    if err then
      return failed(method, err)
    end
    on_result(result)
  end)
end

--- :Compact [instructions]
M.compact = on_session(function(session, args)
  local params = { sessionId = session, instructions = args.args ~= '' and args.args or nil }
  ask(compactd.compact, 'conversation/compact', params, function(result)
    if not result.compacted then
      return ui.info(result.reason or 'nothing to compact')
    end
    if config.get().open_summary then
      ui.show_summary(session, result)
    end
  end)
end)

--- :CompactWatch {sessionId}
function M.watch(args)
  ask(compactd.subscribe, 'conversation/subscribe', { sessionId = args.args }, function(result)
    local where = compactd.attached() and (' on ' .. compactd.attached()) or ''
    ui.info(('watching %s%s%s'):format(result.sessionId, where, result.open and '' or ' (not open yet)'))
  end)
end

--- :CompactCancel
function M.cancel()
  if not compactd.cancel() then
    ui.info('no compaction is running')
  end
end

--- :CompactPreview
M.preview = on_session(function(session)
  ask(compactd.preview, 'conversation/preview', { sessionId = session }, function(preview)
    ask(compactd.history, 'conversation/history', { sessionId = session }, function(history)
      ui.scratch('compactd://preview/' .. session, ui.preview_lines(session, preview, history))
    end)
  end)
end)

--- :CompactAuto [on|off]
M.auto = on_session(function(session, args)
  local arg = vim.trim(args.args)
  if arg == '' then
    return ask(compactd.check, 'conversation/check', { sessionId = session }, function(result)
      local stopped = result.stoppedReason and (' (stopped: %s)'):format(result.stoppedReason) or ''
      ui.info(('auto-compaction is %s for %s%s'):format(result.autoCompact and 'on' or 'off', session, stopped))
    end)
  end
  if arg ~= 'on' and arg ~= 'off' then
    return ui.error(('CompactAuto takes `on` or `off`, not `%s`'):format(arg))
  end
  local params = { sessionId = session, enabled = arg == 'on' }
  ask(compactd.set_auto_compact, 'conversation/setAutoCompact', params, function(result)
    ui.info(('auto-compaction %s for %s'):format(result.enabled and 'on' or 'off', result.sessionId))
  end)
end)

--- :CompactSummary
M.summary = on_session(function(session)
  ask(compactd.compactions, 'conversation/compactions', { sessionId = session }, function(result)
    local last = result.compactions[#result.compactions]
    if not last then
      return ui.info('no compaction yet in ' .. session)
    end
    ui.show_summary(session, last)
  end)
end)

--- :CompactFiles
M.files = on_session(function(session)
  ask(compactd.files, 'files/list', { sessionId = session }, function(result)
    local items = ui.files_items(result)
    vim.fn.setqflist({}, ' ', { title = 'compactd files: ' .. session, items = items })
    if #items == 0 then
      return ui.info('no files in the ledger of ' .. session)
    end
    vim.cmd('botright copen')
  end)
end)

return M
