-- What the user sees: notices, scratch buffers and the quickfix list.
local M = {}

function M.error(message)
  vim.notify('compactd: ' .. message, vim.log.levels.ERROR)
end

function M.warn(message)
  vim.notify('compactd: ' .. message, vim.log.levels.WARN)
end

function M.info(message)
  vim.notify('compactd: ' .. message, vim.log.levels.INFO)
end

--- The notice for `conversation/didCompact`, whatever triggered it.
function M.compacted_notice(result)
  if not result.compacted then
    return
  end
  local text = ('conversation compacted (%s): %d messages → summary; tokens %d → %d'):format(
    result.trigger or 'manual',
    result.messagesSummarized or 0,
    result.tokensBefore or 0,
    result.tokensAfter or 0
  )
  if result.degraded then
    text = text .. '; degraded: ' .. (result.degradedReason or 'see :CompactSummary')
  end
  -- An agent's own compaction: what its summary left out.
  if type(result.dropped) == 'table' and #result.dropped > 0 then
    text = text .. '; its summary dropped ' .. table.concat(result.dropped, ', ')
  end
  M.info(text)
  -- An open summary buffer follows the latest compaction.
  local summary = vim.fn.bufnr(M.summary_name(result.sessionId))
  if summary ~= -1 and result.summary then
    M.set_lines(summary, vim.split(result.summary, '\n', { plain = true }))
  end
end

function M.summary_name(session_id)
  return 'compactd://summary/' .. tostring(session_id)
end

function M.set_lines(bufnr, lines)
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].modified = false
end

--- Shows `lines` in the scratch buffer called `name`, reusing it and its
--- window when they exist. Returns the buffer.
function M.scratch(name, lines, filetype)
  local bufnr = vim.fn.bufnr(name)
  if bufnr == -1 then
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, name)
    vim.bo[bufnr].bufhidden = 'hide'
    vim.bo[bufnr].filetype = filetype or 'markdown'
  end
  M.set_lines(bufnr, lines)
  local win = vim.fn.bufwinid(bufnr)
  if win == -1 then
    vim.cmd('botright split')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, bufnr)
  end
  vim.api.nvim_set_current_win(win)
  return bufnr
end

function M.show_summary(session_id, compaction)
  return M.scratch(M.summary_name(session_id), vim.split(compaction.summary, '\n', { plain = true }))
end

local function first_line(content)
  if type(content) ~= 'string' then
    content = vim.json.encode(content)
  end
  local line = content:match('^%s*([^\n]*)') or ''
  if #line > 72 then
    line = line:sub(1, 71) .. '…'
  end
  return line
end

--- The lines of :CompactPreview: the plan, then each message it touches.
function M.preview_lines(session_id, preview, history)
  local by_id = {}
  for _, message in ipairs(history and history.messages or {}) do
    by_id[message.id] = message
  end
  local lines = {
    ('# compactd preview: session %s'):format(session_id),
    '',
    ('- strategy: %s'):format(preview.strategy or '?'),
    ('- tokens: %d → ~%d%s'):format(
      preview.tokensBefore or 0,
      preview.estimatedTokensAfter or 0,
      (preview.overheadTokens or 0) > 0
          and (' (%d of them sent with every request: system prompt, tool definitions)'):format(preview.overheadTokens)
        or ''
    ),
    ('- first kept message: %s'):format(preview.firstKeptMessageId or 'none'),
  }
  if preview.reason then
    lines[#lines + 1] = ('- reason: %s'):format(preview.reason)
  end
  local groups = {
    { 'summarize', preview.summarizeMessageIds },
    { 'prune', preview.pruneMessageIds },
    { 'keep', preview.keepMessageIds },
  }
  for _, group in ipairs(groups) do
    local name, ids = group[1], group[2] or {}
    lines[#lines + 1] = ''
    lines[#lines + 1] = ('## %s (%d)'):format(name, #ids)
    for _, id in ipairs(ids) do
      local message = by_id[id]
      if message then
        lines[#lines + 1] = ('- %s %s: %s'):format(id, message.role, first_line(message.content))
      else
        lines[#lines + 1] = ('- %s'):format(id)
      end
    end
  end
  return lines
end

--- The file ledger as quickfix items.
function M.files_items(result)
  local items = {}
  for _, file in ipairs(result.files or {}) do
    local origins = table.concat(file.origins or {}, ',')
    items[#items + 1] = {
      filename = file.path,
      lnum = 1,
      text = ('%s: %d reads, %d modifications (%s)'):format(
        file.status,
        file.reads or 0,
        file.modifications or 0,
        origins
      ),
    }
  end
  return items
end

return M
