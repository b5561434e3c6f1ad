"""The blocking client against the real binary."""

import json
import os
import queue
import signal
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import PATIENCE, conversation

from compactd_client import (
    Cancellation,
    CompactdClient,
    RequestCancelled,
    ResponseError,
    ServerExited,
    methods,
)


# A Claude Code transcript as Claude Code writes it: a prompt and a response
# with its usage (5 + 1000 + 7).
CLAUDE_CODE_TRANSCRIPT = "".join(
    json.dumps(line) + "\n"
    for line in [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "hello"}],
                "usage": {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1000, "output_tokens": 7},
            },
        },
    ]
)

def test_lifecycle_initialize_advertises_every_method_and_close_exits_zero(spawn_args: Dict[str, Any]) -> None:
    client = CompactdClient.spawn(**spawn_args)
    assert client.version and client.version.startswith("compactd ")
    advertised = client.capabilities["methods"]
    own_requests = [m.name for m in methods.METHODS if not m.lsp and m.kind in ("request", "requestOrNotification")]
    assert sorted(advertised) == sorted(own_requests)
    assert sorted(client.capabilities["notifications"]) == sorted(
        m.name for m in methods.METHODS if m.kind == "serverNotification"
    )
    assert client.close() == 0, client.stderr_tail()
    assert client.close() == 0, "closing twice is harmless"


def test_a_conversation_meter_compaction_and_history(spawn_args: Dict[str, Any]) -> None:
    tokens: List[Dict[str, Any]] = []
    with CompactdClient.spawn(**spawn_args, configuration={"keepRecentTokens": 400}) as client:
        client.on_tokens(tokens.append)
        with client.notifications() as events:
            opened = client.open(session_id="demo", model="gpt-4o", system_prompt="You are a coding agent.")
            assert opened["sessionId"] == "demo" and opened["resumed"] is False
            appended = client.append("demo", conversation(6))
            assert len(appended["ids"]) == 24
            assert appended["meter"]["contextTokens"] > opened["meter"]["contextTokens"]
            result = client.compact("demo", instructions="keep module names", work_done_token="py-1")
            assert result["compacted"] is True
            assert result["tokensAfter"] < result["tokensBefore"]
            assert "src/module1.rs" in result["readFiles"]

            # Everything the server sent for the compaction arrived before its answer, in its order.
            seen: List[Tuple[str, Any]] = []
            while True:
                try:
                    seen.append(events.get(timeout=0))
                except queue.Empty:
                    break
        kinds = [
            (method, params["value"]["kind"] if method == "$/progress" else None)
            for method, params in seen
            if method != "conversation/tokens" or params["contextTokens"] == result["tokensAfter"]
        ]
        assert kinds[-4:] == [
            ("$/progress", "begin"),
            ("$/progress", "end"),
            ("conversation/didCompact", None),
            ("conversation/tokens", None),
        ], kinds
        assert tokens[-1]["contextTokens"] == result["tokensAfter"]

        history = client.history("demo")["messages"]
        assert history[0] == {"id": "system", "role": "system", "content": "You are a coding agent."}
        assert "<summary>" in history[1]["content"]
        assert history[-1]["content"] == "Fixed item_6: the multiplier overflowed, so it now wraps."
        assert [c["trigger"] for c in client.compactions("demo")["compactions"]] == ["manual"]


