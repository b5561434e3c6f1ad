"""Helpers for tests that drive real agents against scripted_model.py.

Python 3 stdlib only, so any test (smoke.py here, a client library's tests,
an example agent's tests) can import it by path:

    sys.path.insert(0, "<repo>/tests/agents"); import harness

    with harness.ScriptedModel("scenarios/pi-tools.json", log=tmp / "requests.jsonl") as model:
        home = harness.pi_home(tmp / "home", model.url)
        harness.run_pi(["-p", "edit a.txt"], cwd=workspace, home=home)
        requests = model.requests()
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
CLAUDE = BIN / "claude"
PI = BIN / "pi"
PI_MODEL = "scripted-model"
GEMINI = BIN / "gemini"
GEMINI_MODEL = "gemini-2.5-pro"


class ScriptedModel:
    """Runs scripted_model.py on a free port for the length of a `with` block."""

    def __init__(self, scenario, log, variables=None):
        self.scenario = Path(scenario)
        self.log = Path(log)
        self.variables = variables or {}
        self.url = None
        self.process = None

    def __enter__(self):
        args = [sys.executable, str(HERE / "scripted_model.py"), "--scenario", str(self.scenario), "--log", str(self.log)]
        for name, value in self.variables.items():
            args += ["--var", f"{name}={value}"]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The first stdout line is printed once the socket listens: no polling needed.
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.process.wait(timeout=5)
            raise RuntimeError(f"scripted_model.py did not start: {self.process.stderr.read().strip()}")
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.process.stdout.close()
        self.process.stderr.close()

    def requests(self):
        """Every request the server received so far, in order (see README.md for the fields)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def agents_installed():
    """None when the agents smoke.py drives are installed, else the reason a test should skip."""
    missing = [p.name for p in (CLAUDE, PI, GEMINI) if not p.exists()]
    return f"missing {', '.join(missing)}: run `npm ci` in {HERE}" if missing else None


# ---------------------------------------------------------------- Claude Code


def claude_env(home, url, config_dir=None):
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="sk-ant-scripted-0000000000000000000000",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    env.pop("CLAUDE_CONFIG_DIR", None)
    if config_dir:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return env


def run_claude(args, cwd, home, url, timeout=120, config_dir=None):
    return subprocess.run([str(CLAUDE), *args], cwd=cwd, env=claude_env(home, url, config_dir), capture_output=True, text=True, timeout=timeout)


def claude_project_dir(config_root, cwd):
    """Where Claude Code keeps transcripts for cwd: projects/<cwd, every non [A-Za-z0-9] UTF-16 unit as '-'>.

    Names longer than 200 characters are cut to 200 and get '-' + a base-36 hash (see the findings notes).
    """
    real = os.path.realpath(cwd)
    units = real.encode("utf-16-le")
    name = "".join(
        chr(code) if chr(code).isascii() and chr(code).isalnum() else "-"
        for code in (int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2))
    )
    if len(name) > 200:
        name = name[:200] + "-" + _base36(abs(_java_string_hash(real)))
    return Path(config_root) / "projects" / name


def _java_string_hash(text):
    h = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


# ---------------------------------------------------------------- pi


def pi_home(home, url, context_window=16000, max_tokens=2000, settings=None):
    """A HOME whose ~/.pi/agent points pi at the scripted server as an OpenAI-compatible provider."""
    agent = Path(home) / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "scripted": {
                "baseUrl": url + "/v1",
                "api": "openai-completions",
                "apiKey": "scripted-key",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": PI_MODEL, "contextWindow": context_window, "maxTokens": max_tokens}],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models, indent=2))
    base = {"defaultProvider": "scripted", "defaultModel": PI_MODEL}
    (agent / "settings.json").write_text(json.dumps({**base, **(settings or {})}, indent=2))
    return Path(home)


def run_pi(args, cwd, home, timeout=120, env=None):
    full_env = dict(os.environ, HOME=str(home), PI_OFFLINE="1", **(env or {}))
    full_env.pop("PI_CODING_AGENT_DIR", None)
    full_env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    return subprocess.run([str(PI), *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def pi_session_dir(home, cwd):
    """pi's sessions folder for cwd: --<cwd without its leading '/', with '/', '\\' and ':' as '-'>--."""
    real = os.path.realpath(cwd)
    return Path(home) / ".pi" / "agent" / "sessions" / ("--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", real)) + "--")


# ---------------------------------------------------------------- Gemini CLI


def gemini_home(home, settings=None):
    """A HOME whose ~/.gemini/settings.json picks the API-key auth (with
    GOOGLE_GEMINI_BASE_URL alone, Gemini CLI 0.61 picks a "gateway" auth that
    -p refuses), plus `settings` (e.g. {"model": {"compressionThreshold": 0.0002}})."""
    gemini = Path(home) / ".gemini"
    gemini.mkdir(parents=True, exist_ok=True)
    base = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (gemini / "settings.json").write_text(json.dumps({**base, **(settings or {})}, indent=2))
    return Path(home)


def gemini_env(home, url):
    env = dict(os.environ, HOME=str(home), GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY="scripted-key")
    env.pop("GEMINI_CLI_HOME", None)
    return env


def run_gemini(args, cwd, home, url, timeout=120):
    """gemini -m GEMINI_MODEL (a fixed model: "auto" would ask a router model first) --skip-trust --yolo ARGS."""
    command = [str(GEMINI), "-m", GEMINI_MODEL, "--skip-trust", "--yolo", *args]
    # stdin closed: with -p it reads a stdin that is not a terminal into the prompt.
    return subprocess.run(command, cwd=cwd, env=gemini_env(home, url), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def gemini_chats_dir(home, cwd):
    """Where Gemini CLI keeps cwd's sessions: ~/.gemini/tmp/<the project's short id in ~/.gemini/projects.json>/chats."""
    gemini = Path(home) / ".gemini"
    projects = json.loads((gemini / "projects.json").read_text())["projects"]
    return gemini / "tmp" / projects[os.path.abspath(cwd)] / "chats"


# ---------------------------------------------------------------- requests


def orphaned_tool_results(request):
    """Tool-result ids in a logged request that answer no earlier tool call of that request."""
    body, api = request.get("body") or {}, request.get("api")
    calls, orphans = set(), []
    if api == "anthropic":
        for m in body.get("messages", []):
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    calls.add(block["id"])
                elif block.get("type") == "tool_result" and block.get("tool_use_id") not in calls:
                    orphans.append(block.get("tool_use_id"))
    elif api == "chat":
        for m in body.get("messages", []):
            calls.update(c["id"] for c in m.get("tool_calls") or [])
            if m.get("role") == "tool" and m.get("tool_call_id") not in calls:
                orphans.append(m.get("tool_call_id"))
    elif api == "gemini":
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if "functionCall" in part:
                    calls.add(part["functionCall"].get("id"))
                elif "functionResponse" in part and part["functionResponse"].get("id") not in calls:
                    orphans.append(part["functionResponse"].get("id"))
    elif api == "responses":
        for item in body.get("input") or []:
            if item.get("type") == "function_call":
                calls.add(item.get("call_id"))
            elif item.get("type") == "function_call_output" and item.get("call_id") not in calls:
                orphans.append(item.get("call_id"))
    return orphans


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
