"""The asyncio client against the real binary. Each test runs its own event
loop with asyncio.run (no pytest plugin needed)."""

import asyncio
from typing import Any, Dict, List, Tuple

import pytest
from conftest import PATIENCE, conversation

from compactd_client import AsyncCompactdClient, ResponseError, ServerExited, methods


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, PATIENCE))


def test_open_append_compact_history_with_notifications_as_an_async_iterator(spawn_args: Dict[str, Any]) -> None:
    async def main() -> None:
        async with await AsyncCompactdClient.spawn(**spawn_args, configuration={"keepRecentTokens": 400}) as client:
            async with client.notifications(methods.DID_COMPACT, methods.TOKENS) as events:
                await client.open(session_id="a", model="gpt-4o")
                appended = await client.append("a", conversation(6))
                result = await client.compact("a")
                assert result["compacted"] is True
                seen: List[Tuple[str, Any]] = []
                async for method, params in events:
                    seen.append((method, params))
                    if method == methods.TOKENS and params["contextTokens"] == result["tokensAfter"]:
                        break
            assert [m for m, _ in seen] == [methods.TOKENS, methods.TOKENS, methods.DID_COMPACT, methods.TOKENS]
            assert seen[1][1]["contextTokens"] == appended["meter"]["contextTokens"]
            assert seen[2][1]["summary"] == result["summary"]
            history = (await client.history("a"))["messages"]
            assert "<summary>" in history[0]["content"]

    run(main())


def test_notifications_sent_in_a_burst_are_applied_in_order(spawn_args: Dict[str, Any]) -> None:
    async def main() -> None:
        async with await AsyncCompactdClient.spawn(**spawn_args) as client:
            await client.open(session_id="burst")
            for i in range(200):
                await client.notify_append("burst", [{"role": "user", "content": f"message {i}"}])
            history = (await client.history("burst"))["messages"]
            assert [m["content"] for m in history] == [f"message {i}" for i in range(200)]

    run(main())


def test_concurrent_requests_each_get_their_own_answer(spawn_args: Dict[str, Any]) -> None:
    async def main() -> None:
        async with await AsyncCompactdClient.spawn(**spawn_args) as client:
            opened = await asyncio.gather(*(client.open(session_id=f"s{i}") for i in range(20)))
            assert [o["sessionId"] for o in opened] == [f"s{i}" for i in range(20)]

    run(main())


def test_cancelling_the_task_sends_cancel_request_and_changes_nothing(
    spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]
) -> None:
    async def main() -> None:
        async with await AsyncCompactdClient.spawn(**spawn_args, configuration=slow_summarizer) as client:
            await client.open(session_id="c")
            await client.append("c", conversation(6))
            before = await client.history("c")
            progress: "asyncio.Queue[Dict[str, Any]]" = asyncio.Queue()
            client.on_progress(lambda token, value: progress.put_nowait(value), token="tok")
            task = asyncio.ensure_future(client.compact("c", work_done_token="tok"))
            assert (await progress.get())["kind"] == "begin"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            end = await progress.get()
            assert end["kind"] == "end" and "cancel" in end["message"]
            assert await client.history("c") == before
            assert (await client.compactions("c"))["compactions"] == []

    run(main())


def test_errors_refusals_and_a_dead_server(spawn_args: Dict[str, Any], slow_summarizer: Dict[str, Any]) -> None:
    async def main() -> None:
        with pytest.raises(ResponseError, match="keepRecentTokens"):
            await AsyncCompactdClient.spawn(**spawn_args, configuration={"keepRecentTokens": "lots"})
        client = await AsyncCompactdClient.spawn(**spawn_args, configuration=slow_summarizer)
        with pytest.raises(ResponseError) as error:
            await client.branch("nobody", "m1")
        assert error.value.code == methods.INVALID_PARAMS
        await client.open(session_id="d")
        await client.append("d", conversation(6))
        began = asyncio.Event()
        client.on_progress(lambda token, value: began.set(), token="d")
        waiting = asyncio.ensure_future(client.compact("d", work_done_token="d"))
        await began.wait()
        client.process.kill()
        with pytest.raises(ServerExited) as exited:
            await waiting
        assert exited.value.returncode is not None and exited.value.returncode < 0
        assert "compactd at" in str(exited.value)
        with pytest.raises(ServerExited):
            await client.open()
        assert await client.close() == exited.value.returncode

    run(main())


def test_exit_without_shutdown_is_code_1_and_close_after_is_harmless(spawn_args: Dict[str, Any]) -> None:
    async def main() -> None:
        client = await AsyncCompactdClient.spawn(**spawn_args)
        await client._notify(methods.EXIT, {})
        assert await client.wait() == 1
        assert await client.close() == 1

    run(main())
