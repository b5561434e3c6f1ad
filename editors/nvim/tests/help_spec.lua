local H = require('helpers')

describe(':help compactd', function()
  before_each(function()
    H.reset()
    -- What a plugin manager does on install; doc/tags is ignored by git.
    vim.cmd.helptags(H.plugin_root .. '/doc')
  end)

  it('opens the help file at its tag', function()
    vim.cmd.help('compactd')
    assert.are.equal('help', vim.bo.buftype)
    assert.are.equal(H.plugin_root .. '/doc/compactd.txt', vim.api.nvim_buf_get_name(0))
    assert.matches('%*compactd%*', vim.api.nvim_get_current_line())
  end)

  it('has a tag for every command and API function', function()
    local tags = {}
    for _, command in ipairs(vim.tbl_keys(vim.api.nvim_get_commands({}))) do
      if command:match('^Compact') then
        tags[#tags + 1] = ':' .. command
      end
    end
    assert.is_true(#tags >= 6)
    for name, value in pairs(require('compactd')) do
      if type(value) == 'function' then
        tags[#tags + 1] = 'compactd.' .. name .. '()'
      end
    end
    for _, tag in ipairs(tags) do
      local ok, err = pcall(vim.cmd.help, tag)
      assert(ok, ('no help for %s: %s'):format(tag, err))
      assert.is_truthy(vim.api.nvim_get_current_line():find('*' .. tag .. '*', 1, true), tag)
    end
  end)
end)
