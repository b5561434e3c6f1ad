local H = require('helpers')

-- An assistant turn whose provider usage puts the context at 90,400 tokens.
local function turn(input)
  return {
    { role = 'user', content = 'Summarize the design.' },
    { role = 'assistant', content = 'Done.', usage = { input = input, output = 400 } },
  }
end

describe('statusline()', function()
  before_each(H.reset)

  it('follows appends through the Lua API', function()
    local compactd = H.setup({})
    assert.are.equal('', compactd.statusline())
    H.open({ contextWindow = 200000 })
    local before = compactd.statusline()
    assert.matches('^%d+/200k 0%%$', before)
    local appended = H.append(turn(90000))
    assert.are.equal(90400, appended.meter.contextTokens)
    assert.are.equal('90.4k/200k 45%', compactd.statusline())
    assert.are.equal(compactd.meter().contextTokens, 90400)
    -- Rounded as the status line, `compactd follow` and VS Code show it:
    -- 23,200 of 200k is 11.6%, shown 12%.
    local format = require('compactd.statusline').format
    assert.are.equal('23.2k/200k 12%', format({ contextTokens = 23200, contextWindow = 200000, percent = 11.6 }))
  end)

  it('picks the highlight group by threshold and the auto-compaction limit', function()
    local compactd = H.setup({ statusline = { warn = 40, error = 95 } })
    H.open({ contextWindow = 200000 })
    assert.are.equal('CompactdStatus', compactd.statusline_hl())
    H.append(turn(90000))
    assert.are.equal('CompactdStatusWarn', compactd.statusline_hl())
    -- 185.4k is below 95% but past the auto-compaction limit (window - reserve).
    local appended = H.append(turn(185000))
    assert.is_true(appended.meter.contextTokens >= appended.meter.autoCompactAt)
    assert.are.equal('CompactdStatusError', compactd.statusline_hl())
  end)

  it('renders as a statusline with highlights and escaped percent', function()
    local compactd = H.setup({ statusline = { warn = 40 } })
    H.open({ contextWindow = 200000 })
    H.append(turn(90000))
    local line = compactd.statusline({ highlight = true })
    assert.are.equal('%#CompactdStatusWarn#90.4k/200k 45%%%*', line)
    local rendered = vim.api.nvim_eval_statusline(line, { highlights = true })
    assert.are.equal('90.4k/200k 45%', rendered.str)
    assert.are.equal('CompactdStatusWarn', rendered.highlights[1].group)
    -- The 'statusline' setting from :help compactd.statusline().
    vim.cmd([[set statusline=%{%v:lua.require'compactd'.statusline({'highlight':v:true})%}]])
    rendered = vim.api.nvim_eval_statusline(vim.o.statusline, { highlights = true })
    assert.are.equal('90.4k/200k 45%', rendered.str)
    assert.are.equal('CompactdStatusWarn', rendered.highlights[1].group)
  end)

  it('gives lualine an escaped function, a colour and a condition', function()
    local compactd = H.setup({ statusline = { warn = 40 } })
    local component = compactd.lualine()
    assert.is_false(component.cond())
    H.open({ contextWindow = 200000 })
    H.append(turn(90000))
    assert.is_true(component.cond())
    assert.are.equal('90.4k/200k 45%%', component[1]())
    assert.are.equal('CompactdStatusWarn', component.color())
    local rendered = vim.api.nvim_eval_statusline(component[1](), {})
    assert.are.equal('90.4k/200k 45%', rendered.str)
  end)

  it('abbreviates counts', function()
    local human = require('compactd.statusline').human
    assert.are.equal('950', human(950))
    assert.are.equal('1.3k', human(1261))
    assert.are.equal('90.4k', human(90400))
    assert.are.equal('200k', human(200000))
    assert.are.equal('1M', human(1000000))
    assert.are.equal('1.1M', human(1100000))
  end)

  it('links its highlight groups by default and keeps them after a colorscheme', function()
    H.setup({})
    vim.cmd('highlight clear')
    vim.cmd.doautocmd('ColorScheme')
    assert.are.equal('DiagnosticWarn', vim.api.nvim_get_hl(0, { name = 'CompactdStatusWarn' }).link)
    assert.are.equal('DiagnosticError', vim.api.nvim_get_hl(0, { name = 'CompactdStatusError' }).link)
  end)
end)
