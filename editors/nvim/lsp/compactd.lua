-- compactd for Neovim 0.11's vim.lsp.config / vim.lsp.enable:
--   vim.lsp.enable('compactd')
-- attaches compactd to buffers that have a filetype; options come from
-- require('compactd').setup({ autostart = false, ... }) or vim.lsp.config.
return require('compactd.client').lsp_config()
