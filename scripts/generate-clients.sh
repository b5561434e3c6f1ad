#!/usr/bin/env bash
# Regenerates everything generated from schemas/ outside Rust: the
# TypeScript client's types and methods (clients/typescript), the Python
# client's (clients/python) and the VS Code extension's settings
# (editors/vscode). Run it after `UPDATE_SCHEMAS=1 cargo test --test it schemas`.
# `--check` writes nothing and fails, naming what is stale. Needs
# `npm ci` in clients/typescript (json-schema-to-typescript) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
check=()
[[ ${1:-} == --check ]] && check=(--check)
node clients/typescript/scripts/generate.mjs "${check[@]}"
python3 clients/python/scripts/generate.py "${check[@]}"
node editors/vscode/scripts/generate.mjs "${check[@]}"