def test_every_method_of_the_table_has_a_typed_function_that_the_server_accepts(
    spawn_args: Dict[str, Any], workspace: Path
) -> None:
    called: List[str] = []
    with CompactdClient.spawn(**spawn_args, workspace_folders=[workspace]) as client:
        request, notify = client._request, client._notify

        def record_request(method: str, params: Dict[str, Any], **options: Any) -> Any:
            called.append(method)
            return request(method, params, **options)

        def record_notify(method: str, params: Dict[str, Any]) -> None:
            called.append(method)
            notify(method, params)

        client._request, client._notify = record_request, record_notify  # type: ignore[method-assign]
        changes: List[Dict[str, Any]] = []
        client.on_files_did_change(changes.append)
        client.on_did_compact(lambda n: None)
        client.on_auto_compact_stopped(lambda n: None)
        main = workspace / "src" / "main.rs"
        uri = main.as_uri()

        client.open(session_id="all", model="gpt-4o", context_window=64000)
        ids = client.append("all", conversation(3))["ids"]
        client.notify_append("all", [{"role": "user", "content": "And now the docs."}])
        assert client.history("all")["messages"][-1]["content"] == "And now the docs."
        assert client.check("all")["shouldCompact"] is False
        assert client.set_auto_compact("all", False) == {"sessionId": "all", "enabled": False}
        assert client.preview("all", strategy="prune")["strategy"] == "prune"
        assert client.pin("all", "Use the 2021 edition.")["pins"] == ["Use the 2021 edition."]
        assert client.compact("all", keep_recent_tokens=200)["compacted"] is True
        assert len(client.compactions("all")["compactions"]) == 1
        branch = client.branch("all", ids[4])
        assert branch["messageCount"] == 4
        assert client.report_error("all", "Rate limit exceeded", status=429)["kind"] == "rateLimit"
        imported = client.import_(content='[{"role":"user","content":"hi"}]', format="openai", session_id="imported")
        assert imported["messages"] == 1
        assert "compactd follows this session" in client.recap("all")["instructions"]
        assert client.search("And now the docs.", session_id="all")["hits"][0]["role"] == "user"
        assert client.messages("all", ids=[ids[0]])["messages"][0]["message"]["id"] == ids[0]
        transcript = workspace / "claude-code.jsonl"
        transcript.write_text(CLAUDE_CODE_TRANSCRIPT)
        followed = client.follow(path=str(transcript))
        meter = followed["meter"]
        assert (followed["agentName"], meter["contextTokens"], meter["source"]) == ("Claude Code", 1012, "usage")
        assert isinstance(client.list_agent_sessions(workspace=str(workspace))["sessions"], list)
        session_id = followed["sessionId"]
        assert client.unfollow(session_id) == {"sessionId": session_id, "unfollowed": True}

        client.files_did_read(str(main), session_id="all")
        client.files_did_modify("src/lib.rs", session_id="all")
        client.files_did_create("src/new.rs", session_id="all")
        client.files_did_delete("src/old.rs", session_id="all")
        client.did_open({"uri": uri, "languageId": "rust", "version": 1, "text": "fn main() {}\n"})
        client.did_change({"uri": uri, "version": 2}, [{"text": "fn main() { run() }\n"}])
        client.did_save({"uri": uri}, text="fn main() { run() }\n")
        client.did_close({"uri": uri})
        client.did_change_watched_files([{"uri": (workspace / "src" / "gen.rs").as_uri(), "type": 1}])
        client.work_done_progress_cancel("no-such-progress")  # no compaction runs under it: ignored
        statuses = {f["displayPath"]: f["status"] for f in client.files_list("all")["files"]}
        assert statuses["src/lib.rs"] == "modified"
        assert statuses["src/new.rs"] == "created"
        assert statuses["src/old.rs"] == "deleted"
        assert statuses["src/main.rs"] == "modified"
        assert statuses["src/gen.rs"] == "created"
        assert isinstance(client.files_unchanged_since_read("all")["files"], list)
        # On stdio the one client gets every notification: these change nothing.
        assert client.subscribe("all")["open"] is True
        assert client.unsubscribe("all")["wasSubscribed"] is True
        client.authenticate("only a WebSocket connection needs one")
        assert client.close_session("all") == {"sessionId": "all", "closed": True}

    own = {m.name for m in methods.METHODS if m.params is not None and m.kind != "serverNotification"}
    assert own == set(called), f"not called: {own - set(called)}"


def test_invalid_params_raise_response_error_with_the_servers_message(spawn_args: Dict[str, Any]) -> None:
    with CompactdClient.spawn(**spawn_args) as client:
        client.open(session_id="bad")
        with pytest.raises(ResponseError) as error:
            client.append("bad", [{"role": "robot", "content": "beep"}])  # type: ignore[list-item]
        assert error.value.code == methods.INVALID_PARAMS
        assert "robot" in error.value.message
        assert str(error.value).startswith("conversation/append: ")
        with pytest.raises(ResponseError) as unknown:
            client.history("nobody")
        assert unknown.value.code == methods.INVALID_PARAMS


def test_a_refused_configuration_fails_spawn_naming_the_field(spawn_args: Dict[str, Any]) -> None:
    with pytest.raises(ResponseError) as error:
        CompactdClient.spawn(**spawn_args, configuration={"summarizer": {"provider": "nope"}})
    assert error.value.code == methods.INVALID_PARAMS
    assert "summarizer.provider" in error.value.message


def test_cancellation_sends_cancel_request_and_leaves_the_history_alone(
    spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]
) -> None:
    with CompactdClient.spawn(**spawn_args, configuration=slow_summarizer) as client:
        client.open(session_id="cancel-me")
        client.append("cancel-me", conversation(6))
        before = client.history("cancel-me")["messages"]
        cancel = Cancellation()
        began = threading.Event()
        ended: "queue.Queue[Any]" = queue.Queue()

        def progress(token: Any, value: Dict[str, Any]) -> None:
            if value["kind"] == "begin":
                began.set()
                cancel.cancel()  # from the client's own thread: the request is running
            if value["kind"] == "end":
                ended.put(value)

        client.on_progress(progress, token="py-cancel")
        with pytest.raises(RequestCancelled) as error:
            client.compact("cancel-me", work_done_token="py-cancel", cancel=cancel)
        assert error.value.code == methods.REQUEST_CANCELLED
        assert began.is_set()
        assert "cancel" in ended.get(timeout=PATIENCE)["message"]
        assert client.history("cancel-me")["messages"] == before
        assert client.compactions("cancel-me")["compactions"] == []
        with pytest.raises(RequestCancelled):
            client.compact("cancel-me", cancel=cancel)  # already cancelled: not even sent


