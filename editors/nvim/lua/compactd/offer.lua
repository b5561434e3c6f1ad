-- Offering `compactd setup <agent>` the first time the editor follows a
-- session of an agent whose own compactions compactd's hooks take part in.
local config = require('compactd.config')

local M = {}

--- Whether compactd's hooks take part in `agent`'s own compactions, as the
--- server says in `initialize` (`agents`, `supports.hooks`).
local function has_hooks(agent, agents)
  for _, info in ipairs(agents or {}) do
    if info.name == agent then
      return (info.supports or {}).hooks == true
    end
  end
  return false
end

-- Agents already offered in this Neovim.
local offered = {}

local function declined_path()
  return vim.fn.stdpath('data') .. '/compactd/setup-declined.json'
end

--- The agents the user declined for good.
function M.declined()
  local ok, list = pcall(function()
    return vim.json.decode(table.concat(vim.fn.readfile(declined_path()), '\n'))
  end)
  return ok and type(list) == 'table' and list or {}
end

local function decline(agent)
  local list = M.declined()
  table.insert(list, agent)
  vim.fn.mkdir(vim.fn.fnamemodify(declined_path(), ':h'), 'p')
  vim.fn.writefile({ vim.json.encode(list) }, declined_path())
end

--- The question to ask, or nil: an agent without hooks (`agents`: what the
--- server reported), one declined for good, or one already set up (the dry
--- run has nothing to change).
function M.question(agent, name, dry_run, declined, agents)
  if not has_hooks(agent, agents) or vim.tbl_contains(declined, agent) then
    return nil
  end
  if dry_run:find(': nothing to change', 1, true) then
    return nil
  end
  return ("Set up %s's hooks, so its own compactions keep the files, rules and task compactd knows?"):format(name)
end

local function setup_cmd(agent, dry_run)
  local cmd = vim.list_extend(config.cmd(), { 'setup', agent })
  if dry_run then
    table.insert(cmd, '--dry-run')
  end
  return cmd
end

local function printed(out)
  return vim.trim((out.stdout or '') .. (out.stderr or ''))
end

--- Offers the setup for a followed session's agent (`conversation/didFollow`
--- params), once per agent and Neovim, unless `offer_setup` is false or the
--- server is a shared one. `done(asked)`, when given, is called once it is
--- decided whether to ask.
function M.offer(params, done)
  done = done or function() end
  local agent = params.agent
  local agents = require('compactd').agents()
  if not config.get().offer_setup or config.attached or offered[agent] or not has_hooks(agent, agents) then
    return done(false)
  end
  offered[agent] = true
  vim.system(
    setup_cmd(agent, true),
    { env = config.cmd_env(), text = true },
    vim.schedule_wrap(function(out)
      -- A dry run that failed has nothing to offer.
      local question = out.code == 0
        and M.question(agent, params.agentName or agent, printed(out), M.declined(), agents)
      done(question ~= nil)
      if not question then
        return
      end
      vim.ui.select({ 'Set up', 'Not now', "Don't ask again" }, { prompt = question }, function(choice)
        if choice == 'Set up' then
          vim.system(
            setup_cmd(agent, false),
            { env = config.cmd_env(), text = true },
            vim.schedule_wrap(function(result)
              local level = result.code == 0 and vim.log.levels.INFO or vim.log.levels.WARN
              vim.notify('compactd: ' .. printed(result), level)
            end)
          )
        elseif choice == "Don't ask again" then
          decline(agent)
        end
      end)
    end)
  )
end

--- Forgets what was offered (tests).
function M.reset()
  offered = {}
end

return M
