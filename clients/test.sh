#!/usr/bin/env bash
# Builds and tests both client libraries against the real binary:
#   clients/typescript: npm ci, generated-file check, node --test, npm pack,
#     and the packed tarball installed into a scratch project and run;
#   clients/python: generated-file check and pytest on every Python >= 3.9
#     found (python3, and python3.9 when present), a wheel, and the wheel
#     installed into a fresh venv and run.
# Needs target/debug/compactd (or COMPACTD_BIN), node and npm, python3 with
# venv. The Python test tools (clients/python/requirements-test.txt, from
# PyPI) go into venvs cached in ~/.cache/compactd/clients-venv-<version>.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export COMPACTD_BIN="${COMPACTD_BIN:-$repo/target/debug/compactd}"
if [[ ! -x $COMPACTD_BIN ]]; then
  echo "no compactd at $COMPACTD_BIN: run cargo build first (or set COMPACTD_BIN)" >&2
  exit 1
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cache="${XDG_CACHE_HOME:-$HOME/.cache}/compactd"

echo "== clients/typescript: npm ci, npm test, npm pack"
if ! command -v npm >/dev/null; then
  echo "SKIP: clients/typescript (no npm)"
else
  (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm test && npm pack --silent --pack-destination "$scratch" >/dev/null)
  tarball=$(echo "$scratch"/compactd-client-*.tgz)
  tar -tzf "$tarball" | sort >"$scratch/contents"
  for want in package/package.json package/README.md package/out/src/index.js package/out/src/index.d.ts package/out/src/generated/api.js; do
    grep -qx "$want" "$scratch/contents" || { echo "npm pack: $want missing from $(basename "$tarball")" >&2; exit 1; }
  done
  if grep -E '^package/(out/test|src|scripts|test)/' "$scratch/contents"; then
    echo "npm pack: $(basename "$tarball") holds the files above, which are not the package's" >&2
    exit 1
  fi
  mkdir "$scratch/use-ts"
  (cd "$scratch/use-ts" && npm init -y >/dev/null && npm install --prefer-offline --no-audit --no-fund --loglevel=error "$tarball")
  (cd "$scratch/use-ts" && HOME="$scratch/use-ts" node -e '
    const { CompactdClient } = require("compactd-client");
    (async () => {
      const c = await CompactdClient.spawn({ path: process.env.COMPACTD_BIN, args: ["--no-user-config"] });
      const { sessionId } = await c.open({});
      const r = await c.append({ sessionId, messages: [{ role: "user", content: "hi" }] });
      if (r.ids.length !== 1) throw new Error("append: " + JSON.stringify(r));
      const exit = await c.close();
      if (exit.code !== 0) throw new Error("exit " + JSON.stringify(exit));
      console.log(`the packed compactd-client ran: ${c.version}, 1 message appended, exit 0`);
    })().catch((e) => { console.error(e); process.exit(1); });')
fi

echo "== clients/python: pytest, wheel, install in a fresh venv"
pythons=(python3)
py39=
for candidate in python3.9 "$HOME"/.pyenv/versions/3.9*/bin/python3.9; do
  if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 9)' 2>/dev/null; then py39=$candidate; break; fi
done
if [[ -n $py39 ]]; then pythons+=("$py39"); else echo "SKIP: the Python 3.9 run (no python3.9 on PATH or in ~/.pyenv)"; fi
for python in "${pythons[@]}"; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv="$cache/clients-venv-$version"
  [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r clients/python/requirements-test.txt
  echo "-- Python $version"
  (cd clients/python && "$venv/bin/python" -m pytest -q -p no:cacheprovider)
done
venv="$cache/clients-venv-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
# The pinned setuptools is in the venv, so the wheel builds without a network.
"$venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation --disable-pip-version-check -w "$scratch/wheel" clients/python
rm -rf clients/python/build clients/python/src/*.egg-info
wheel=$(echo "$scratch"/wheel/compactd_client-*.whl)
python3 -m venv "$scratch/fresh"
"$scratch/fresh/bin/python" -m pip install --quiet --no-index --disable-pip-version-check "$wheel"
(cd "$scratch" && WHEEL="$wheel" HOME="$scratch" "$scratch/fresh/bin/python" - <<'PY'
import importlib.resources, os
from compactd_client import CompactdClient
assert importlib.resources.files("compactd_client").joinpath("py.typed").is_file(), "py.typed is missing from the wheel"
with CompactdClient.spawn(os.environ["COMPACTD_BIN"], args=["--no-user-config"]) as compactd:
    session = compactd.open()["sessionId"]
    assert compactd.append(session, [{"role": "user", "content": "hi"}])["ids"] == ["m1"]
    version = compactd.version
print(f"the wheel {os.path.basename(os.environ['WHEEL'])} ran in a fresh venv: {version}, 1 message appended")
PY
)
echo "clients: both packages built and tested"
