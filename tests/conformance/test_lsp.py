"""compactd against a third-party LSP client: pygls's `LanguageClient`, with
pytest-lsp's checks of the specification (progress only under tokens the
client created or gave, `window/workDoneProgress/create` only when the
client supports it, well-formed progress values, a clean shutdown)."""

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient


async def request(client: LanguageClient, method: str, params: dict):
    return await client.protocol.send_request_async(method, params)


def conversation(turns: int) -> list:
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"request {i}: " + "please refactor the parser module " * 20})
        messages.append({"role": "assistant", "content": f"answer {i}: " + "done, the tests pass again " * 20})
    return messages


async def test_custom_requests_are_answered_after_initialize(client: LanguageClient):
    opened = await request(client, "conversation/open", {"sessionId": "conformance"})
    assert opened.sessionId == "conformance"
    assert opened.resumed is False


async def test_a_conversation_round_trips(client: LanguageClient):
    await request(client, "conversation/open", {"sessionId": "s"})
    appended = await request(client, "conversation/append", {"sessionId": "s", "messages": conversation(2)})
    assert len(appended.ids) == 4
    client.protocol.notify("conversation/append", {"sessionId": "s", "messages": [{"role": "user", "content": "and the docs"}]})
    history = await request(client, "conversation/history", {"sessionId": "s"})
    assert [m.content for m in history.messages][-1] == "and the docs"
    closed = await request(client, "conversation/close", {"sessionId": "s"})
    assert closed.closed is True


async def test_a_compaction_reports_progress_under_a_token_it_created(client: LanguageClient):
    await request(client, "conversation/open", {"sessionId": "p"})
    await request(client, "conversation/append", {"sessionId": "p", "messages": conversation(8)})
    result = await request(client, "conversation/compact", {"sessionId": "p", "keepRecentTokens": 50})
    assert result.compacted is True
    # pytest-lsp recorded every token the server created and every value
    # sent under it (and warned, failing the test, on any other).
    reports = [r for r in client.progress_reports.values() if r]
    assert reports, "no progress was reported"
    kinds = [type(v).__name__ for v in reports[-1]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd", kinds


async def test_progress_under_the_clients_own_token(client: LanguageClient):
    await request(client, "conversation/open", {"sessionId": "t"})
    await request(client, "conversation/append", {"sessionId": "t", "messages": conversation(8)})
    client.progress_reports["mine-1"] = []
    result = await request(client, "conversation/compact", {"sessionId": "t", "keepRecentTokens": 50, "workDoneToken": "mine-1"})
    assert result.compacted is True
    kinds = [type(v).__name__ for v in client.progress_reports["mine-1"]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd", kinds


async def test_unknown_methods_and_invalid_params_are_errors(client: LanguageClient):
    with pytest.raises(JsonRpcException) as unknown:
        await request(client, "conversation/nothing", {})
    assert unknown.value.code == -32601
    with pytest.raises(JsonRpcException) as invalid:
        await request(client, "conversation/append", {"sessionId": "x", "messages": [{"role": "robot"}]})
    assert invalid.value.code == -32602


async def test_a_cancelled_compaction_answers_minus_32800(client: LanguageClient):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"summarizer": {"provider": "test", "delayMs": 30000}, "autoCompact": False}
        )
    )
    await request(client, "conversation/open", {"sessionId": "c"})
    await request(client, "conversation/append", {"sessionId": "c", "messages": conversation(8)})
    # A task, so the request is sent now (the method is a coroutine).
    future = asyncio.create_task(
        client.protocol.send_request_async(
            "conversation/compact", {"sessionId": "c", "keepRecentTokens": 50}, msg_id="compact-1"
        )
    )
    # The compaction runs once its progress began.
    await client.wait_for_notification("$/progress")
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="compact-1"))
    with pytest.raises(JsonRpcException) as cancelled:
        await future
    assert cancelled.value.code == -32800
    compactions = await request(client, "conversation/compactions", {"sessionId": "c"})
    assert compactions.compactions == []
