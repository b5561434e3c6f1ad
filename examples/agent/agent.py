#!/usr/bin/env python3
"""A minimal coding agent whose conversation lives in compactd.

It talks to any OpenAI-compatible `/chat/completions` endpoint (OpenAI,
OpenRouter, vLLM, llama.cpp's llama-server, Ollama, LM Studio…), gives the
model four tools (read_file, write_file, edit_file, bash) that work inside
one directory, and never builds a request itself: compactd keeps the
conversation, and every request sends what `conversation/history` returns.

    python3 agent.py --base-url http://127.0.0.1:8765/v1 --model smollm2 \\
        --context-window 4096 --workdir ~/proj "Rename foo to bar in src/"

The loop, once per model turn:

1. if the last append said `shouldCompact`, compact;
2. send `conversation/history` to the model;
3. a failed request goes to `conversation/reportError`: an overflow
   compacts and is retried (when compactd's recovery could not shrink the
   history, because the model counts more tokens than compactd did, the
   agent compacts once more keeping nothing verbatim); anything else is
   an error;
4. append the answer (with the provider's usage, so the meter is exact);
5. run the tool calls and append their results.

Standard library only, plus `compactd_client` (clients/python).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from compactd_client import CompactdClient

SYSTEM_PROMPT = (
    "You are a coding agent working in a repository. Use the tools to read files, edit them "
    "and run commands; paths are relative to the repository root. When the task is done, "
    "answer with a short report and no tool call."
)

TOOLS: List[Dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create or overwrite a file with the given content.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace the one occurrence of old_text in a file with new_text.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
                "required": ["path", "old_text", "new_text"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command in the repository root; returns its output and exit code.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
]

#: How many times in a row one turn may be retried after an overflow.
MAX_OVERFLOW_RETRIES = 3


class ModelError(RuntimeError):
    """The model endpoint refused a request for a reason other than its length."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"the model answered HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


@dataclass
class Stats:
    """What one run did, for logs and tests."""

    turns: int = 0
    requests: int = 0
    overflows: int = 0
    tool_calls: int = 0
    #: Every compaction compactd reported (manual, threshold, overflow).
    compactions: List[Dict[str, Any]] = field(default_factory=list)
    #: The meter (compactd's contextTokens) before each request.
    meter_before_request: List[int] = field(default_factory=list)
    #: Why compactions the loop asked for changed nothing.
    not_compacted: List[str] = field(default_factory=list)
    #: What conversation/reportError said about each failed request.
    verdicts: List[Dict[str, Any]] = field(default_factory=list)
    #: Files the tools wrote or edited, in the order first changed.
    modified_files: List[str] = field(default_factory=list)


class Tools:
    """The four tools, confined to `root`. Outputs longer than `max_chars` keep their head and tail."""

    def __init__(self, root: Path, max_chars: int = 8000, timeout: float = 60.0) -> None:
        self.root = root.resolve()
        self.max_chars = max_chars
        self.timeout = timeout

    def run(self, name: str, args: Dict[str, Any]) -> "tuple[str, bool]":
        """(output, is_error)."""
        try:
            handler = getattr(self, "_" + name, None)
            if handler is None:
                return f"unknown tool {name!r}", True
            return self._clip(handler(**args)), False
        except TypeError as e:
            return f"bad arguments for {name}: {e}", True
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            return f"{name} failed: {e}", True

    def _path(self, path: str) -> Path:
        full = (self.root / path).resolve()
        if full != self.root and self.root not in full.parents:
            raise ValueError(f"{path} is outside the repository")
        return full

    def _read_file(self, path: str) -> str:
        return self._path(path).read_text(encoding="utf-8", errors="replace")

    def _write_file(self, path: str, content: str) -> str:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"

    def _edit_file(self, path: str, old_text: str, new_text: str) -> str:
        target = self._path(path)
        text = target.read_text(encoding="utf-8")
        count = text.count(old_text)
        if count != 1:
            raise ValueError(f"old_text occurs {count} times in {path}; it must occur exactly once")
        target.write_text(text.replace(old_text, new_text), encoding="utf-8")
        return f"edited {path}"

    def _bash(self, command: str) -> str:
        done = subprocess.run(
            ["bash", "-c", command], cwd=self.root, capture_output=True, text=True, timeout=self.timeout
        )
        return f"{done.stdout}{done.stderr}\n(exit code {done.returncode})"

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        half = self.max_chars // 2
        return f"{text[:half]}\n… [{len(text) - 2 * half} characters omitted] …\n{text[-half:]}"


