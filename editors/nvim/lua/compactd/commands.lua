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

local function current_session()
  local session = compactd.session()
  if not session then
    ui.error('no conversation open: an agent opens one with require("compactd").open()')
  end
  return session
end

--- :Compact [instructions]
function M.compact(args)
  local session = current_session()
  if not session then
    return
  end
  local instructions = args.args ~= '' and args.args or nil
  compactd.compact({ sessionId = session, instructions = instructions }, function(err, result)
    if err then
      return failed('conversation/compact', err)
    end
    if not result.compacted then
      return ui.info(result.reason or 'nothing to compact')
    end
    if config.get().open_summary then
      ui.show_summary(session, result)
    end
  end)
end

--- :CompactCancel
function M.cancel()
  if not compactd.cancel() then
    ui.info('no compaction is running')
  end
end

--- :CompactPreview
function M.preview()
  local session = current_session()
  if not session then
    return
  end
  compactd.preview({ sessionId = session }, function(err, preview)
    if err then
      return failed('conversation/preview', err)
    end
    compactd.history({ sessionId = session }, function(history_err, history)
      if history_err then
        return failed('conversation/history', history_err)
      end
      ui.scratch('compactd://preview/' .. session, ui.preview_lines(session, preview, history))
    end)
  end)
end

--- :CompactAuto [on|off]
function M.auto(args)
  local session = current_session()
  if not session then
    return
  end
  local arg = vim.trim(args.args)
  if arg == '' then
    return compactd.check({ sessionId = session }, function(err, result)
      if err then
        return failed('conversation/check', err)
      end
      local stopped = result.stoppedReason and (' (stopped: %s)'):format(result.stoppedReason) or ''
      ui.info(('auto-compaction is %s for %s%s'):format(result.autoCompact and 'on' or 'off', session, stopped))
    end)
  end
  if arg ~= 'on' and arg ~= 'off' then
    return ui.error(('CompactAuto takes `on` or `off`, not `%s`'):format(arg))
  end
  compactd.set_auto_compact({ sessionId = session, enabled = arg == 'on' }, function(err, result)
    if err then
      return failed('conversation/setAutoCompact', err)
    end
    ui.info(('auto-compaction %s for %s'):format(result.enabled and 'on' or 'off', result.sessionId))
  end)
end

--- :CompactSummary
function M.summary()
  local session = current_session()
  if not session then
    return
  end
  compactd.compactions({ sessionId = session }, function(err, result)
    if err then
      return failed('conversation/compactions', err)
    end
    local last = result.compactions[#result.compactions]
    if not last then
      return ui.info('no compaction yet in ' .. session)
    end
    ui.show_summary(session, last)
  end)
end

--- :CompactFiles
function M.files()
  local session = current_session()
  if not session then
    return
  end
  compactd.files({ sessionId = session }, function(err, result)
    if err then
      return failed('files/list', err)
    end
    local items = ui.files_items(result)
    vim.fn.setqflist({}, ' ', { title = 'compactd files: ' .. session, items = items })
    if #items == 0 then
      return ui.info('no files in the ledger of ' .. session)
    end
    vim.cmd('botright copen')
  end)
end

return M
