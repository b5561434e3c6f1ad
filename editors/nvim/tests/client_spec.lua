local H = require('helpers')

describe('the LSP client', function()
  before_each(H.reset)

  it('starts compactd for a file buffer and passes setup() options as initializationOptions', function()
    local compactd = H.setup({ defaultContextWindow = 64000, statusline = { warn = 50 } })
    vim.cmd.edit(H.dir .. '/notes.txt')
    local bufnr = vim.api.nvim_get_current_buf()
    H.wait_for('the client to initialize', function()
      local client = compactd.client()
      return client and client.initialized
    end)
    local client = compactd.client()
    assert.are.equal('compactd', client.server_info.name)
    assert.is_true(client.attached_buffers[bufnr])
    -- The plugin's own keys (statusline) stayed out: the server rejects
    -- unknown fields. defaultContextWindow reached it:
    local opened = H.open({})
    assert.are.equal(64000, opened.meter.contextWindow)
    assert.are.equal(opened.sessionId, compactd.session())
  end)

  it('attaches no buffer without a file', function()
    local compactd = H.setup({})
    vim.cmd.edit(H.dir .. '/a.txt')
    H.wait_for('the client', function()
      return compactd.client() ~= nil
    end)
    vim.cmd.enew()
    vim.bo.buftype = 'nofile'
    vim.cmd.doautocmd('BufNewFile')
    assert.is_nil(compactd.client().attached_buffers[vim.api.nvim_get_current_buf()])
  end)

  it('reports a configuration the server rejects, naming the field', function()
    local compactd = H.setup({ keepRecentTokenz = 1, autostart = false })
    local err
    compactd.open({}, function(e)
      err = e
    end)
    local notice = H.wait_notice('compactd rejected its configuration: ')
    H.wait_for('the open request to fail', function()
      return err ~= nil
    end, 'rejected its configuration')
    assert.matches('keepRecentTokenz', notice.message)
    assert.are.equal(vim.log.levels.ERROR, notice.level)
    assert.matches('keepRecentTokenz', require('compactd.state').last_error)
    H.wait_for('the rejected server to stop', function()
      return compactd.client() == nil
    end, 'rejected its configuration')
    -- No restart with the same options: the reason comes back at once.
    local again
    compactd.open({}, function(e)
      again = e
    end)
    assert.matches('rejected its configuration.*keepRecentTokenz', again.message)
  end)

  it('answers API calls with a clear error when the binary is missing', function()
    local compactd = H.setup({ cmd = { H.dir .. '/no-such-compactd' } })
    local err = H.await('open without a binary', function(cb)
      compactd.open({}, cb)
    end)
    assert.matches('no%-such%-compactd` not found', err.message)
    assert.is_nil(compactd.client())
  end)

  it('rejects bad plugin options with the field name', function()
    local compactd = require('compactd')
    local ok, err = pcall(compactd.setup, { statusline = { warn = 'high' } })
    assert.is_false(ok)
    assert.matches('statusline.warn', err)
  end)

  it('works with vim.lsp.enable and lsp/compactd.lua', function()
    local compactd = H.setup({ autostart = false })
    vim.lsp.enable('compactd')
    vim.cmd.edit(H.dir .. '/init.lua')
    H.wait_for('vim.lsp.enable to start compactd', function()
      local client = compactd.client()
      return client and client.initialized
    end)
    local tokens = H.capture_event('CompactdTokens')
    local opened = H.open({ contextWindow = 200000 })
    H.wait_for('conversation/tokens through the handler of lsp/compactd.lua', function()
      return tokens.data ~= nil
    end)
    assert.are.equal(opened.sessionId, tokens.data.sessionId)
    assert.are.equal(200000, tokens.data.contextWindow)
    vim.lsp.enable('compactd', false)
  end)

  it('knows which Neovim versions it supports', function()
    local config = require('compactd.config')
    assert.is_false(config.supported({ major = 0, minor = 9, patch = 5 }))
    assert.is_true(config.supported({ major = 0, minor = 10, patch = 0 }))
    assert.is_true(config.supported(vim.version()))
  end)
end)