def test_a_timeout_cancels_the_request(spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]) -> None:
    with CompactdClient.spawn(**spawn_args, configuration=slow_summarizer) as client:
        client.open(session_id="slow")
        client.append("slow", conversation(6))
        ended: "queue.Queue[Any]" = queue.Queue()
        client.on_progress(lambda token, value: ended.put(value) if value["kind"] == "end" else None, token="t")
        with pytest.raises(TimeoutError, match="conversation/compact did not answer within 0.5 s"):
            client.compact("slow", work_done_token="t", timeout=0.5)
        assert "cancel" in ended.get(timeout=PATIENCE)["message"]
        assert client.compactions("slow")["compactions"] == []


def test_the_server_creates_progress_tokens_for_auto_compaction_and_the_client_answers(spawn_args: Dict[str, Any]) -> None:
    progress: "queue.Queue[Tuple[Any, Dict[str, Any]]]" = queue.Queue()
    config = {"keepRecentTokens": 400, "autoCompactTokenLimit": 2000}
    with CompactdClient.spawn(**spawn_args, configuration=config) as client:
        client.on_progress(lambda token, value: progress.put((token, value)))
        with client.notifications(methods.DID_COMPACT) as compactions:
            client.open(session_id="auto")
            assert client.append("auto", conversation(6))["compacting"] is True
            method, done = compactions.get(timeout=PATIENCE)
        assert done["trigger"] == "threshold" and done["compacted"] is True
        token, begin = progress.get(timeout=PATIENCE)
        assert begin["kind"] == "begin"
        assert progress.get(timeout=PATIENCE) == (token, {"kind": "end", "message": begin_end_message(done)})


def test_cancelling_an_automatic_compaction_from_its_progress(
    spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]
) -> None:
    progress: "queue.Queue[Tuple[Any, Dict[str, Any]]]" = queue.Queue()
    config = {**slow_summarizer, "autoCompactTokenLimit": 2000}
    with CompactdClient.spawn(**spawn_args, configuration=config) as client:
        client.on_progress(lambda token, value: progress.put((token, value)))
        client.open(session_id="auto")
        assert client.append("auto", conversation(6))["compacting"] is True
        token, begin = progress.get(timeout=PATIENCE)
        assert begin["kind"] == "begin"
        client.work_done_progress_cancel(token)
        ended = progress.get(timeout=PATIENCE)
        while ended[1]["kind"] != "end":  # reports on their way before the cancel
            ended = progress.get(timeout=PATIENCE)
        assert ended[0] == token and "cancel" in ended[1]["message"]
        assert len(client.history("auto")["messages"]) == 24
        assert client.compactions("auto")["compactions"] == []


def begin_end_message(done: Dict[str, Any]) -> str:
    return f"{done['tokensBefore']} → {done['tokensAfter']} tokens"


def test_a_server_that_dies_fails_waiting_requests_with_server_exited(
    spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]
) -> None:
    client = CompactdClient.spawn(**spawn_args, configuration=slow_summarizer)
    try:
        client.open(session_id="doomed")
        client.append("doomed", conversation(6))
        began = threading.Event()
        client.on_progress(lambda token, value: began.set() if value["kind"] == "begin" else None, token="d")
        outcome: "queue.Queue[BaseException]" = queue.Queue()

        def compact() -> None:
            try:
                client.compact("doomed", work_done_token="d")
            except BaseException as error:
                outcome.put(error)

        waiter = threading.Thread(target=compact)
        waiter.start()
        assert began.wait(PATIENCE)
        os.kill(client.pid, signal.SIGKILL)
        waiter.join(PATIENCE)
        error = outcome.get(timeout=0)
        assert isinstance(error, ServerExited), repr(error)
        assert error.returncode == -signal.SIGKILL
        with pytest.raises(ServerExited):
            client.history("doomed")
    finally:
        client.close()


def test_calling_the_client_from_its_own_callback_raises_instead_of_deadlocking(spawn_args: Dict[str, Any]) -> None:
    errors: "queue.Queue[BaseException]" = queue.Queue()

    def on_tokens(meter: Dict[str, Any]) -> None:
        try:
            client.history(meter["sessionId"])
        except RuntimeError as error:
            errors.put(error)

    with CompactdClient.spawn(**spawn_args) as client:
        client.on_tokens(on_tokens)
        client.open(session_id="reentrant")
        assert "called from one of its callbacks" in str(errors.get(timeout=PATIENCE))
        assert client.history("reentrant")["messages"] == []
