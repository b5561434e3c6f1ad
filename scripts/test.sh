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
