#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every test against the real
# binary. What a suite needs and lacks (an editor's toolchain, the real
# agents, tmux, a local model, ../shared) is skipped with a SKIP line, and
# the run ends with the list of everything skipped; with CI or
# COMPACTD_REQUIRE_PREREQUISITES set (.ci/run sets the latter, after
# installing every prerequisite) a skip fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Skipped integration tests (tests/it/support.rs `skip`) and SKIP lines of
# the suites below.
mkdir -p target/tmp
skipped=target/tmp/skipped.txt
: >"$skipped"
# Runs a suite, keeping its SKIP lines; when prerequisites are required,
# one fails the run.
required=${CI:-${COMPACTD_REQUIRE_PREREQUISITES:-}}
suite() {
  local out status=0
  out=$(mktemp)
  "$@" 2>&1 | tee "$out" || status=$?
  grep '^SKIP: ' "$out" | sed 's/^SKIP: //' >>"$skipped" || true
  if [[ -n $required ]] && grep -q '^SKIP: ' "$out"; then
    echo "$*: a prerequisite is missing and the run requires them (CI or COMPACTD_REQUIRE_PREREQUISITES; see the SKIP lines above)" >&2
    status=1
  fi
  rm -f "$out"
  return "$status"
}
# The list at the end, also when a suite fails.
report() {
  local n
  n=$(grep -c . "$skipped" || true)
  if ((n == 0)); then
    echo "== skipped: nothing"
  else
    echo "== skipped: $n (each ran nothing; install what it names, as .ci/run does)"
    sed 's/^/  /' "$skipped"
  fi
}
trap report EXIT

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --all-targets
echo "== nvim plugin (editors/nvim)"
cargo build --quiet
suite editors/nvim/tests/run.sh
echo "== LSP conformance (pygls + pytest-lsp)"
suite tests/conformance/run.sh
echo "== clients (TypeScript, Python)"
suite clients/test.sh
echo "== integrations (pi extension, example agent)"
suite integrations/test.sh
echo "== packages: cargo package, python -m build, npm pack (dry runs)"
suite scripts/package-check.sh

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
    suite echo "SKIP: editors/vscode e2e: no chromium (apt-get install chromium, or .ci/run)"
  fi
else
  suite echo "SKIP: editors/vscode: no node_modules (npm ci in editors/vscode, or .ci/run)"
fi
