"""Fixtures: the real compactd binary, each server in a scratch HOME so no
user configuration or session leaks in or out."""

import os
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: A bound on waiting, so a broken server fails a test instead of hanging it. Never used to wait for something to happen.
PATIENCE = 30.0


def server_binary() -> str:
    binary = os.environ.get("COMPACTD_BIN") or str(ROOT / "target" / "debug" / "compactd")
    if not os.path.isfile(binary):
        pytest.fail(f"no compactd binary at {binary}: run `cargo build` at the repository root or set COMPACTD_BIN")
    return binary


@pytest.fixture
def binary() -> str:
    return server_binary()


@pytest.fixture
def server_env(tmp_path: Path) -> Dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "COMPACTD_LOG": "debug",
    }


@pytest.fixture
def spawn_args(binary: str, server_env: Dict[str, str]) -> Dict[str, Any]:
    """What every test passes to spawn: the binary, no user config, a scratch HOME."""
    return {"path": binary, "args": ["--no-user-config"], "env": server_env}


def conversation(turns: int, tool_chars: int = 1200) -> List[Dict[str, Any]]:
    """A coding conversation of `turns` user/assistant/tool rounds (as the VS Code tests use)."""
    messages: List[Dict[str, Any]] = []
    for i in range(1, turns + 1):
        messages.append({"role": "user", "content": f"Step {i}: fix the failing test in src/module{i}.rs and explain why it failed."})
        messages.append(
            {
                "role": "assistant",
                "content": f"Reading src/module{i}.rs.",
                "toolCalls": [{"id": f"call{i}", "name": "read", "arguments": {"path": f"src/module{i}.rs"}}],
            }
        )
        line = f"fn item_{i}(x: u64) -> u64 {{ x.wrapping_mul({i}) + {i * 7} }} // module {i}\n"
        messages.append({"role": "tool", "toolCallId": f"call{i}", "toolName": "read", "content": line * (tool_chars // len(line) + 1)})
        messages.append({"role": "assistant", "content": f"Fixed item_{i}: the multiplier overflowed, so it now wraps."})
    return messages


@pytest.fixture
def slow_summarizer() -> Dict[str, Any]:
    """A configuration whose compactions take long enough to cancel (the `test` provider paces each chunk)."""
    return {"keepRecentTokens": 400, "summarizer": {"provider": "test", "delayMs": 30000}}


def pytest_sessionstart(session: Any) -> None:
    # Fail early, once, with the build hint rather than in every test.
    binary = os.environ.get("COMPACTD_BIN") or str(ROOT / "target" / "debug" / "compactd")
    if not os.path.isfile(binary):
        raise pytest.UsageError(f"no compactd binary at {binary}: run `cargo build` at the repository root or set COMPACTD_BIN")


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.rs").write_text("fn main() {}\n")
    yield root
