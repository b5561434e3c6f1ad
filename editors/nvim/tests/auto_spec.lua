local H = require('helpers')

describe(':CompactAuto', function()
  before_each(H.reset)

  -- Past the 1,000-token limit as soon as this turn is in.
  local big_turn = {
    { role = 'user', content = 'Read the whole repository.' },
    { role = 'assistant', content = 'Read it.', usage = { input = 5000, output = 100 } },
  }

  it('off stops auto-compaction and on brings it back', function()
    local compactd = H.compactable({ autoCompactTokenLimit = 1000 })
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

  it('warns when the server stops auto-compaction', function()
    H.setup({})
    local stopped = H.capture_event('CompactdAutoCompactStopped')
    -- The notification as the server's circuit breaker sends it.
    local params = { sessionId = 's1', reason = 'auto-compaction did not help 3 times' }
    require('compactd.client').handlers['conversation/autoCompactStopped'](nil, params, {})
    local notice = H.wait_notice('auto-compaction stopped for s1: auto-compaction did not help 3 times')
    assert.are.equal(vim.log.levels.WARN, notice.level)
    assert.are.same(params, stopped.data)
  end)
end)
