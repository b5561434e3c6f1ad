"""Finding and vetting the binary."""

import os
from pathlib import Path

import pytest

from compactd_client import ServerCandidate, ServerNotFound, check_server_version, find_server


def executable(path: Path, script: str = "#!/bin/sh\necho 'compactd 9.9.9'\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(0o755)
    return path


def test_explicit_wins_then_path_then_bundled(tmp_path: Path) -> None:
    on_path = executable(tmp_path / "path" / "compactd")
    bundled = executable(tmp_path / "bundled" / "compactd")
    mine = executable(tmp_path / "mine" / "compactd")
    dirs = [str(bundled.parent)]
    search = os.pathsep.join(["", str(tmp_path / "empty"), str(on_path.parent)])
    assert find_server(str(mine), path_env=search, bundled_dirs=dirs) == ServerCandidate(str(mine), "explicit")
    assert find_server(path_env=search, bundled_dirs=dirs) == ServerCandidate(str(on_path), "PATH")
    assert find_server(path_env="", bundled_dirs=dirs) == ServerCandidate(str(bundled), "bundled")


def test_a_wrong_explicit_path_is_reported_not_replaced(tmp_path: Path) -> None:
    on_path = executable(tmp_path / "path" / "compactd")
    with pytest.raises(ServerNotFound, match=r"agent\.compactd is set to /nope/compactd, which is not an executable file"):
        find_server("/nope/compactd", path_env=str(on_path.parent), path_name="agent.compactd")
    not_executable = tmp_path / "plain"
    not_executable.write_text("")
    with pytest.raises(ServerNotFound, match="not an executable file"):
        find_server(str(not_executable))


def test_nothing_found_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ServerNotFound, match=r"compactd was not found: .*not on PATH, nor in /opt/x"):
        find_server(path_env=str(tmp_path), bundled_dirs=["/opt/x"])


def test_the_real_binary_passes_the_version_check(binary: str) -> None:
    assert check_server_version(ServerCandidate(binary, "explicit")).startswith("compactd ")


def test_a_binary_that_fails_or_is_not_compactd_is_refused(tmp_path: Path) -> None:
    broken = executable(tmp_path / "broken", "#!/bin/sh\necho 'error while loading shared libraries: libssl.so.3' >&2\nexit 127\n")
    with pytest.raises(ServerNotFound, match=r"is not usable: `--version` failed \(.*libssl"):
        check_server_version(ServerCandidate(str(broken), "PATH"))
    impostor = executable(tmp_path / "other", "#!/bin/sh\necho 'other 1.0'\n")
    with pytest.raises(ServerNotFound, match="is not compactd: `--version` printed 'other 1.0'"):
        check_server_version(ServerCandidate(str(impostor), "explicit"))
