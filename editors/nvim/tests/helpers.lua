-- Shared by the specs: a fresh plugin against the real binary, and waiting
-- on events with a bound that only guards against a hang.
local H = {}

H.plugin_root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
H.repo_root = vim.fn.fnamemodify(H.plugin_root, ':h:h')
H.bin = vim.env.COMPACTD_BIN or (H.repo_root .. '/target/debug/compactd')
-- Never a synchronisation: a broken server fails the test instead of hanging it.
H.PATIENCE_MS = 60000

vim.opt.runtimepath:prepend(H.plugin_root)
vim.cmd('runtime plugin/compactd.lua')

-- An error notice the test does not wait for ends the wait at once.
local function unexpected_error(expected)
  for _, notice in ipairs(H.notices or {}) do
    if notice.level == vim.log.levels.ERROR and not (expected and notice.message:find(expected, 1, true)) then
      return notice.message
    end
  end
end

--- Waits until `predicate()` is truthy; fails naming `what` otherwise, or
--- as soon as the plugin reports an error other than `expected`.
function H.wait_for(what, predicate, expected)
  local failure
  local ok = vim.wait(H.PATIENCE_MS, function()
    failure = unexpected_error(expected)
    return failure ~= nil or predicate()
  end, 10)
  assert(not failure, ('while waiting for %s: %s'):format(what, failure))
  assert(ok, 'timed out waiting for ' .. what)
end

--- Calls `fn(callback)` and waits for the callback; returns err, result.
function H.await(what, fn)
  local done, err, result = false, nil, nil
  fn(function(e, r)
    done, err, result = true, e, r
  end)
  H.wait_for(what, function()
    return done
  end)
  return err, result
end

--- Like await, failing on an error.
function H.ok(what, fn)
  local err, result = H.await(what, fn)
  assert(err == nil, what .. ' failed: ' .. vim.inspect(err))
  return result
end

local function unload()
  for name in pairs(package.loaded) do
    if name == 'compactd' or name:match('^compactd%.') then
      package.loaded[name] = nil
    end
  end
end

--- Stops every client, wipes buffers and forgets the plugin's modules,
--- keeping the data dir: a new Neovim on the same sessions.
function H.restart()
  H.notices = {}
  for _, client in ipairs(vim.lsp.get_clients({ _uninitialized = true })) do
    client:stop(true)
  end
  H.wait_for('clients to stop', function()
    return #vim.lsp.get_clients({ _uninitialized = true }) == 0
  end)
  vim.cmd('silent! %bwipeout!')
  vim.fn.setqflist({}, 'r')
  unload()
end

--- A fresh start: H.restart() with new notices and a new directory.
function H.reset()
  H.restart()
  H.notices = {}
  vim.notify = function(message, level)
    table.insert(H.notices, { message = message, level = level })
  end
  H.dir = vim.fn.tempname()
  vim.fn.mkdir(H.dir, 'p')
  vim.cmd.cd(H.dir)
end

--- setup() with the binary under test, a throwaway data dir and `opts`.
function H.setup(opts)
  local base = {
    cmd = { H.bin, '--no-user-config' },
    dataDir = H.dir .. '/sessions',
    -- offer_spec.lua answers the setup question; elsewhere nothing asks.
    offer_setup = false,
  }
  local compactd = require('compactd')
  compactd.setup(vim.tbl_deep_extend('force', base, opts or {}))
  return compactd
end

--- The first notice whose message contains `text` (plain), or nil.
function H.notice(text)
  for _, notice in ipairs(H.notices) do
    if notice.message:find(text, 1, true) then
      return notice
    end
  end
end

function H.wait_notice(text)
  H.wait_for('a notice containing ' .. text, function()
    return H.notice(text) ~= nil
  end, text)
  return H.notice(text)
end

--- Opens a session through the API and returns its result.
function H.open(params)
  local compactd = require('compactd')
  return H.ok('conversation/open', function(cb)
    compactd.open(params or {}, cb)
  end)
end

function H.append(messages)
  local compactd = require('compactd')
  return H.ok('conversation/append', function(cb)
    compactd.append({ messages = messages }, cb)
  end)
end

--- Records the data of the next `User` autocmd `pattern`: `box.data`.
function H.capture_event(pattern)
  local box = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = pattern,
    once = true,
    callback = function(args)
      box.data = args.data
    end,
  })
  return box
end

--- setup(opts) with a tiny kept tail, a session holding H.conversation:
--- something to compact. Returns the plugin and the session id.
function H.compactable(opts)
  local compactd = H.setup(vim.tbl_deep_extend('force', { keepRecentTokens = 20 }, opts or {}))
  local session = H.open({}).sessionId
  H.append(H.conversation)
  return compactd, session
end

--- A rename through an edit tool, after reading a file long enough that a
--- summary is smaller than what it replaces (the server refuses summaries
--- that would not shrink the history).
H.conversation = {
  { role = 'user', content = 'Rename foo to bar in src/lib.rs' },
  {
    role = 'assistant',
    content = 'Reading it first.',
    toolCalls = { { id = 'c0', name = 'read', arguments = { path = 'src/lib.rs' } } },
  },
  { role = 'tool', toolCallId = 'c0', content = string.rep('pub fn foo() -> u32 { 42 }\n', 80) },
  {
    role = 'assistant',
    content = 'Editing.',
    toolCalls = { { id = 'c1', name = 'edit', arguments = { path = 'src/lib.rs' } } },
  },
  { role = 'tool', toolCallId = 'c1', content = 'ok' },
  { role = 'assistant', content = 'Renamed.' },
  { role = 'user', content = 'Now run the tests.' },
}

function H.buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
end

return H
