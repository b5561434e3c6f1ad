#!/usr/bin/env bash
# LSP conformance: the real binary under a third-party client (pygls's
# LanguageClient) with pytest-lsp's checks of the specification. The pinned
# tools (requirements.txt, from PyPI) go into a venv cached in
# ~/.cache/compactd/conformance-venv. Prints a SKIP line without python3.
set -euo pipefail
cd "$(dirname "$0")"
: "${COMPACTD_BIN:=$(cd ../.. && pwd)/target/debug/compactd}"
export COMPACTD_BIN
if ! command -v python3 >/dev/null; then
  echo "SKIP: LSP conformance: no python3"
  exit 0
fi
venv="${XDG_CACHE_HOME:-$HOME/.cache}/compactd/conformance-venv"
stamp="$venv/requirements.txt"
if ! cmp -s requirements.txt "$stamp" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt "$stamp"
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
