"""Finding and vetting the compactd binary: an explicit path, else
`compactd` on PATH, else a bundled binary (directories the caller names)."""

import os
import re
import subprocess
import sys
from typing import NamedTuple, Optional, Sequence

from .errors import ServerNotFound


class ServerCandidate(NamedTuple):
    path: str
    #: "explicit", "PATH" or "bundled"
    source: str


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_server(
    path: Optional[str] = None,
    *,
    path_env: Optional[str] = None,
    bundled_dirs: Sequence[str] = (),
    path_name: str = "the compactd path",
) -> ServerCandidate:
    """The server to launch. An explicit `path` wins even when it is wrong
    (so the user hears about it); `path_name` is how errors call it."""
    exe = "compactd.exe" if sys.platform == "win32" else "compactd"
    explicit = (path or "").strip()
    if explicit:
        if not _is_executable(explicit):
            raise ServerNotFound(
                f"{path_name} is set to {explicit}, which is not an executable file. "
                "Fix it or clear it to use compactd from PATH."
            )
        return ServerCandidate(explicit, "explicit")
    search = os.environ.get("PATH", "") if path_env is None else path_env
    for directory in search.split(os.pathsep):
        if directory and _is_executable(os.path.join(directory, exe)):
            return ServerCandidate(os.path.join(directory, exe), "PATH")
    for directory in bundled_dirs:
        if _is_executable(os.path.join(directory, exe)):
            return ServerCandidate(os.path.join(directory, exe), "bundled")
    where = f", nor in {', '.join(bundled_dirs)}" if bundled_dirs else ""
    raise ServerNotFound(f"compactd was not found: set {path_name} or put compactd on PATH (it is not on PATH{where}).")


def check_server_version(candidate: ServerCandidate, timeout: float = 10.0) -> str:
    """Runs `<path> --version`; returns what it printed, or raises
    ServerNotFound naming the binary and why it is not usable."""
    where = f"{candidate.path} (from {candidate.source})"
    try:
        run = subprocess.run([candidate.path, "--version"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ServerNotFound(f"The compactd server at {where} is not usable: `--version` did not answer within {timeout} s.") from None
    except OSError as error:
        raise ServerNotFound(f"The compactd server at {where} is not usable: `--version` failed ({error}).") from None
    if run.returncode != 0:
        detail = " ".join((run.stderr or f"exit code {run.returncode}").strip().splitlines()[:3])
        raise ServerNotFound(f"The compactd server at {where} is not usable: `--version` failed ({detail}).")
    version = run.stdout.strip()
    if not re.match(r"^compactd\s+\S+", version):
        raise ServerNotFound(f"The program at {where} is not compactd: `--version` printed {version[:80]!r}.")
    return version