def to_openai(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """compactd's history as Chat Completions messages."""
    out: List[Dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant":
            msg: Dict[str, Any] = {"role": "assistant", "content": m.get("content") or None}
            calls = m.get("toolCalls") or []
            if calls:
                msg["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                    for c in calls
                ]
            out.append(msg)
        elif m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["toolCallId"], "content": m.get("content", "")})
        else:
            out.append({"role": m["role"], "content": m.get("content", "")})
    return out


def from_openai(message: Dict[str, Any], usage: Optional[Dict[str, Any]], model: str) -> Dict[str, Any]:
    """A Chat Completions answer as a compactd assistant message, with its usage."""
    calls = []
    for c in message.get("tool_calls") or []:
        raw = c.get("function", {}).get("arguments") or "{}"
        try:
            arguments = json.loads(raw)
        except ValueError:
            arguments = {"_unparsed": raw}
        calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": arguments})
    out: Dict[str, Any] = {"role": "assistant", "content": message.get("content") or "", "model": model}
    if calls:
        out["toolCalls"] = calls
    if usage:
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        out["usage"] = {
            "input": max(0, usage.get("prompt_tokens", 0) - cached),
            "cacheRead": cached,
            "output": usage.get("completion_tokens", 0),
        }
    return out


class ChatEndpoint:
    """POSTs to `{base_url}/chat/completions`; the key comes from the environment only."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, timeout: float = 300.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.timeout = timeout

    def post(self, body: Dict[str, Any]) -> "tuple[int, str]":
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")


class Agent:
    """One task, one compactd session: `run(task)` loops until the model answers without a tool call."""

    def __init__(
        self,
        compactd: CompactdClient,
        endpoint: ChatEndpoint,
        tools: Tools,
        *,
        model: str,
        context_window: int,
        max_tokens: int = 1024,
        offer_tools: bool = True,
        request_options: Optional[Dict[str, Any]] = None,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.compactd = compactd
        self.endpoint = endpoint
        self.tools = tools
        self.model = model
        self.max_tokens = max_tokens
        self.offer_tools = offer_tools
        self.request_options = dict(request_options or {})
        self.log = log
        self.stats = Stats()
        self._lock = threading.Lock()
        opened = compactd.open(
            model=model,
            context_window=context_window,
            system_prompt=SYSTEM_PROMPT,
            tool_definitions=TOOLS if offer_tools else None,
        )
        self.session: str = opened["sessionId"]
        # The loop compacts between turns, where it can wait for the result;
        # compactd's background auto-compaction would race with it.
        compactd.set_auto_compact(self.session, False)
        self._should_compact = False
        self._compacting_because: Optional[str] = None
        self._subscription = compactd.on_did_compact(self._on_did_compact)

    def _on_did_compact(self, event: Dict[str, Any]) -> None:
        if event.get("sessionId") != self.session or not event.get("compacted"):
            return
        with self._lock:
            record = {k: event.get(k) for k in ("trigger", "tokensBefore", "tokensAfter", "messagesSummarized", "summary", "strategy")}
            # Why the loop compacted: shouldCompact, an overflow, or (with no
            # reason of the loop's) whatever the server says, e.g. `manual`.
            record["why"] = self._compacting_because or event.get("trigger")
            record["modifiedBefore"] = list(self.stats.modified_files)
            record["afterTurn"] = self.stats.turns
            self.stats.compactions.append(record)
        self.log(f"compacted ({event.get('trigger')}): {event.get('tokensBefore')} → {event.get('tokensAfter')} tokens")

    def run(self, task: str, files: Sequence[str] = (), max_turns: int = 200) -> str:
        """Sends the task and works until the model stops calling tools; returns its last answer.

        `files` are read with the read_file tool before the first request, the
        call and its result put in the conversation (as agents do with files
        the user mentions), so the model starts with them."""
        self._append([{"role": "user", "content": task}, *self._attachments(files)])
        for _ in range(max_turns):
            answer = self._turn()
            calls = answer.get("toolCalls") or []
            if not calls:
                return answer.get("content", "")
            self._append([self._run_tool(call) for call in calls])
        raise RuntimeError(f"no final answer after {max_turns} turns")

    def _attachments(self, files: Sequence[str]) -> List[Dict[str, Any]]:
        if not files:
            return []
        calls = [{"id": f"attach_{self.stats.tool_calls + i}", "name": "read_file", "arguments": {"path": p}} for i, p in enumerate(files)]
        results = [self._run_tool(call) for call in calls]
        return [{"role": "assistant", "content": "", "toolCalls": calls}, *results]

    def _run_tool(self, call: Dict[str, Any]) -> Dict[str, Any]:
        args = call.get("arguments") or {}
        output, is_error = self.tools.run(call["name"], args)
        self.stats.tool_calls += 1
        path = args.get("path")
        if call["name"] in ("write_file", "edit_file") and not is_error and path not in self.stats.modified_files:
            self.stats.modified_files.append(path)
        return {"role": "tool", "toolCallId": call["id"], "toolName": call["name"], "content": output, "isError": is_error}

    def _append(self, messages: List[Dict[str, Any]]) -> None:
        result = self.compactd.append(self.session, messages)  # type: ignore[arg-type]
        self._should_compact = result["shouldCompact"]

    def _turn(self) -> Dict[str, Any]:
        """One model turn: compact when due, send the history, handle an overflow, append the answer."""
        for _attempt in range(MAX_OVERFLOW_RETRIES + 1):
            if self._should_compact:
                result = self._compact("shouldCompact")
                if not result["compacted"]:
                    self.stats.not_compacted.append(result.get("reason", ""))
                    self.log(f"compaction not applied: {result.get('reason')}")
                self._should_compact = False
            history = self.compactd.history(self.session)
            self.stats.meter_before_request.append(history["meter"]["contextTokens"])
            body: Dict[str, Any] = {
                **self.request_options,
                "model": self.model,
                "messages": to_openai(history["messages"]),
                "max_tokens": self.max_tokens,
            }
            if self.offer_tools:
                body["tools"] = TOOLS
            self.stats.requests += 1
            status, text = self.endpoint.post(body)
            if status == 200:
                data = json.loads(text)
                answer = from_openai(data["choices"][0]["message"], data.get("usage"), self.model)
                self._append([answer])
                self.stats.turns += 1
                return answer
            self._compacting_because = "overflow"
            verdict = self.compactd.report_error(self.session, text, status=status)
            self._compacting_because = None
            self.stats.verdicts.append({k: verdict.get(k) for k in ("kind", "overflow", "retry")})
            self.log(f"model answered {status}: {verdict['kind']}, retry={verdict['retry']}")
            if not verdict["overflow"]:
                raise ModelError(status, text)
            self.stats.overflows += 1
            if not verdict["retry"] and not self._compact_harder():
                raise ModelError(status, text)
        raise ModelError(status, text)

    def _compact_harder(self) -> bool:
        """compactd chose what to keep by its own count, and the model counts more (another
        tokenizer): when that recovery could not shrink the history, keep nothing verbatim."""
        return bool(self._compact("overflow, keeping nothing", keep_recent_tokens=0)["compacted"])

    def _compact(self, why: str, **options: Any) -> Dict[str, Any]:
        self._compacting_because = why
        try:
            return dict(self.compactd.compact(self.session, **options))
        finally:
            self._compacting_because = None

    def close(self) -> None:
        self._subscription.dispose()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible base URL, with /v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--context-window", type=int, required=True, help="the model's window, in tokens")
    parser.add_argument("--keep-recent-tokens", type=int, default=None, help="newest tokens kept verbatim by each compaction")
    parser.add_argument("--workdir", default=".", help="the repository the tools work in")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the NAME of the variable holding the API key")
    parser.add_argument("--compactd", default=None, help="path to the compactd binary (default: PATH)")
    args = parser.parse_args(argv)
    configuration: Dict[str, Any] = {}
    if args.keep_recent_tokens is not None:
        configuration["keepRecentTokens"] = args.keep_recent_tokens
    endpoint = ChatEndpoint(args.base_url, os.environ.get(args.api_key_env))
    with CompactdClient.spawn(args.compactd, configuration=configuration, workspace_folders=[args.workdir]) as compactd:
        agent = Agent(
            compactd, endpoint, Tools(Path(args.workdir)), model=args.model, context_window=args.context_window,
            log=lambda line: print(line, file=sys.stderr),
        )
        print(agent.run(args.task))
        s = agent.stats
        print(f"{s.turns} turns, {s.tool_calls} tool calls, {len(s.compactions)} compactions, {s.overflows} overflows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
