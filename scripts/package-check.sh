#!/usr/bin/env bash
# Every package compactd ships, built as it would be published, without
# publishing: the crate (`cargo package`, verified by building it from the
# packaged files), the Python client (`python -m build`: sdist and wheel),
# the TypeScript client and the pi extension (`npm pack`). Checks that each
# holds what it needs and nothing else, carries the license, and has the
# server's version. (The VS Code extension's .vsix is built and run in its
# own step of scripts/test.sh.) Then, on clean copies of the tree (no
# node_modules, no out/): `npm install <path>` of clients/typescript, and
# the README's VS Code lines. Needs cargo, python3 with venv, npm; run
# after `npm ci` in clients/typescript and integrations/pi.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package-check: $*" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
echo "== versions: every package is $version, as the server"
for manifest in clients/typescript/package.json editors/vscode/package.json integrations/pi/package.json; do
  got=$(node -p "require('./$manifest').version")
  [[ $got == "$version" ]] || fail "$manifest is $got, not $version"
  [[ $(node -p "require('./$manifest').license") == MIT ]] || fail "$manifest: license is not MIT"
done
got=$(sed -n 's/^version = "\(.*\)"/\1/p' clients/python/pyproject.toml)
[[ $got == "$version" ]] || fail "clients/python/pyproject.toml is $got, not $version"
for copy in clients/python clients/typescript editors/vscode integrations/pi; do
  cmp -s LICENSE "$copy/LICENSE" || fail "$copy/LICENSE differs from LICENSE"
done

echo "== cargo package: the binary's sources only, built from the package"
cargo package --allow-dirty --quiet 2>"$scratch/cargo.log" || { cat "$scratch/cargo.log" >&2; fail "cargo package failed"; }
cargo package --allow-dirty --list 2>/dev/null >"$scratch/crate"
extra=$(grep -vE '^(src/.*\.(rs|md)|integrations/opencode/compactd\.ts|integrations/pi/dist/compactd-pi\.js|Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|README\.md|LICENSE|\.cargo_vcs_info\.json)$' "$scratch/crate" || true)
[[ -z $extra ]] || fail "the crate ships files it does not need: $extra"
grep -qx 'src/main.rs' "$scratch/crate" || fail "src/main.rs is not in the crate"
echo "$(wc -l <"$scratch/crate") files"

echo "== python -m build: sdist and wheel of clients/python"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/compactd/package-venv"
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check build==1.3.0 setuptools==80.9.0
"$venv/bin/python" -m build --no-isolation --outdir "$scratch/python" clients/python >/dev/null
rm -rf clients/python/build clients/python/src/*.egg-info
sdist=$(echo "$scratch"/python/compactd_client-"$version".tar.gz)
wheel=$(echo "$scratch"/python/compactd_client-"$version"-py3-none-any.whl)
[[ -f $sdist && -f $wheel ]] || fail "expected $sdist and $wheel, got: $(ls "$scratch/python")"
# (Listed to a file: `grep -q` would close the pipe under pipefail.)
tar -tzf "$sdist" >"$scratch/sdist"
grep -q "/LICENSE$" "$scratch/sdist" || fail "the sdist has no LICENSE"
grep -q "/src/compactd_client/py.typed$" "$scratch/sdist" || fail "the sdist has no py.typed"
"$venv/bin/python" - "$wheel" <<'PY' || fail "the wheel's metadata"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
metadata = zipfile.ZipFile(sys.argv[1]).read(next(n for n in names if n.endswith("METADATA"))).decode()
assert "License-Expression: MIT" in metadata, metadata[:400]
assert any(n.endswith("licenses/LICENSE") for n in names), names
assert "compactd_client/py.typed" in names and not any(n.startswith("tests/") for n in names), names
PY

echo "== npm pack: clients/typescript and integrations/pi"
(cd clients/typescript && npm pack --silent --pack-destination "$scratch" >/dev/null)
tar -tzf "$scratch/compactd-client-$version.tgz" | sort >"$scratch/ts"
for want in package/LICENSE package/README.md package/out/src/index.js package/out/src/index.d.ts; do
  grep -qx "$want" "$scratch/ts" || fail "compactd-client: $want missing"
done
! grep -E '^package/(src|test|out/test|scripts)/' "$scratch/ts" || fail "compactd-client ships its sources or tests"
(cd integrations/pi && npm pack --silent --pack-destination "$scratch" >/dev/null)
tar -tzf "$scratch/compactd-pi-$version.tgz" | sort >"$scratch/pi"
# pi loads the TypeScript itself; compactd-client (not on npm yet) and its
# dependencies travel bundled.
for want in package/LICENSE package/src/index.ts package/node_modules/compactd-client/out/src/index.js \
  package/node_modules/compactd-client/node_modules/ws/package.json package/node_modules/vscode-jsonrpc/package.json; do
  grep -qx "$want" "$scratch/pi" || fail "compactd-pi: $want missing"
done
! grep -E '^package/(test|out)/' "$scratch/pi" || fail "compactd-pi ships its tests"
echo "== npm install <path>: compactd-client from a clean copy of the tree (no node_modules, no out/)"
git archive HEAD clients/typescript | tar -x -C "$scratch"
cp clients/typescript/scripts/prepare.mjs "$scratch/clients/typescript/scripts/prepare.mjs"
mkdir -p "$scratch/consumer"
(cd "$scratch/consumer" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "$scratch/clients/typescript" >/dev/null 2>"$scratch/install.log") ||
  { cat "$scratch/install.log" >&2; fail "npm install of a clean clients/typescript failed"; }
(cd "$scratch/consumer" && node -e "if (typeof require('compactd-client').CompactdClient !== 'function') process.exit(1)") ||
  fail "compactd-client installed from a path does not load"
echo "== the README's VS Code lines on a clean copy: npm ci && npm run package:linux-x64 in editors/vscode"
git archive HEAD editors/vscode schemas | tar -x -C "$scratch"
bin=target/release/compactd
[[ -x $bin ]] || bin=target/debug/compactd
[[ -x $bin ]] || cargo build --quiet
bin=$(realpath "$bin")
(cd "$scratch/editors/vscode" && npm ci --no-audit --no-fund --loglevel=error >"$scratch/vscode.log" 2>&1 &&
  COMPACTD_RELEASE_BIN="$bin" npm run package:linux-x64 >>"$scratch/vscode.log" 2>&1) ||
  { cat "$scratch/vscode.log" >&2; fail "the README's VS Code lines failed on a clean copy"; }
[[ -f $scratch/editors/vscode/compactd-linux-x64.vsix ]] || fail "no compactd-linux-x64.vsix"
echo "package-check: every package builds, with the license and version $version"
