"""The real compactd binary as pytest-lsp's server under test, in a
throwaway HOME and data directory."""

import os
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

REPO = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("COMPACTD_BIN", str(REPO / "target" / "debug" / "compactd"))
HOME = tempfile.mkdtemp(prefix="compactd-conformance-")


def server_env() -> dict:
    return {**os.environ, "HOME": HOME, "XDG_CONFIG_HOME": f"{HOME}/config", "COMPACTD_LOG": "warn"}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[BINARY, "--no-user-config"], server_env=server_env())
)
async def client(lsp_client: LanguageClient, tmp_path):
    # VS Code's capabilities: `window.workDoneProgress` included, so the
    # server may create progress tokens, and pytest-lsp checks it uses them
    # only once created.
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={
                "dataDir": str(tmp_path / "sessions"),
                "summarizer": {"provider": "test", "delayMs": 0},
            },
        )
    )
    yield
    await lsp_client.shutdown_session()
