local H = require('helpers')

-- The lazy.nvim spec in the README, loaded the way lazy.nvim loads a
-- `dir` plugin: a fresh Neovim with the plugin's directory (editors/nvim of
-- a repository laid out as a clone is, target/release/compactd as `build`
-- leaves it) added to 'runtimepath' and its plugin/ sourced, then the
-- spec's `config(plugin)`. The plugin must come up, work, and have its
-- help tagged (lazy.nvim tags no `dir` plugin's doc/) from that alone.

local function readme_spec()
  local readme = table.concat(vim.fn.readfile(H.plugin_root .. '/README.md'), '\n')
  local block = readme:match('```lua\n(%{\n  dir = .-\n%})\n```')
  assert(block, 'the README has a lazy.nvim spec')
  return block
end

describe('the README lazy.nvim spec', function()
  before_each(H.reset)

  it('builds with cargo and brings up the plugin from the repository', function()
    local spec = assert(loadstring('return ' .. readme_spec()))()
    assert.are.equal('cargo build --release --locked --manifest-path ../../Cargo.toml', spec.build)
    assert.are.equal('function', type(spec.config))

    local repo = H.dir .. '/repo'
    vim.fn.mkdir(repo .. '/editors', 'p')
    vim.fn.mkdir(repo .. '/target/release', 'p')
    assert(vim.uv.fs_symlink(H.plugin_root, repo .. '/editors/nvim'))
    assert(vim.uv.fs_symlink(H.bin, repo .. '/target/release/compactd'))
    local script = H.dir .. '/lazy.lua'
    vim.fn.writefile({
      'local spec = assert(loadstring(' .. vim.inspect('return ' .. readme_spec()) .. '))()',
      'local dir = ' .. vim.inspect(repo .. '/editors/nvim'),
      'vim.opt.runtimepath:append(dir)',
      'vim.cmd.runtime("plugin/compactd.lua")',
      'spec.config({ dir = dir, name = "compactd" })',
      'assert(vim.fn.exists(":CompactFollow") == 2, "the commands are defined")',
      'vim.cmd("help compactd-follow")',
      'assert(vim.fn.expand("%:t") == "compactd.txt", "the help opens: " .. vim.fn.expand("%"))',
      'vim.cmd("close")',
      'local done, err, result = false, nil, nil',
      'require("compactd").open({ sessionId = "lazy" }, function(e, r) done, err, result = true, e, r end)',
      'assert(vim.wait(60000, function() return done end, 10), "no answer")',
      'assert(err == nil, vim.inspect(err))',
      'io.stdout:write("opened " .. result.sessionId .. "\\n")',
      'require("compactd").stop()',
    }, script)
    local run = vim
      .system({ vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE', '-l', script }, {
        text = true,
        cwd = H.dir,
        env = { XDG_DATA_HOME = H.dir .. '/data', XDG_STATE_HOME = H.dir .. '/state', COMPACTD_BIN = '' },
      })
      :wait(H.PATIENCE_MS)
    assert.are.equal(0, run.code, run.stderr)
    assert.matches('opened lazy', run.stdout, 1, false, run.stderr)
  end)
end)
