"""Fixtures: the real compactd binary in a scratch HOME, the scripted model
server from tests/agents, and import paths for the agent and the client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for path in (HERE.parent, ROOT / "clients" / "python" / "src", ROOT / "tests" / "agents"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@pytest.fixture
def binary() -> str:
    binary = os.environ.get("COMPACTD_BIN") or str(ROOT / "target" / "debug" / "compactd")
    if not os.path.isfile(binary):
        pytest.fail(f"no compactd binary at {binary}: run `cargo build` at the repository root or set COMPACTD_BIN")
    return binary


@pytest.fixture
def server_env(tmp_path: Path) -> Dict[str, str]:
    """compactd's environment: a scratch HOME, so no user configuration or session leaks in or out."""
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
