"""The agent loop over a long scripted session: tool calls that really run
in a temporary repository, large outputs, a 6,000-token window the server
enforces, and a deliberate overflow. The loop must finish the task, never
send a request the server refuses, and every summary must still name the
task and every file modified before it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import harness  # tests/agents/harness.py
import repo_session
from agent import Agent, ChatEndpoint, Tools
from compactd_client import CompactdClient

WINDOW = 6000
#: compactd's settings for this window: keep about a quarter verbatim, and
#: compact before the prompt plus the longest answer (max_tokens) could pass it.
CONFIGURATION = {"keepRecentTokens": 1500, "reserveTokens": 1024}


def run_session(tmp_path: Path, binary: str, server_env):
    repo = tmp_path / "repo"
    repo_session.build_repo(repo)
    scenario = repo_session.write_scenario(tmp_path / "scenario.json")
    with harness.ScriptedModel(scenario, tmp_path / "requests.jsonl") as model:
        with CompactdClient.spawn(
            binary, args=["--no-user-config"], env=server_env, configuration=CONFIGURATION, workspace_folders=[repo]
        ) as compactd:
            agent = Agent(
                compactd,
                ChatEndpoint(model.url + "/v1"),
                Tools(repo),
                model="scripted-model",
                context_window=WINDOW,
                max_tokens=1024,
            )
            answer = agent.run(repo_session.TASK)
            final = compactd.compact(agent.session, keep_recent_tokens=300)
            agent.close()
        requests = model.requests()
    return repo, agent, answer, final, requests, json.loads(scenario.read_text())


def test_a_long_session_compacts_many_times_and_finishes(tmp_path, binary, server_env):
    repo, agent, answer, final, requests, scenario = run_session(tmp_path, binary, server_env)
    stats = agent.stats
    print_figures(stats, requests, final)

    # The task is done, in the files themselves.
    assert answer.startswith("Done. Store.add_item is now Store.add"), answer
    tests = subprocess.run(["python3", "-m", "unittest", "discover", "-s", "tests"], cwd=repo, capture_output=True, text=True)
    assert tests.returncode == 0 and "Ran 17 tests" in tests.stderr, tests.stderr
    assert subprocess.run(["grep", "-rn", "add_item", "--include=*.py", "."], cwd=repo).returncode == 1
    assert (repo / "data" / "items.csv").read_text() == repo_session.csv_rows()
    assert sorted(stats.modified_files) == repo_session.MODIFIED_FILES

    # The server refused nothing the loop sent; the one 400 is the scripted overflow, and every turn was used in order.
    model_requests = [r for r in requests if r["api"] == "chat"]
    assert [r for r in model_requests if r.get("rejected")] == []
    errors = [r for r in model_requests if r["status"] != 200]
    overflow_turn = next(i for i, t in enumerate(scenario["turns"]) if "error" in t)
    assert [(r["status"], r["turn"]) for r in errors] == [(400, overflow_turn)]
    assert not any(r["unmatched"] for r in model_requests)
    assert sorted(r["turn"] for r in model_requests) == list(range(len(scenario["turns"])))
    for r in model_requests:
        assert harness.orphaned_tool_results(r) == []
        assert r["bytes"] // 4 <= WINDOW, r["bytes"]
    assert stats.requests == len(model_requests) and stats.overflows == 1

    # Many compactions, each smaller after; the overflow one among them.
    reasons = [c["why"] for c in stats.compactions]
    assert reasons.count("shouldCompact") >= 5 and "overflow" in reasons and reasons[-1] == "manual", reasons
    for c in stats.compactions:
        assert c["tokensAfter"] < c["tokensBefore"], c

    # Every summary names the task and every file modified before it; the final one names them all.
    for c in stats.compactions:
        assert repo_session.TASK in c["summary"], c["summary"]
        for path in c["modifiedBefore"]:
            assert path in modified_section(c["summary"]), (path, c["summary"])
    assert final["compacted"], final
    assert repo_session.TASK in final["summary"]
    assert sorted(strip_status(line) for line in modified_section(final["summary"]).splitlines()) == repo_session.MODIFIED_FILES


def modified_section(summary: str) -> str:
    start, end = summary.index("<modified-files>"), summary.index("</modified-files>")
    return summary[start + len("<modified-files>") : end].strip()


def strip_status(line: str) -> str:
    return line.removesuffix(" (created)")


def print_figures(stats, requests, final) -> None:
    chat = [r for r in requests if r["api"] == "chat"]
    print(
        f"\nscripted session: {stats.turns} turns, {stats.requests} requests ({stats.overflows} overflow), "
        f"{stats.tool_calls} tool calls, {len(stats.compactions)} compactions, "
        f"largest request {max(r['bytes'] for r in chat) // 4} of {WINDOW} tokens, "
        f"refused by the server: {sum(1 for r in chat if r.get('rejected'))}"
    )
    for i, c in enumerate(stats.compactions, 1):
        print(f"  compaction {i:2d} after turn {c['afterTurn']:2d} ({c['why']}): {c['tokensBefore']} → {c['tokensAfter']} tokens, {c['messagesSummarized']} messages summarized, summary {len(c['summary'])} characters")
    print(f"  final: {final['tokensBefore']} → {final['tokensAfter']} tokens, summary {len(final['summary'])} characters")
