local H = require('helpers')

local function summary_buffer(session_id)
  return vim.fn.bufnr('compactd://summary/' .. session_id)
end

describe(':Compact', function()
  before_each(H.reset)

  it('shows the compacted notice and the summary buffer', function()
    local compactd, session = H.compactable()
    vim.cmd('Compact keep the test names')
    local notice = H.wait_notice('conversation compacted (manual)')
    assert.matches('%d+ messages → summary; tokens %d+ → %d+', notice.message)
    H.wait_for('the summary buffer', function()
      return summary_buffer(session) ~= -1
    end)
    local bufnr = summary_buffer(session)
    assert.are.equal(bufnr, vim.api.nvim_get_current_buf())
    local summary = compactd.last_compaction().summary
    assert.are.equal(summary, H.buffer_text(bufnr))
    assert.matches('<modified%-files>\nsrc/lib.rs\n</modified%-files>', summary)
    assert.is_false(vim.bo[bufnr].modifiable)
    assert.are.equal(compactd.last_compaction().tokensAfter, compactd.meter().contextTokens)
    -- The compacted history starts with the summary.
    local history = H.ok('history', function(cb)
      compactd.history({}, cb)
    end)
    assert.matches('<summary>', history.messages[1].content)
  end)

  it('says why when there is nothing to compact', function()
    H.setup({})
    local session = H.open({}).sessionId
    H.append({ { role = 'user', content = 'hello' } })
    vim.cmd('Compact')
    local notice = H.wait_notice('nothing to compact')
    assert.are.equal(vim.log.levels.INFO, notice.level)
    assert.are.equal(-1, summary_buffer(session))
  end)

  it('needs an open conversation', function()
    H.setup({})
    vim.cmd('Compact')
    assert.are.equal(vim.log.levels.ERROR, H.wait_notice('no conversation open').level)
  end)
end)

describe(':CompactSummary', function()
  before_each(H.reset)

  it('shows the last summary in a scratch buffer', function()
    local compactd, session = H.compactable({ open_summary = false })
    vim.cmd('Compact')
    H.wait_notice('conversation compacted (manual)')
    assert.are.equal(-1, summary_buffer(session))
    vim.cmd('CompactSummary')
    H.wait_for('the summary buffer', function()
      return summary_buffer(session) ~= -1
    end)
    local bufnr = summary_buffer(session)
    assert.are.equal(compactd.last_compaction().summary, H.buffer_text(bufnr))
    assert.are.equal('nofile', vim.bo[bufnr].buftype)
    assert.are.equal('markdown', vim.bo[bufnr].filetype)
  end)

  it("reads the server's compactions after a restart", function()
    local compactd, session = H.compactable()
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
      return summary_buffer(session) ~= -1 or H.notice('no compaction yet') ~= nil
    end)
    assert.is_nil(H.notice('no compaction yet'))
    assert.are.equal(result.summary, H.buffer_text(summary_buffer(session)))
  end)

  it('says so when nothing was compacted yet', function()
    H.setup({})
    H.open({})
    vim.cmd('CompactSummary')
    H.wait_notice('no compaction yet')
  end)
end)

describe('cancellation', function()
  before_each(H.reset)

  -- The `test` summarizer waits 30 s per chunk: long enough to cancel.
  local function slow_session()
    return H.compactable({ summarizer = { provider = 'test', delayMs = 30000 } })
  end

  local function wait_for_begin(compactd)
    H.wait_for('$/progress begin', function()
      local entry = compactd.pending()[1]
      return entry and entry.progress and entry.progress.kind == 'begin'
    end)
  end

  it('clears the pending request and answers its callback once', function()
    local compactd = slow_session()
    local history_before = H.ok('history', function(cb)
      compactd.history({}, cb)
    end)
    local answers = {}
    local id = compactd.compact({}, function(err, result)
      answers[#answers + 1] = { err = err, result = result }
    end)
    wait_for_begin(compactd)
    assert.matches('compacting$', compactd.statusline())
    assert.is_true(compactd.cancel(id))
    assert.are.same({}, compactd.pending())
    assert.are.equal(1, #answers)
    assert.are.equal(-32800, answers[1].err.code)
    assert.is_nil(compactd.statusline():match('compacting'))
    -- The server acknowledges with -32800, which Neovim swallows.
    local client = compactd.client()
    H.wait_for("the server's -32800", function()
      return client.requests[id] == nil
    end)
    assert.are.equal(1, #answers)
    assert.is_false(compactd.cancel(id))
    local history_after = H.ok('history', function(cb)
      compactd.history({}, cb)
    end)
    assert.are.same(history_before.messages, history_after.messages)
  end)

  it(':CompactCancel stops a running :Compact', function()
    local compactd = slow_session()
    vim.cmd('Compact')
    wait_for_begin(compactd)
    vim.cmd('CompactCancel')
    assert.are.same({}, compactd.pending())
    H.wait_notice('conversation/compact cancelled')
    vim.cmd('CompactCancel')
    H.wait_notice('no compaction is running')
  end)

  it('answers pending requests when the server exits', function()
    local compactd = slow_session()
    local answer
    compactd.compact({}, function(err)
      answer = err
    end)
    wait_for_begin(compactd)
    compactd.client():stop(true)
    H.wait_for('the pending callback', function()
      return answer ~= nil
    end)
    assert.matches('exited before answering', answer.message)
    assert.are.same({}, compactd.pending())
    assert.are.equal('', compactd.statusline())
  end)
end)

describe('the compacted notice', function()
  before_each(H.reset)

  it("says what an agent's own summary dropped", function()
    require('compactd.ui').compacted_notice({
      compacted = true,
      trigger = 'auto',
      messagesSummarized = 12,
      tokensBefore = 900,
      tokensAfter = 90,
      dropped = { '2 of 5 modified files', 'the task' },
    })
    local notice = H.wait_notice('its summary dropped')
    assert.matches('its summary dropped 2 of 5 modified files, the task$', notice.message)
  end)
end)
