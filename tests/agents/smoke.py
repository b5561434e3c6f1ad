#!/usr/bin/env python3
"""Smoke test: the scripted server speaks each API, and drives the real Claude Code, pi and Gemini CLI.

    python3 tests/agents/smoke.py            # after `npm ci` in tests/agents

Prints one line per check and closes with 'N passed, N failed'. The agent checks
skip (with the reason) when tests/agents/node_modules is missing; the server
checks always run.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

import harness

SCENARIOS = harness.HERE / "scenarios"


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sse_events(text):
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


def make_workspace(root):
    ws = Path(root) / "work space.d" / "proj_1"
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    (ws / "src" / "b.py").write_text("def f():\n    return 1\n")
    return ws


# ---------------------------------------------------------------- checks


def check_server_apis(tmp):
    """Each API answers the scripted turn in its own wire shape; matching, errors and the log work."""
    scenario = Path(tmp) / "s.json"
    scenario.write_text(json.dumps({
        "turns": [
            {"reply": {"text": "hi", "tool_calls": [{"id": "t1", "name": "Read", "arguments": {"file_path": "${W}/a"}}], "usage": {"input": 7, "output": 3, "cache_read": 5}}},
            {"match": {"tool_result_for": "t1"}, "reply": {"text": "after tool"}},
            {"match": {"compaction": True}, "repeat": True, "reply": {"text": "SUMMARY"}},
            {"match": {"last_user_contains": "overflow"}, "error": {"status": 400, "body": {"error": {"message": "too long"}}}},
            {"match": {"api": "chat"}, "repeat": True, "reply": {"tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}}], "usage": {"input": 10, "output": 2}}},
            {"match": {"api": "responses"}, "reply": {"text": "resp text"}},
        ]
    }))
    with harness.ScriptedModel(scenario, Path(tmp) / "log.jsonl", {"W": "/ws"}) as m:
        status, text = post(m.url + "/v1/messages?beta=true", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]})
        events = sse_events(text)
        kinds = [e["type"] for e in events]
        assert status == 200 and kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
        tool_start = next(e for e in events if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use")
        partial = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta")
        assert tool_start["content_block"]["id"] == "t1" and json.loads(partial) == {"file_path": "/ws/a"}, partial
        delta = next(e for e in events if e["type"] == "message_delta")
        assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["cache_read_input_tokens"] == 5, delta

        answer = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}]
        status, text = post(m.url + "/v1/messages", {"model": "m", "messages": answer})
        assert status == 200 and json.loads(text)["content"][0]["text"] == "after tool", text

        status, text = post(m.url + "/v1/messages", {"model": "m", "system": "Your task is to create a detailed summary of the conversation so far", "messages": answer})
        assert json.loads(text)["content"][0]["text"] == "SUMMARY", text
        status, text = post(m.url + "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "overflow please"}]})
        assert status == 400 and json.loads(text)["error"]["message"] == "too long", (status, text)

        status, text = post(m.url + "/v1/chat/completions", {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "messages": [{"role": "user", "content": "go"}]})
        chunks = sse_events(text)
        assert text.rstrip().endswith("data: [DONE]") and chunks[-1]["usage"]["prompt_tokens"] == 10, chunks[-1]
        args = "".join(c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("arguments", "") for c in chunks if c["choices"])
        assert json.loads(args) == {"path": "a"} and chunks[-2]["choices"][0]["finish_reason"] == "tool_calls", chunks[-2]
        status, text = post(m.url + "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "go"}]})
        assert json.loads(text)["choices"][0]["message"]["tool_calls"][0]["id"] == "c1", text

        status, text = post(m.url + "/v1/responses", {"model": "m", "stream": True, "input": "go"})
        events = sse_events(text)
        assert events[-1]["type"] == "response.completed" and events[-1]["response"]["output"][0]["content"][0]["text"] == "resp text", events[-1]
        status, text = post(m.url + "/v1/responses", {"model": "m", "input": "again"})
        assert json.loads(text)["output"][0]["content"][0]["text"] == "(scripted server: no turn left)", text

        status, text = post(m.url + "/v1/messages/count_tokens", {"model": "m", "messages": []})
        assert status == 200 and json.loads(text)["input_tokens"] > 0, text
        with urllib.request.urlopen(m.url + "/v1/models", timeout=10) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "scripted-model"
        status, _ = post(m.url + "/v1/nope", {})
        assert status == 404
        log = m.requests()
    assert [r.get("turn") for r in log if r.get("api") in ("anthropic", "chat", "responses")] == [0, 1, 2, 3, 4, 4, 5, None], log
    assert log[2]["compaction"] is True and log[-4]["unmatched"] is True and log[-1]["status"] == 404
    assert harness.orphaned_tool_results(log[1]) == [] and harness.orphaned_tool_results({"api": "chat", "body": {"messages": [{"role": "tool", "tool_call_id": "zz"}]}}) == ["zz"]


def check_server_validation(tmp):
    """Requests a real provider refuses are refused with its status and words, logged with the reason, and use no turn."""
    scenario = Path(tmp) / "v.json"
    scenario.write_text(json.dumps({"context_window": 100, "turns": [{"repeat": True, "reply": {"text": "ok"}}]}))
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    refused = [
        ("chat", [{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}], "must be a response to a preceeding message with 'tool_calls'"),
        ("chat", [{"role": "user", "content": "go"}, call, {"role": "user", "content": "next"}], "did not have response messages: c1"),
        ("chat", [{"role": "user", "content": "go"}, call], "did not have response messages: c1"),
        ("chat", [{"role": "user", "content": "x" * 800}], "maximum context length is 100 tokens"),
        ("anthropic", [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}], "unexpected `tool_use_id` found in `tool_result` blocks: t9"),
        ("anthropic", [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}, {"role": "user", "content": "next"}], "without `tool_result` blocks immediately after: t1"),
        ("anthropic", [{"role": "user", "content": "y" * 800}], "prompt is too long"),
        ("responses", [{"type": "function_call_output", "call_id": "f9", "output": "x"}], "No tool call found for function call output with call_id f9"),
        ("responses", [{"type": "function_call", "call_id": "f1", "name": "r", "arguments": "{}"}], "No tool output found for function call f1"),
    ]
    accepted = [
        ("chat", [{"role": "user", "content": "go"}, call, {"role": "tool", "tool_call_id": "c1", "content": "x"}]),
        ("anthropic", [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
                       {"role": "system", "content": "env"}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}]),
        ("responses", [{"type": "function_call", "call_id": "f1", "name": "r", "arguments": "{}"}, {"type": "function_call_output", "call_id": "f1", "output": "x"}]),
    ]
    paths = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}
    with harness.ScriptedModel(scenario, Path(tmp) / "log.jsonl") as m:
        for api, messages, words in refused:
            status, text = post(m.url + paths[api], {"model": "m", ("input" if api == "responses" else "messages"): messages})
            assert status == 400 and words in json.loads(text)["error"]["message"], (api, status, text)
        for api, messages in accepted:
            status, text = post(m.url + paths[api], {"model": "m", ("input" if api == "responses" else "messages"): messages})
            assert status == 200, (api, status, text)
        log = m.requests()
    assert [r.get("rejected") for r in log] == ["tool_sequence"] * 3 + ["context_window"] + ["tool_sequence"] * 2 + ["context_window"] + ["tool_sequence"] * 2 + [None] * 3, log
    assert [r["turn"] for r in log[-3:]] == [0, 0, 0] and all(r["turn"] is None for r in log[:-3])
    check_thinking_rule(tmp)


def check_thinking_rule(tmp):
    """With extended thinking on, a tool-use loop must send the calling assistant message back starting with its signed thinking block."""
    scenario = Path(tmp) / "t.json"
    scenario.write_text(json.dumps({"turns": [{"repeat": True, "reply": {"text": "ok"}}]}))
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    loop = lambda first: [{"role": "user", "content": "go"}, {"role": "assistant", "content": first + [use]}, result]
    cases = [
        (loop([]), 400, "must start with a thinking block"),
        (loop([{"type": "thinking", "thinking": "hm", "signature": "forged"}]), 400, "Invalid `signature`"),
        (loop([{"type": "thinking", "thinking": "hm", "signature": "scripted"}]), 200, None),
        (loop([{"type": "redacted_thinking", "data": "x"}]), 200, None),
    ]
    with harness.ScriptedModel(scenario, Path(tmp) / "tlog.jsonl") as m:
        for messages, expected, words in cases:
            body = {"model": "m", "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": messages}
            status, text = post(m.url + "/v1/messages", body)
            assert status == expected and (words is None or words in json.loads(text)["error"]["message"]), (status, text)
        # Without thinking on, the rule does not apply.
        status, _ = post(m.url + "/v1/messages", {"model": "m", "messages": loop([])})
        assert status == 200
        log = m.requests()
    assert [r.get("rejected") for r in log] == ["thinking", "thinking", None, None, None], log


def check_server_gemini(tmp):
    """Gemini's generateContent and streamGenerateContent?alt=sse: parts with functionCall, usageMetadata, its validation and overflow words."""
    scenario = Path(tmp) / "s.json"
    scenario.write_text(json.dumps({
        "context_window": 2000,
        "turns": [
            {"reply": {"text": "reading", "tool_calls": [{"id": "g1", "name": "read_file", "arguments": {"file_path": "a"}}], "usage": {"input": 7, "output": 3, "cache_read": 5}}},
            {"match": {"tool_result_for": "g1", "model": "gemini-2.5"}, "reply": {"text": "after tool"}},
            {"match": {"compaction": True}, "reply": {"text": "<state_snapshot>S</state_snapshot>"}},
        ],
    }))
    base = "/v1beta/models/gemini-2.5-pro"
    with harness.ScriptedModel(scenario, Path(tmp) / "log.jsonl") as m:
        status, text = post(m.url + base + ":streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": "go"}]}]})
        chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        assert status == 200 and len(chunks) > 1, text
        parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
        assert "".join(p.get("text", "") for p in parts) == "reading", parts
        assert [p["functionCall"] for p in parts if "functionCall" in p] == [{"id": "g1", "name": "read_file", "args": {"file_path": "a"}}], parts
        assert "usageMetadata" not in chunks[0] and chunks[-1]["candidates"][0]["finishReason"] == "STOP", chunks
        assert chunks[-1]["usageMetadata"] == {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15, "cachedContentTokenCount": 5}, chunks[-1]

        call = {"role": "model", "parts": [{"functionCall": {"id": "g1", "name": "read_file", "args": {}}}]}
        answer = {"role": "user", "parts": [{"functionResponse": {"id": "g1", "name": "read_file", "response": {"output": "x"}}}]}
        status, text = post(m.url + base + ":generateContent", {"contents": [{"role": "user", "parts": [{"text": "go"}]}, call, answer]})
        assert status == 200 and json.loads(text)["candidates"][0]["content"]["parts"] == [{"text": "after tool"}], text

        status, text = post(m.url + base + ":generateContent", {"contents": [{"role": "user", "parts": [{"text": "go"}]}, call]})
        assert status == 400 and json.loads(text)["error"]["status"] == "INVALID_ARGUMENT", text
        status, text = post(m.url + base + ":generateContent", {"contents": [{"role": "user", "parts": [{"text": "x" * 9000}]}]})
        assert status == 400 and "exceeds the maximum number of tokens allowed (2000)" in json.loads(text)["error"]["message"], text

        system = {"parts": [{"text": "You are a specialized system component responsible for distilling chat history into a structured XML <state_snapshot>."}]}
        status, text = post(m.url + base + ":generateContent", {"systemInstruction": system, "contents": [{"role": "user", "parts": [{"text": "Generate a new <state_snapshot>"}]}]})
        assert status == 200 and "<state_snapshot>S" in text, text
        status, text = post(m.url + base + ":countTokens", {"contents": [{"role": "user", "parts": [{"text": "go"}]}]})
        assert status == 200 and json.loads(text)["totalTokens"] > 0, text
        log = m.requests()
    assert [(r["api"], r.get("turn"), r.get("rejected")) for r in log] == [
        ("gemini", 0, None), ("gemini", 1, None), ("gemini", None, "tool_sequence"), ("gemini", None, "context_window"), ("gemini", 2, None), ("gemini_count_tokens", None, None),
    ], log
    assert log[0]["stream"] and not log[1]["stream"] and log[4]["compaction"]


