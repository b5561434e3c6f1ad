-- The plugin writes the protocol's method names by hand; each one must be
-- a method of the server's table (schemas/methods.json, generated from it),
-- in the direction the plugin uses it, as the other clients' generated
-- method lists are.
local H = require('helpers')

local function method_table()
  local path = H.repo_root .. '/schemas/methods.json'
  local text = table.concat(vim.fn.readfile(path), '\n')
  local by_name = {}
  for _, method in ipairs(vim.json.decode(text).methods) do
    by_name[method.name] = method
  end
  return by_name
end

-- Every quoted string of the shape of a method name in the plugin's Lua.
local function written_methods()
  local found = {}
  local files = vim.fn.globpath(H.plugin_root, '{lua,plugin}/**/*.lua', false, true)
  assert.is_true(#files >= 5, 'the plugin has its Lua files')
  for _, file in ipairs(files) do
    for number, line in ipairs(vim.fn.readfile(file)) do
      for name in line:gmatch("'([%a%$]+/[%a/]+)'") do
        found[#found + 1] = { name = name, where = ('%s:%d'):format(vim.fn.fnamemodify(file, ':t'), number) }
      end
    end
  end
  return found
end

describe('the method names the plugin writes', function()
  it('are methods of the server', function()
    local table_ = method_table()
    local written = written_methods()
    assert.is_true(#written >= 20, #written .. ' method names found')
    local requests, handled = 0, 0
    for _, use in ipairs(written) do
      local method = table_[use.name]
      assert(method, ('%s: `%s` is not in schemas/methods.json'):format(use.where, use.name))
      if method.kind == 'request' or method.kind == 'requestOrNotification' then
        requests = requests + 1
      elseif method.kind == 'serverNotification' then
        handled = handled + 1
      end
    end
    assert.is_true(requests >= 10 and handled >= 5, 'requests sent and notifications handled')
  end)

  it('catch a name the server does not have', function()
    local table_ = method_table()
    assert.is_nil(table_['conversation/compactNow'])
    assert.is_truthy(table_['conversation/compact'])
  end)
end)
