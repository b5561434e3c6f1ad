#!/usr/bin/env bash
# compactd inside real agents, against the real binary:
#   tests/agents/smoke.py: the scripted model server's APIs and the requests
#     it refuses (its agent checks need `npm ci` in tests/agents, else SKIP);
#   integrations/pi: npm ci (the pinned pi comes as a devDependency), then
#     npm test: TypeScript against pi's types, node --test driving the real pi;
#   integrations/opencode: npm ci, npm run check (the plugin's TypeScript
#     against opencode's plugin types; the real opencode runs it in
#     tests/it/agents.rs);
#   examples/agent: pytest, the agent loop over a long scripted session, and
#     against the local llama-server when it is up (COMPACTD_TEST_LLM_URL or
#     scripts/local-llm.sh up), else SKIP with the reason.
# Needs target/debug/compactd (or COMPACTD_BIN) and python3 with venv; the
# pi suite needs node and npm and prints SKIP without them. pytest comes from
# clients/python/requirements-test.txt into the venv clients/test.sh uses
# (~/.cache/compactd/clients-venv-<version>).
set -euo pipefail
cd "$(dirname "$0")/.."
export COMPACTD_BIN="${COMPACTD_BIN:-$PWD/target/debug/compactd}"
if [[ ! -x $COMPACTD_BIN ]]; then
  echo "no compactd at $COMPACTD_BIN: run cargo build first (or set COMPACTD_BIN)" >&2
  exit 1
fi

echo "== tests/agents: the scripted model server"
python3 tests/agents/smoke.py

echo "== integrations/pi: npm ci, npm test (the real pi with the extension)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: integrations/pi (no node/npm)"
else
  # The extension installs compactd-client from clients/typescript, built by its own TypeScript.
  [[ -d clients/typescript/node_modules ]] || (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error)
  (cd integrations/pi && npm ci --no-audit --no-fund --loglevel=error && npm test)
fi

echo "== integrations/opencode: npm ci, npm run check (the plugin against opencode's types)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: integrations/opencode (no node/npm)"
else
  (cd integrations/opencode && npm ci --no-audit --no-fund --loglevel=error && npm run check)
fi

echo "== examples/agent: the agent loop (scripted session; the local model when it is up)"
version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv="${XDG_CACHE_HOME:-$HOME/.cache}/compactd/clients-venv-$version"
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r clients/python/requirements-test.txt
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider examples/agent/tests
echo "integrations: done"
