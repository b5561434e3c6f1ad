"""The READMEs' Python examples run as written, against the real binary
(found on PATH, as a user would have it), and the client's README names
every typed method the generator made."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from compactd_client import _api

PACKAGE = Path(__file__).resolve().parents[1]
REPO = PACKAGE.parents[1]
READMES = [REPO / "README.md", PACKAGE / "README.md"]


def python_blocks(readme: Path) -> List[str]:
    return re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)


def examples():
    for readme in READMES:
        for n, block in enumerate(python_blocks(readme)):
            yield pytest.param(block, id=f"{readme.relative_to(REPO)}#{n + 1}")


@pytest.mark.parametrize("code", list(examples()))
def test_the_readme_example_runs_as_written(code: str, binary: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{Path(binary).parent}{os.pathsep}{env.get('PATH', '')}"
    # A fresh user: no config, sessions in a scratch data directory.
    env["HOME"] = str(tmp_path)
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["PYTHONPATH"] = f"{PACKAGE / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{code}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"


def test_the_readme_names_every_typed_method() -> None:
    readme = (PACKAGE / "README.md").read_text()
    generated = {
        name
        for name in dir(_api.SyncMethods)
        if not name.startswith("_") and callable(getattr(_api.SyncMethods, name))
    }
    missing = sorted(name for name in generated if f"`{name}`" not in readme and f"`{name}(" not in readme)
    assert not missing, f"clients/python/README.md does not name: {missing}"
