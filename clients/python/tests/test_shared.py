"""A Python agent on a shared compactd (`compactd serve --listen`),
attached through `compactd connect` (the stdio bridge), while another
client follows its session."""

import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from conftest import PATIENCE, conversation

from compactd_client import CompactdClient


@pytest.fixture
def shared(binary: str, server_env: Dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """A running shared compactd; yields its discovery file."""
    discovery = tmp_path / "run" / "server.json"
    server = subprocess.Popen(
        [binary, "--no-user-config", "serve", "--listen", "127.0.0.1:0", "--discovery-file", str(discovery)],
        cwd=tmp_path,
        env=server_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    assert server.stdout.readline().startswith("compactd listening on ws://127.0.0.1:")
    try:
        yield discovery
    finally:
        server.terminate()
        assert server.wait(timeout=PATIENCE) == 0
        assert not discovery.exists(), "removed on a clean exit"


def test_an_agent_attached_through_connect_is_followed_by_another_client(binary: str, server_env: Dict[str, str], shared: Path) -> None:
    attach = {"path": binary, "args": ["--no-user-config", "connect", "--discovery-file", str(shared)], "env": server_env}
    with CompactdClient.spawn(**attach) as observer, CompactdClient.spawn(**attach) as agent:
        assert observer.subscribe("py-agent") == {"sessionId": "py-agent", "open": False}
        seen: List[Dict[str, Any]] = []
        arrived = threading.Event()

        def on_tokens(notification: Dict[str, Any]) -> None:
            if notification["sessionId"] == "py-agent" and notification["contextTokens"] > 0:
                seen.append(notification)
                arrived.set()

        observer.on_tokens(on_tokens)
        agent.open(session_id="py-agent", context_window=200000)
        appended = agent.append("py-agent", conversation(2))
        assert arrived.wait(PATIENCE)
        assert seen[0]["contextTokens"] == appended["meter"]["contextTokens"]
        # One session, shared: the observer reads what the agent appended.
        assert len(observer.history("py-agent")["messages"]) == len(conversation(2))
