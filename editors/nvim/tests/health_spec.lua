local H = require('helpers')

local function checkhealth()
  vim.cmd('checkhealth compactd')
  return H.buffer_text(vim.api.nvim_get_current_buf())
end

local function lines_with(text, word)
  local found = {}
  for line in text:gmatch('[^\n]+') do
    if line:find(word, 1, true) then
      found[#found + 1] = line
    end
  end
  return found
end

describe(':checkhealth compactd', function()
  before_each(H.reset)

  it('reports ok with the binary present and the server running', function()
    local compactd = H.setup({})
    H.open({})
    local report = checkhealth()
    assert.are.same({}, lines_with(report, 'ERROR'))
    local version = vim.trim(vim.system({ H.bin, '--version' }, { text = true }):wait().stdout)
    assert.matches('OK Neovim 0%.%d+%.%d+', report)
    assert.is_truthy(report:find('OK ' .. version .. ' (' .. H.bin .. ')', 1, true))
    assert.is_truthy(report:find(('OK running: client %d, compactd'):format(compactd.client().id), 1, true))
    assert.is_truthy(report:find('initializationOptions: { dataDir = ', 1, true))
  end)

  it('reports a clear error without the binary', function()
    local missing = H.dir .. '/bin/compactd'
    H.setup({ cmd = missing })
    vim.cmd.edit(H.dir .. '/a.txt')
    local report = checkhealth()
    local errors = lines_with(report, 'ERROR')
    assert.are.equal(2, #errors, report)
    assert.is_truthy(errors[1]:find('`' .. missing .. '` not found or not executable', 1, true))
    assert.is_truthy(errors[2]:find('not running: compactd binary `' .. missing .. '` not found', 1, true))
    assert.matches('cargo build %-%-release', report)
  end)

  it('reports why the server is not running after it rejected its configuration', function()
    local compactd = H.setup({ autostart = false, reserveTokens = 'many' })
    compactd.open({}, function() end)
    H.wait_notice('rejected its configuration')
    local errors = lines_with(checkhealth(), 'ERROR')
    assert.are.equal(1, #errors)
    assert.matches('rejected its configuration.*reserveTokens', errors[1])
  end)
end)