def check_gemini(tmp):
    """gemini -p runs read_file, replace, write_file, run_shell_command; a resumed run under a tiny
    compressionThreshold compresses first; the session file holds it all."""
    ws, home = make_workspace(tmp), Path(tmp) / "home"
    harness.gemini_home(home)
    with harness.ScriptedModel(SCENARIOS / "gemini-tools.json", Path(tmp) / "requests.jsonl", {"WORKSPACE": str(ws)}) as m:
        run = harness.run_gemini(["-p", "Fix the test. Rule: never touch b.py"], ws, home, m.url)
        assert run.returncode == 0, run.stderr[-2000:]
        harness.gemini_home(home, {"model": {"compressionThreshold": 0.0002}})
        resumed = harness.run_gemini(["--resume", "latest", "-p", "Carry on"], ws, home, m.url)
        requests = m.requests()
    assert resumed.returncode == 0 and resumed.stdout.strip() == "Carrying on.", resumed.stderr[-2000:]
    assert (ws / "a.txt").read_text() == "ALPHA\nbeta\n" and (ws / "c.md").exists()
    sessions = list(harness.gemini_chats_dir(home, ws).glob("session-*.jsonl"))
    assert len(sessions) == 1, sessions
    records = harness.read_jsonl(sessions[0])
    assert records[0]["kind"] == "main" and "projectHash" in records[0], records[0]
    calls = [c["name"] for r in records if r.get("type") == "gemini" for c in r.get("toolCalls") or []]
    assert sorted(set(calls)) == ["read_file", "replace", "run_shell_command", "write_file"], calls
    rewritten = [r["$set"]["messages"] for r in records if "messages" in r.get("$set", {})]
    assert any("<state_snapshot>some edits" in json.dumps(ms[1]) for ms in rewritten if len(ms) > 1), rewritten
    assert [r["compaction"] for r in requests] == [False] * 5 + [True, True, False], [r["compaction"] for r in requests]
    assert all(r["api"] == "gemini" and r["turn"] is not None for r in requests), requests


