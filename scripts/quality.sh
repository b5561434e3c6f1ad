#!/usr/bin/env bash
# quality.sh — the summary quality benchmark (examples/quality): compacts
# every shared transcript (../shared/transcripts) at several cut points and
# in a chain of automatic compactions, scores the compacted context against
# probes derived from the raw transcripts, prints one Markdown table per
# summarizer (offline; the local model when `scripts/local-llm.sh status`
# says it runs or COMPACTD_TEST_LLM_URL is set) and writes JSON to
# target/quality/.
#
# Usage: scripts/quality.sh [--baseline benches/quality/offline.json] [--llm auto|off|URL] [--show]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --quiet --release --example quality -- "$@"
