"""The same loop against a real model: llama.cpp's llama-server with
SmolLM2-135M from `scripts/local-llm.sh up` (or COMPACTD_TEST_LLM_URL).
The model is weak, so these tests assert the mechanics (requests accepted,
usage appended, compactions, a real overflow classified and recovered),
never the prose. Without the server they skip, saying why."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import List, Tuple

import pytest

from agent import Agent, ChatEndpoint, Tools
from compactd_client import CompactdClient

DEFAULT_URL = "http://127.0.0.1:8765/v1"
#: The server's window: scripts/local-llm.sh starts llama-server with `-c 4096`.
SERVER_WINDOW = 4096
#: Greedy decoding: the same answers every run, so the same compactions.
GREEDY = {"temperature": 0, "seed": 1}


def llm_url() -> str:
    url = os.environ.get("COMPACTD_TEST_LLM_URL") or DEFAULT_URL
    health = url.rstrip("/").removesuffix("/v1") + "/health"
    try:
        with urllib.request.urlopen(health, timeout=5) as response:
            if response.status == 200:
                return url
    except (urllib.error.URLError, OSError) as e:
        reason = f"no local model at {url} ({e}): run `scripts/local-llm.sh up` or set COMPACTD_TEST_LLM_URL"
    else:
        reason = f"the local model at {url} is not healthy"
    print(f"SKIP: {reason}")
    pytest.skip(reason)


class RecordingEndpoint(ChatEndpoint):
    """The real endpoint, remembering each answer's status and body."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url, timeout=600)
        self.answers: List[Tuple[int, str]] = []

    def post(self, body):
        status, text = super().post(body)
        self.answers.append((status, text))
        return status, text


def spawn(binary: str, server_env, **configuration) -> CompactdClient:
    return CompactdClient.spawn(binary, args=["--no-user-config"], env=server_env, configuration=configuration)


def test_a_short_session_with_a_real_model_compacts_at_its_threshold(tmp_path: Path, binary, server_env):
    url = llm_url()
    endpoint = RecordingEndpoint(url)
    notes = tmp_path / "notes"
    notes.mkdir()
    for part in range(6):
        (notes / f"part{part}.txt").write_text(
            "".join(f"Note {i}: the build on branch feature-{i} passed after the cache was cleared.\n" for i in range(part * 10, part * 10 + 10))
        )
    with spawn(binary, server_env, keepRecentTokens=256, reserveTokens=128) as compactd:
        agent = Agent(compactd, endpoint, Tools(tmp_path), model="smollm2", context_window=1024, max_tokens=48, offer_tools=False, request_options=GREEDY)
        answers = [agent.run("Say in one sentence what these notes are about.", files=[f"notes/part{part}.txt"]) for part in range(6)]
        history = compactd.history(agent.session)["messages"]
        agent.close()
    stats = agent.stats
    print(f"\nlocal model, threshold: {stats.turns} turns, {len(stats.compactions)} compactions "
          + ", ".join(f"{c['tokensBefore']} → {c['tokensAfter']}" for c in stats.compactions)
          + f"; meter before each request {stats.meter_before_request}; not compacted: {stats.not_compacted}")
    assert [status for status, _ in endpoint.answers] == [200] * 6
    assert all(isinstance(a, str) for a in answers) and stats.turns == 6
    assert len(stats.compactions) >= 2 and {c["why"] for c in stats.compactions} == {"shouldCompact"}
    assert all(c["tokensAfter"] < c["tokensBefore"] for c in stats.compactions)
    # Compacting before each request kept every one under compactd's window.
    assert max(stats.meter_before_request) < 1024, stats.meter_before_request
    # The model's own usage reached compactd: each assistant answer it kept carries it.
    kept_answers = [m for m in history if m["role"] == "assistant" and m.get("content")]
    assert kept_answers and all(m["usage"]["input"] + m["usage"].get("cacheRead", 0) > 0 for m in kept_answers)
    assert history[1]["role"] == "user" and "<summary>" in history[1]["content"]
    assert "notes/part0.txt" in history[1]["content"]  # the first file read, in <read-files>


def test_a_real_overflow_is_classified_compacted_and_retried(tmp_path: Path, binary, server_env):
    """compactd counts in o200k; SmolLM2's tokenizer needs about twice as many tokens for digits.
    A large numeric file that compactd's meter puts under the window is over it for the model:
    llama-server refuses the request with its own error, and reportError recovers."""
    url = llm_url()
    endpoint = RecordingEndpoint(url)
    (tmp_path / "readings.csv").write_text(
        "".join(f"{1700000000 + i * 60},{20.0 + (i * 7919 % 1000) / 100:.2f},{40 + i * 31 % 55},{101325 + i * 17 % 900}\n" for i in range(190))
    )
    with spawn(binary, server_env, keepRecentTokens=256, reserveTokens=128) as compactd:
        agent = Agent(
            compactd, endpoint, Tools(tmp_path, max_chars=20000), model="smollm2", context_window=SERVER_WINDOW,
            max_tokens=48, offer_tools=False, request_options=GREEDY,
        )
        answer = agent.run("What was the highest temperature? Columns: time, celsius, humidity, pressure.", files=["readings.csv"])
        agent.close()
    stats = agent.stats
    statuses = [status for status, _ in endpoint.answers]
    print(f"\nlocal model, overflow: meter {stats.meter_before_request} of {SERVER_WINDOW} before each request; answers {statuses}; "
          + ", ".join(f"{c['why']} {c['tokensBefore']} → {c['tokensAfter']}" for c in stats.compactions)
          + f"; reportError said {stats.verdicts}")
    assert stats.meter_before_request[0] < SERVER_WINDOW - 128  # compactd thought it fitted
    assert statuses == [400, 200], endpoint.answers
    error = json.loads(endpoint.answers[0][1])["error"]
    assert error["type"] == "exceed_context_size_error" and error["n_ctx"] == SERVER_WINDOW, error
    # compactd recognised llama.cpp's error as an overflow; the history shrank (its own recovery or,
    # when that kept a tail its count thought small enough, the agent's second compaction) and the retry fitted.
    assert stats.overflows == 1 and stats.verdicts[0]["kind"] == "overflow", stats.verdicts
    assert stats.compactions and all(c["tokensAfter"] < c["tokensBefore"] for c in stats.compactions)
    assert stats.turns == 1 and isinstance(answer, str)