def check_claude_code(tmp):
    """claude -p runs Read, Read, Edit, Write, Bash against the script and writes the transcript where we expect."""
    ws, home = make_workspace(tmp), Path(tmp) / "home"
    home.mkdir()
    with harness.ScriptedModel(SCENARIOS / "claude-code-tools.json", Path(tmp) / "requests.jsonl", {"WORKSPACE": str(ws)}) as m:
        run = harness.run_claude(["-p", "edit a.txt and write c.md", "--allowedTools", "Read,Edit,Write,Bash", "--output-format", "stream-json", "--verbose"], ws, home, m.url)
        requests = m.requests()
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["result"] == "Done: a.txt edited, c.md written.", result
    assert (ws / "a.txt").read_text() == "ALPHA\nbeta\n" and (ws / "c.md").exists()

    project = harness.claude_project_dir(home / ".claude", ws)
    transcripts = list(project.glob("*.jsonl"))
    assert [t.stem for t in transcripts] == [result["session_id"]], (project, list((home / ".claude" / "projects").iterdir()))
    lines = harness.read_jsonl(transcripts[0])
    assistant = [entry for entry in lines if entry.get("type") == "assistant"]
    tools = [b["name"] for entry in assistant for b in entry["message"]["content"] if b["type"] == "tool_use"]
    assert tools == ["Read", "Read", "Edit", "Write", "Bash"], tools
    first_id = assistant[0]["message"]["id"]
    assert sum(1 for entry in assistant if entry["message"]["id"] == first_id) == 3  # text + 2 parallel tool_use lines
    assert assistant[0]["message"]["usage"]["cache_read_input_tokens"] == 12000
    assert all(r["api"] == "anthropic" and r["turn"] is not None and not harness.orphaned_tool_results(r) for r in requests), requests


