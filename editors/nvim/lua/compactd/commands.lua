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
    local followed = compactd.followed(session)
    local title = followed and ('compactd files: %s (%s)'):format(followed.agentName, followed.path)
      or ('compactd files: ' .. session)
    vim.fn.setqflist({}, ' ', { title = title, items = items })
    if #items == 0 then
      return ui.info('no files in the ledger of ' .. session)
    end
    vim.cmd('botright copen')
  end)
end)

local function follow(params)
  ask(compactd.follow, 'conversation/follow', params, function(result)
    ui.info(('following %s: %s'):format(result.agentName, result.path))
  end)
end

--- The agents a server follows, as people know them (`Claude Code, Codex
--- or pi`); `agent` when it reported none.
function M.agent_list(agents)
  local names = vim.tbl_map(function(agent)
    return agent.displayName
  end, agents or {})
  if #names == 0 then
    return 'agent'
  end
  local last = table.remove(names)
  return #names > 0 and ('%s or %s'):format(table.concat(names, ', '), last) or last
end

--- `Claude Code  edit a.txt and write c.md  2026-11-22 19:58`
function M.agent_session_item(session)
  return ('%s  %s  %s'):format(
    session.agentName or session.agent,
    session.title or vim.fn.fnamemodify(session.path, ':t'),
    os.date('%Y-%m-%d %H:%M', math.floor((session.modified or 0) / 1000))
  )
end

local function pick_and_follow()
  ask(compactd.agent_sessions, 'conversation/listAgentSessions', {}, function(result)
    if #result.sessions == 0 then
      return ui.info(('no %s session for %s yet'):format(M.agent_list(compactd.agents()), result.workspace))
    end
    vim.ui.select(result.sessions, {
      prompt = 'Follow agent session',
      format_item = M.agent_session_item,
      kind = 'compactd.agent_session',
    }, function(picked)
      if picked then
        follow({ path = picked.path })
      end
    end)
  end)
end

--- :CompactFollow [agent|path]
function M.follow(args)
  local arg = vim.trim(args and args.args or '')
  if arg == '' then
    return pick_and_follow()
  end
  -- An agent's name (the server says which it knows), else a transcript.
  local path = vim.fn.fnamemodify(vim.fn.expand(arg), ':p')
  if not arg:find('[/\\.~]') and vim.fn.filereadable(path) == 0 then
    return follow({ agent = arg })
  end
  follow({ path = path })
end

--- Completion of :CompactFollow: the agents the server follows, then
--- transcript paths.
function M.complete_follow(lead)
  local matches = {}
  for _, agent in ipairs(compactd.agents()) do
    if vim.startswith(agent.name, lead) then
      matches[#matches + 1] = agent.name
    end
  end
  table.sort(matches)
  return vim.list_extend(matches, vim.fn.getcompletion(lead, 'file'))
end

--- :CompactUnfollow
M.unfollow = on_session(function(session)
  local followed = compactd.followed(session)
  if not followed then
    return ui.error(('session %s follows no agent (:CompactFollow follows one)'):format(session))
  end
  ask(compactd.unfollow, 'conversation/unfollow', { sessionId = session }, function()
    ui.info(('stopped following %s: %s'):format(followed.agentName, followed.path))
  end)
end)

return M
