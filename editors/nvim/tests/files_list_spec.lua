-- The file ledger as Neovim feeds it (didOpen, didChange, didSave) and
-- :CompactFiles shows it.
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