def check_pi(tmp):
    """pi -p runs read, read, edit, write, bash and then compacts (tiny window); the session file holds it all."""
    ws, home = make_workspace(tmp), Path(tmp) / "home"
    with harness.ScriptedModel(SCENARIOS / "pi-tools.json", Path(tmp) / "requests.jsonl") as m:
        harness.pi_home(home, m.url, context_window=16000, settings={"compaction": {"reserveTokens": 14700, "keepRecentTokens": 50}})
        run = harness.run_pi(["-p", "edit a.txt and write c.md"], ws, home)
        requests = m.requests()
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "Done: a.txt edited, c.md written.", run.stdout
    assert (ws / "a.txt").read_text() == "ALPHA\nbeta\n" and (ws / "c.md").exists()

    sessions = list(harness.pi_session_dir(home, ws).glob("*.jsonl"))
    assert len(sessions) == 1, list((home / ".pi" / "agent" / "sessions").iterdir())
    entries = harness.read_jsonl(sessions[0])
    assert entries[0]["type"] == "session" and entries[0]["cwd"] == str(ws)
    calls = [c["name"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant" for c in e["message"]["content"] if c["type"] == "toolCall"]
    assert calls == ["read", "read", "edit", "write", "bash"], calls
    compaction = [e for e in entries if e["type"] == "compaction"]
    assert len(compaction) == 1 and compaction[0]["tokensBefore"] == 1512 and "a.txt" in compaction[0]["details"]["modifiedFiles"], compaction
    assert [r["compaction"] for r in requests] == [False] * 5 + [True], [r["compaction"] for r in requests]
    assert all(r["stream"] and r["body"]["stream_options"]["include_usage"] and not harness.orphaned_tool_results(r) for r in requests)


CHECKS = [(check_server_apis, False), (check_server_validation, False), (check_server_gemini, False), (check_claude_code, True), (check_pi, True), (check_gemini, True)]


def main():
    passed = failed = skipped = 0
    missing = harness.agents_installed()
    for check, needs_agents in CHECKS:
        name = check.__name__
        if needs_agents and missing:
            print(f"SKIP {name}: {missing}")
            skipped += 1
            continue
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="agents-smoke-") as tmp:
            try:
                check(tmp)
            except Exception:
                failed += 1
                print(f"FAIL {name} ({time.monotonic() - start:.1f}s)\n{traceback.format_exc()}")
                continue
        passed += 1
        print(f"PASS {name} ({time.monotonic() - start:.1f}s)")
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
