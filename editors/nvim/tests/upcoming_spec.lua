-- Tests of methods that other branches add to the server (see the list in
-- tests/README.md): files/list, conversation/setAutoCompact and
-- conversation/check, conversation/preview, conversation/compactions.
local H = require('helpers')

local function entry_for(listed, path)
  for _, file in ipairs(listed.files) do
    if file.path == path then
      return file
    end
  end
end

describe('files/list', function()
  before_each(H.reset)

  it('shows a buffer opened and edited in Neovim, and :CompactFiles lists it', function()
    local compactd = H.setup({})
    H.open({})
    local path = H.dir .. '/src/main.rs'
    vim.fn.mkdir(H.dir .. '/src', 'p')
    vim.fn.writefile({ 'fn main() {}' }, path)
    vim.cmd.edit(path)
    H.wait_for('the buffer to attach', function()
      local client = compactd.client()
      return client and client.initialized and client.attached_buffers[vim.api.nvim_get_current_buf()]
    end)
    local listed = H.ok('files/list after opening', function(cb)
      compactd.files({}, cb)
    end)
    local file = entry_for(listed, path)
    assert(file, 'the opened buffer is not in the ledger: ' .. vim.inspect(listed))
    assert.are.equal('read', file.status)
    assert.is_true(vim.tbl_contains(listed.readFiles, file.displayPath))

    vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'fn main() { println!("edited"); }' })
    vim.cmd.write()
    listed = H.ok('files/list after editing', function(cb)
      compactd.files({}, cb)
    end)
    file = entry_for(listed, path)
    assert.are.equal('modified', file.status)
    assert.is_true(file.modifications >= 1)
    assert.is_true(vim.tbl_contains(file.origins, 'lsp'))
    assert.is_true(vim.tbl_contains(listed.modifiedFiles, file.displayPath))

    vim.cmd('CompactFiles')
    H.wait_for('the quickfix list', function()
      return #vim.fn.getqflist() > 0
    end)
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    assert.are.equal('compactd files: ' .. compactd.session(), qf.title)
    local item = qf.items[1]
    assert.are.equal(path, vim.api.nvim_buf_get_name(item.bufnr))
    assert.matches('^modified: ', item.text)
  end)
end)

describe(':CompactAuto', function()
  before_each(H.reset)

  -- Past the 1,000-token limit as soon as this turn is in.
  local big_turn = {
    { role = 'user', content = 'Read the whole repository.' },
    { role = 'assistant', content = 'Read it.', usage = { input = 5000, output = 100 } },
  }

  it('off stops auto-compaction and on brings it back', function()
    local compactd = H.setup({ keepRecentTokens = 20, autoCompactTokenLimit = 1000 })
    H.open({ contextWindow = 200000 })
    H.append(H.conversation)
    vim.cmd('CompactAuto off')
    H.wait_notice('auto-compaction off')
    vim.cmd('CompactAuto')
    H.wait_notice('auto-compaction is off')

    H.append(big_turn)
    -- An auto-compaction starts when the append is applied; the server
    -- handles requests in order, so these answers would show it.
    local check = H.ok('check', function(cb)
      compactd.check({}, cb)
    end)
    assert.is_true(check.shouldCompact)
    assert.is_false(check.autoCompact)
    assert.is_false(check.compacting)
    local listed = H.ok('compactions', function(cb)
      compactd.compactions({}, cb)
    end)
    assert.are.same({}, listed.compactions)

    vim.cmd('CompactAuto on')
    H.wait_notice('auto-compaction on')
    H.append({ { role = 'user', content = 'Go on.' } })
    local notice = H.wait_notice('conversation compacted (threshold)')
    assert.are.equal(vim.log.levels.INFO, notice.level)
    assert.are.equal('threshold', compactd.last_compaction().trigger)
  end)

  it('rejects other arguments', function()
    H.setup({})
    H.open({})
    vim.cmd('CompactAuto maybe')
    assert.are.equal(vim.log.levels.ERROR, H.wait_notice('`on` or `off`, not `maybe`').level)
  end)
end)

describe(':CompactPreview', function()
  before_each(H.reset)

  it('shows the plan without compacting', function()
    local compactd = H.setup({ keepRecentTokens = 20 })
    local session = H.open({}).sessionId
    H.append(H.conversation)
    local plan = H.ok('preview', function(cb)
      compactd.preview({}, cb)
    end)
    assert.is_false(plan.compacted)
    assert.is_true(#plan.summarizeMessageIds > 0)
    vim.cmd('CompactPreview')
    H.wait_for('the preview buffer', function()
      return vim.fn.bufnr('compactd://preview/' .. session) ~= -1
    end)
    local text = H.buffer_text(vim.fn.bufnr('compactd://preview/' .. session))
    assert.is_truthy(text:find(('## summarize (%d)'):format(#plan.summarizeMessageIds), 1, true))
    assert.is_truthy(text:find(('## keep (%d)'):format(#plan.keepMessageIds), 1, true))
    assert.is_truthy(text:find('- m1 user: Rename foo to bar in src/lib.rs', 1, true))
    local history = H.ok('history', function(cb)
      compactd.history({}, cb)
    end)
    assert.are.equal(#H.conversation, #history.messages)
  end)
end)

describe('conversation/compactions', function()
  before_each(H.reset)

  it('gives :CompactSummary the last summary after a restart', function()
    local compactd = H.setup({ keepRecentTokens = 20 })
    local session = H.open({}).sessionId
    H.append(H.conversation)
    local result = H.ok('compact', function(cb)
      compactd.compact({}, cb)
    end)
    assert.is_true(result.compacted)

    H.restart()
    compactd = H.setup({ keepRecentTokens = 20 })
    assert.are.equal(true, H.open({ sessionId = session }).resumed)
    assert.is_nil(compactd.last_compaction())
    vim.cmd('CompactSummary')
    H.wait_for('the summary buffer', function()
      return vim.fn.bufnr('compactd://summary/' .. session) ~= -1 or H.notice('no compaction yet') ~= nil
    end)
    assert.is_nil(H.notice('no compaction yet'))
    assert.are.equal(result.summary, H.buffer_text(vim.fn.bufnr('compactd://summary/' .. session)))
  end)
end)
