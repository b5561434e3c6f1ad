#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test against the real
# binary. Editor suites run when their toolchains are installed (.ci/run
# installs them); each prints a SKIP line otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --all-targets
echo "== nvim plugin (editors/nvim)"
cargo build --quiet
editors/nvim/tests/run.sh
echo "== LSP conformance (pygls + pytest-lsp)"
tests/conformance/run.sh
echo "== clients (TypeScript, Python)"
clients/test.sh
echo "== integrations (pi extension, example agent)"
integrations/test.sh
echo "== packages: cargo package, python -m build, npm pack (dry runs)"
scripts/package-check.sh

echo "== editors/vscode: npm test, .vsix, e2e in code-server"
if [[ -d editors/vscode/node_modules ]]; then
  (cd editors/vscode && npm test && npm run package)
  if [[ -x "${CHROMIUM:-/usr/bin/chromium}" || -n "${CI:-}" ]]; then
    (cd editors/vscode && npm run e2e)
    # The same attached to a shared compactd, watching a test agent's session.
    (cd editors/vscode && npm run e2e:shared)
    # The platform package that carries the release binary, with no
    # compactd on PATH and no compactd.server.path.
    cargo build --release --quiet
    (cd editors/vscode && npm run package:linux-x64 && npm run e2e:bundled)
  else
    echo "SKIP: editors/vscode e2e: no chromium (apt-get install chromium, or .ci/run)"
  fi
else
  echo "SKIP: editors/vscode: no node_modules (npm ci in editors/vscode, or .ci/run)"
fi
