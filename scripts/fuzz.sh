#!/usr/bin/env bash
# fuzz.sh — run the cargo-fuzz targets in fuzz/ for a bounded time each:
#   frame_reader     LSP framing over arbitrary bytes in arbitrary chunks
#   request_decoder  JSON-RPC classification of arbitrary JSON
#   mcp_framing      `compactd mcp`'s stdio lines over arbitrary bytes
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60, all)
#
# Needs cargo-fuzz (installed on first use into the cache, ~3.5 min) and
# sanitizer flags that stable Rust accepts only with RUSTC_BOOTSTRAP=1,
# which this script sets for its own builds. The fuzz build and the corpus
# are cached under $COMPACTD_CACHE_DIR (default ~/.cache/compactd), so only
# the first run compiles every dependency (minutes); later ones rebuild
# compactd alone. A crash leaves its input in fuzz/artifacts/TARGET/ and
# fails the script; replay it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-…
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(frame_reader request_decoder mcp_framing)

CACHE="${COMPACTD_CACHE_DIR:-${HOME:?HOME is not set}/.cache/compactd}"
export PATH="$CACHE/cargo-fuzz/bin:$PATH"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$CACHE/fuzz-target"

if ! command -v cargo-fuzz >/dev/null; then
  echo "fuzz.sh: installing cargo-fuzz into $CACHE/cargo-fuzz" >&2
  cargo install --quiet --locked cargo-fuzz@0.13.2 --root "$CACHE/cargo-fuzz"
fi

# Seeds: well-formed frames, a few broken ones, and JSON-RPC values.
seed() { # seed TARGET NAME CONTENT
  local dir="$CACHE/fuzz-corpus/$1"
  mkdir -p "$dir"
  printf '%b' "$3" >"$dir/seed-$2"
}
frame() { printf 'Content-Length: %d\r\n\r\n%s' "${#1}" "$1"; }
request='{"jsonrpc":"2.0","id":1,"method":"conversation/append","params":{"sessionId":"s","messages":[{"role":"user","content":"hi"}]}}'
seed frame_reader one "\x01\x00$(frame "$request")"
seed frame_reader two "\x07\x01$(frame '{"jsonrpc":"2.0","method":"initialized","params":{}}')$(frame "$request")"
seed frame_reader long "\x03\x00Content-Length: 200\r\n\r\n$request$(frame "$request")"
seed frame_reader type "\x05\x01Content-Type: x\r\n\r\n$request$(frame "$request")"
seed request_decoder request "$request"
seed request_decoder batch '[{"jsonrpc":"2.0","id":1.5,"method":"m"},{"id":"a"}]'
seed request_decoder response '{"jsonrpc":"2.0","id":"compactd-progress-1","result":null}'
# Odd but legitimate input: lone surrogates (read as U+FFFD), and nesting
# past the depth limit with the id after it (refused under that id).
lone='{"jsonrpc":"2.0","id":2,"method":"conversation/append","params":{"sessionId":"s","messages":[{"role":"user","content":"abc\\ud83d \\udc00 \\ud83d\\ude00"}]}}'
deep="{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":$(printf '[%.0s' {1..300})$(printf ']%.0s' {1..300}),\"id\":3}"
seed request_decoder lone "$lone"
seed request_decoder deep "$deep"
seed frame_reader lone "\x01\x00$(frame "$lone")"
seed frame_reader deep "\x09\x00$(frame "$deep")$(frame "$request")"
# mcp_framing: the first byte chooses the chunk size and the cap; then
# lines as an MCP client writes them, good and bad.
call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_history","arguments":{"query":"abc\\ud800"}}}'
seed mcp_framing lines "\x05{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n$call\n$call\n"
seed mcp_framing bad "\x83{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/ca\n\xff\xfe\n$(printf '[%.0s' {1..300})\n[{\"id\":3}]\n$call"

status=0
for target in "${TARGETS[@]}"; do
  echo "== cargo fuzz build $target" >&2
  if ! built=$(cargo fuzz build -O "$target" 2>&1); then
    printf '%s\n' "$built" | tail -n 40 >&2
    echo "fuzz.sh: $target does not build" >&2
    status=1
    continue
  fi
  printf '%s\n' "$built" | tail -n 1 >&2
  echo "== fuzz $target for ${SECONDS_PER_TARGET}s" >&2
  log="$CACHE/fuzz-$target.log"
  # -timeout makes an input that takes over 10 s (a hang) a failure too.
  if cargo fuzz run -O "$target" "$CACHE/fuzz-corpus/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -dict=fuzz/dict/frames.dict \
    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" >&2 || true
  else
    tail -n 40 "$log" >&2
    echo "fuzz.sh: $target failed; inputs in fuzz/artifacts/$target/, log in $log" >&2
    status=1
  fi
done
exit "$status"
