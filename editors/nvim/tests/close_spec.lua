local H = require('helpers')

describe('close()', function()
  before_each(H.reset)

  it('closes the session in compactd, which releases it, and forgets it here', function()
    local compactd = H.setup({})
    local session = H.open({ sessionId = 'nvim-close' }).sessionId
    H.append({ { role = 'user', content = 'hello' } })
    assert.are.equal(session, compactd.session())
    local closed = H.ok('conversation/close', function(cb)
      compactd.close({}, cb)
    end)
    assert.are.same({ sessionId = session, closed = true }, closed)
    assert.is_nil(compactd.session())
    assert.is_nil(compactd.meter(session))
    assert.are.equal('', compactd.statusline())
    -- compactd closed it: a request naming it says so.
    local err = H.await('conversation/history', function(cb)
      compactd.history({ sessionId = session }, cb)
    end)
    assert.matches('no open session', err.message)
    -- Closing again is no error.
    local again = H.ok('conversation/close', function(cb)
      compactd.close({ sessionId = session }, cb)
    end)
    assert.is_false(again.closed)
    -- And it opens again from its log.
    local reopened = H.open({ sessionId = session })
    assert.is_true(reopened.resumed)
    assert.are.equal(1, reopened.messageCount)
  end)
end)
