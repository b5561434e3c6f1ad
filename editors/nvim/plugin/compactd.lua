-- User commands only; everything else loads on first use.
if vim.g.loaded_compactd then
  return
end
vim.g.loaded_compactd = true

if vim.fn.has('nvim-0.10') ~= 1 then
  vim.api.nvim_echo({ { 'compactd.nvim requires Neovim 0.10 or newer', 'ErrorMsg' } }, true, {})
  return
end

local function command(name, handler, opts)
  vim.api.nvim_create_user_command(name, function(args)
    require('compactd.commands')[handler](args)
  end, opts)
end

command('Compact', 'compact', { nargs = '*', desc = 'compactd: compact the conversation [instructions]' })
command('CompactCancel', 'cancel', { nargs = 0, desc = 'compactd: cancel the running compaction' })
command('CompactPreview', 'preview', { nargs = 0, desc = 'compactd: show what :Compact would do' })
command('CompactAuto', 'auto', {
  nargs = '?',
  desc = 'compactd: auto-compaction on|off (no argument: show)',
  complete = function()
    return { 'on', 'off' }
  end,
})
command('CompactSummary', 'summary', { nargs = 0, desc = 'compactd: the last summary' })
command('CompactFiles', 'files', { nargs = 0, desc = 'compactd: the file ledger in the quickfix list' })
command('CompactFollow', 'follow', {
  nargs = '?',
  complete = function(lead)
    return require('compactd.commands').complete_follow(lead)
  end,
  desc = "compactd: follow an agent's session [agent|transcript] (no argument: pick)",
})
command('CompactUnfollow', 'unfollow', { nargs = 0, desc = 'compactd: stop following, back to your own session' })
command('CompactWatch', 'watch', { nargs = 1, desc = 'compactd: watch a session on a shared compactd {sessionId}' })
