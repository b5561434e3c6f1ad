"""The generated modules match schemas/, the check notices when they do not,
and the generated source is Python 3.9."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, get_type_hints

import pytest

from compactd_client import AsyncCompactdClient, CompactdClient, methods, types

PACKAGE = Path(__file__).resolve().parents[1]
GENERATOR = PACKAGE / "scripts" / "generate.py"
GENERATED = ["types.py", "methods.py", "_api.py"]


def generate(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True)


def test_the_committed_generated_files_match_schemas() -> None:
    run = generate("--check")
    assert run.returncode == 0, run.stderr


def scratch(tmp_path: Path) -> "tuple[Path, Path, Callable[[str, Callable[[Any], None]], None]]":
    root = tmp_path / "python"
    shutil.copytree(PACKAGE / "src", root / "src")
    schemas = tmp_path / "schemas"
    shutil.copytree(PACKAGE.parents[1] / "schemas", schemas)

    def edit(name: str, change: Callable[[Any], None]) -> None:
        data = json.loads((schemas / name).read_text())
        change(data)
        (schemas / name).write_text(json.dumps(data, indent=2))

    return root, schemas, edit


def test_a_changed_wire_type_makes_the_check_fail_and_regenerating_adds_it(tmp_path: Path) -> None:
    root, schemas, edit = scratch(tmp_path)
    edit("TokensNotification.json", lambda s: s["properties"].update(brandNewField={"type": "number"}))
    stale = generate("--check", "--root", str(root), "--schemas", str(schemas))
    assert stale.returncode == 1
    assert "types.py" in stale.stderr and "_api.py" not in stale.stderr
    assert generate("--root", str(root), "--schemas", str(schemas)).returncode == 0
    assert "    brandNewField: float\n" in (root / "src/compactd_client/types.py").read_text()


def test_a_new_method_in_the_table_gets_a_typed_function(tmp_path: Path) -> None:
    root, schemas, edit = scratch(tmp_path)
    row = {"constant": "BRAND_NEW", "name": "conversation/brandNew", "kind": "request", "lsp": False,
           "params": "PinParams", "result": "PinResult", "doc": "New."}
    edit("methods.json", lambda table: table["methods"].append(row))
    stale = generate("--check", "--root", str(root), "--schemas", str(schemas))
    assert stale.returncode == 1 and "methods.py" in stale.stderr and "_api.py" in stale.stderr
    assert generate("--root", str(root), "--schemas", str(schemas)).returncode == 0
    api = (root / "src/compactd_client/_api.py").read_text()
    assert "    async def brand_new(self, session_id: str, text: str) -> t.PinResult:\n" in api
    assert "return await self._request(m.BRAND_NEW, _params(sessionId=session_id, text=text))" in api


def test_a_method_of_compactds_own_without_types_is_refused(tmp_path: Path) -> None:
    root, schemas, edit = scratch(tmp_path)
    row = {"constant": "UNTYPED", "name": "conversation/untyped", "kind": "request", "lsp": False,
           "params": None, "result": None, "doc": "New."}
    edit("methods.json", lambda table: table["methods"].append(row))
    run = generate("--check", "--root", str(root), "--schemas", str(schemas))
    assert run.returncode == 2
    assert "conversation/untyped is compactd's own but methods.json gives no params type" in run.stderr


def test_two_schemas_that_define_one_type_differently_are_refused(tmp_path: Path) -> None:
    root, schemas, edit = scratch(tmp_path)
    edit("message.json", lambda s: s.update(description="Something else."))
    run = generate("--check", "--root", str(root), "--schemas", str(schemas))
    assert run.returncode == 2 and "schemas disagree on `Message`" in run.stderr


def test_every_method_of_the_table_is_generated_or_handled_by_the_client() -> None:
    by_hand = {
        methods.INITIALIZE, methods.INITIALIZED, methods.SHUTDOWN, methods.EXIT, methods.CANCEL_REQUEST,
        methods.SET_TRACE, methods.LOG_TRACE, methods.DID_CHANGE_CONFIGURATION,
        methods.WORK_DONE_PROGRESS_CREATE, methods.PROGRESS,
    }
    for client in (AsyncCompactdClient, CompactdClient):
        for method in methods.METHODS:
            name = method.constant.lower() + ("_" if method.constant == "IMPORT" else "")
            if method.params is None:
                assert method.name in by_hand, f"{method.name}: untyped and not handled by the client"
            elif method.kind == "serverNotification":
                assert callable(getattr(client, f"on_{name}")), method.name
            else:
                assert callable(getattr(client, name)), method.name
                if method.kind == "requestOrNotification":
                    assert callable(getattr(client, f"notify_{name}")), method.name


def test_the_types_resolve_and_messages_are_told_apart_by_role() -> None:
    hints = get_type_hints(types.AssistantMessage)
    assert set(types.AssistantMessage.__required_keys__) == {"role"}
    assert {"toolCalls", "usage", "id", "content"} <= set(hints)
    assert set(types.ToolMessage.__required_keys__) == {"role", "toolCallId"}
    for name in types.ROOT_TYPES:
        assert hasattr(types, name), name
    get_type_hints(types.Config)
    get_type_hints(types.DidCompactNotification)


@pytest.mark.parametrize("name", GENERATED + ["_client.py", "_sync.py", "_connection.py", "_framing.py", "_locate.py", "lsp.py", "errors.py", "_subscription.py", "__init__.py"])
def test_the_package_is_python_3_9(name: str) -> None:
    source = (PACKAGE / "src/compactd_client" / name).read_text()
    ast.parse(source, feature_version=(3, 9))
