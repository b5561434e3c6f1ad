-- What the plugin knows about the server's sessions, kept current by the
-- server's notifications: the meter, the last compaction, running progress.
local M = {}

M.sessions = {}
-- The session that commands and the statusline use.
M.current = nil
-- The editor's own session (the one last opened), where :CompactUnfollow
-- returns to.
M.own = nil
-- Active work-done progress by token: the last `begin`/`report` value.
M.progress = {}
-- Why the server is not running, for :checkhealth.
M.last_error = nil
-- Set when the server rejected `initialize`: no restart until setup().
M.rejected = nil

function M.session(id)
  local session = M.sessions[id]
  if not session then
    session = { id = id }
    M.sessions[id] = session
  end
  return session
end

local function emit(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

local function redraw()
  pcall(vim.cmd.redrawstatus, { bang = true })
end

function M.set_meter(session_id, meter)
  if not session_id or type(meter) ~= 'table' then
    return
  end
  M.session(session_id).meter = meter
  redraw()
end

--- `conversation/tokens`
function M.on_tokens(params)
  M.set_meter(params.sessionId, params)
  emit('CompactdTokens', params)
end

function M.set_compaction(session_id, result)
  if result.compacted and result.summary then
    M.session(session_id).last_compaction = result
  end
end

--- `conversation/didCompact`
function M.on_did_compact(params)
  M.set_compaction(params.sessionId, params)
  emit('CompactdCompacted', params)
end

--- `$/progress`
function M.on_progress(params)
  local value = params.value
  if type(value) ~= 'table' then
    return
  end
  if value.kind == 'end' then
    M.progress[params.token] = nil
  else
    local previous = M.progress[params.token] or {}
    M.progress[params.token] = vim.tbl_extend('force', previous, value)
  end
  redraw()
end

--- A `conversation/follow` result or `conversation/didFollow`: the session
--- mirrors an agent's transcript and becomes current. `explicit`: the user
--- asked for it (it stays when auto-follow moves on).
function M.set_followed(result, explicit)
  local session = M.session(result.sessionId)
  local before = session.followed
  session.followed = {
    agent = result.agent,
    agentName = result.agentName,
    path = result.path,
    workspace = result.workspace,
    autoCompact = result.autoCompact,
    explicit = explicit or (before ~= nil and before.explicit) or false,
  }
  M.current = result.sessionId
  M.set_meter(result.sessionId, result.meter)
end

--- `conversation/didFollow`: auto-follow moved to a session that started;
--- the one it followed before is closed unless the user followed it.
function M.on_did_follow(params)
  local previous = params.previousSessionId and M.sessions[params.previousSessionId]
  if previous and not (previous.followed and previous.followed.explicit) then
    M.forget(params.previousSessionId)
  end
  M.set_followed(params, false)
  emit('CompactdFollowed', params)
end

--- The server closed a session (unfollowed): the editor's own session is
--- current again when it was the current one.
function M.forget(session_id)
  M.sessions[session_id] = nil
  if M.current == session_id then
    M.current = M.own
  end
  redraw()
end

function M.compacting()
  return next(M.progress) ~= nil
end

return M
