"""FallbackModel: retries, failover and an agent run that survives a dead provider."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wire_server import WireServer, unused_url

from xclaw import Agent
from xclaw.core.errors import ModelRequestRejected, ModelUnavailable, ProtocolViolation
from xclaw.core.messages import Message
from xclaw.core.model import Finish, ModelRequest, TextDelta
from xclaw.models._http import backoff_delay
from xclaw.models.fallback import FallbackModel
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.presets import get_preset

MakeWire = Callable[[], WireServer]


def chat_model(url: str, name: str = "openai-chat") -> OpenAIChatModel:
    preset = get_preset(name)
    assert preset is not None
    return OpenAIChatModel("m", base_url=url, api_key="k", preset=preset, timeout_s=5)


def text_stream(text: str) -> list[str | dict[str, Any]]:
    return [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "data: [DONE]",
    ]


def tool_stream(call_id: str, wire_name: str, arguments: str) -> list[str | dict[str, Any]]:
    fragment = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": wire_name, "arguments": arguments},
    }
    return [
        {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "data: [DONE]",
    ]


RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
SERVER_ERROR = {"error": {"message": "boom", "type": "server_error"}}


class Sleeps:
    """Records backoff sleeps instead of waiting them out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def answer(model: FallbackModel) -> list[Any]:
    request = ModelRequest([Message.user("hi")], [])
    try:
        return [ev async for ev in model.respond(request)]
    finally:
        await model.aclose()


@pytest.mark.parametrize("first_fails_by", ["connection_refused", "rate_limited"])
async def test_agent_run_completes_on_the_second_provider(
    first_fails_by: str, make_wire: MakeWire, root: Path
) -> None:
    (root / "hello.txt").write_text("hi\n", encoding="utf-8")
    backup = make_wire()
    backup.add_sse(tool_stream("call_1", "fs_list", '{"path": "."}'))
    backup.add_sse(text_stream("The project holds hello.txt."))
    if first_fails_by == "connection_refused":
        first_url = unused_url()
    else:
        primary = make_wire()
        for _ in range(2):  # one per turn; retry-after beyond the cap fails over at once
            primary.add_json(429, RATE_LIMITED, {"retry-after": "120"})
        first_url = primary.url
    seen: list[dict[str, Any]] = []
    sleeps = Sleeps()
    model = FallbackModel(
        [chat_model(first_url), chat_model(backup.url, "deepseek")],
        retries=1,
        on_event=seen.append,
        sleep=sleeps,
    )
    agent = Agent(model, root, evidence_gate_enabled=False)
    try:
        result = await agent.run("What files are in the project?")
    finally:
        await model.aclose()
    assert result.status == "completed", result.reason
    assert result.reply == "The project holds hello.txt."
    assert [r.name for r in result.tool_calls] == ["fs.list"]
    assert result.tool_calls[0].result.ok
    # the second turn sent the tool result back under the provider's call id
    tool_messages = [m for m in backup.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1"]
    assert "hello.txt" in tool_messages[0]["content"]
    failovers = [e for e in seen if e["type"] == "model.failover"]
    assert len(failovers) == 2 and failovers == model.failovers
    assert failovers[0]["from"] == "openai-chat:m" and failovers[0]["to"] == "deepseek:m"
    expected_code = {
        "connection_refused": "MODEL_CONNECTION_FAILED",
        "rate_limited": "MODEL_RATE_LIMITED",
    }[first_fails_by]
    assert failovers[0]["code"] == expected_code
    if first_fails_by == "rate_limited":
        assert sleeps.delays == []  # a 120 s retry-after is not slept through


async def test_retry_honours_retry_after_then_succeeds(wire: WireServer) -> None:
    wire.add_json(429, RATE_LIMITED, {"retry-after": "1.5"})
    wire.add_sse(text_stream("ok"))
    sleeps = Sleeps()
    model = FallbackModel([chat_model(wire.url)], base_delay_s=0.01, sleep=sleeps)
    events = await answer(model)
    assert events == [TextDelta("ok"), Finish("stop")]
    assert sleeps.delays == [1.5]
    assert model.failovers == [] and len(model.retried) == 1
    assert model.retried[0]["code"] == "MODEL_RATE_LIMITED"


async def test_backoff_grows_and_the_single_model_error_is_kept(wire: WireServer) -> None:
    for _ in range(3):
        wire.add_json(500, SERVER_ERROR)
    sleeps = Sleeps()
    model = FallbackModel(
        [chat_model(wire.url)], retries=2, base_delay_s=0.5, jitter=False, sleep=sleeps
    )
    with pytest.raises(ModelUnavailable) as info:
        await answer(model)
    assert sleeps.delays == [0.5, 1.0]
    assert info.value.code == "MODEL_SERVER_ERROR"  # one model: its own error, not a summary
    assert len(wire.requests) == 3


def test_backoff_delay_caps_and_jitters() -> None:
    rng = random.Random(7)
    assert backoff_delay(10, base_delay_s=0.5, max_delay_s=8, jitter=False) == 8
    for attempt in range(6):
        full = min(8.0, 0.5 * 2**attempt)
        got = backoff_delay(attempt, base_delay_s=0.5, max_delay_s=8, rng=rng)
        assert full / 2 <= got <= full


async def test_rejected_request_fails_over_without_retrying(make_wire: MakeWire) -> None:
    first, second = make_wire(), make_wire()
    first.add_json(401, {"error": {"message": "bad key", "type": "authentication_error"}})
    second.add_sse(text_stream("from the second"))
    sleeps = Sleeps()
    model = FallbackModel([chat_model(first.url), chat_model(second.url)], sleep=sleeps)
    events = await answer(model)
    assert TextDelta("from the second") in events
    assert len(first.requests) == 1 and sleeps.delays == []
    assert model.failovers[0]["code"] == "MODEL_AUTH_FAILED"


async def test_all_failing_lists_every_cause(make_wire: MakeWire) -> None:
    second = make_wire()
    second.add_json(404, {"error": {"message": "no such model"}})
    model = FallbackModel([chat_model(unused_url()), chat_model(second.url, "deepseek")], retries=0)
    with pytest.raises(ModelUnavailable) as info:
        await answer(model)
    err = info.value
    assert err.code == "MODEL_CHAIN_FAILED"
    assert "openai-chat:m: [MODEL_CONNECTION_FAILED]" in err.message
    assert "deepseek:m: [MODEL_NOT_FOUND]" in err.message


async def test_all_rejected_is_rejected(make_wire: MakeWire) -> None:
    first, second = make_wire(), make_wire()
    for server in (first, second):
        server.add_json(400, {"error": {"message": "bad request"}})
    model = FallbackModel([chat_model(first.url), chat_model(second.url)])
    with pytest.raises(ModelRequestRejected) as info:
        await answer(model)
    assert info.value.code == "MODEL_CHAIN_FAILED"


async def test_a_stream_that_fails_after_yielding_is_not_replayed(make_wire: MakeWire) -> None:
    first, second = make_wire(), make_wire()
    first.add_sse(text_stream("half an answer"), cut_after=1)
    second.add_sse(text_stream("a different answer"))
    model = FallbackModel([chat_model(first.url), chat_model(second.url)], sleep=Sleeps())
    seen: list[Any] = []
    with pytest.raises(ModelUnavailable):
        try:
            async for ev in model.respond(ModelRequest([Message.user("hi")], [])):
                seen.append(ev)
        finally:
            await model.aclose()
    assert seen == [TextDelta("half an answer")]
    assert second.requests == [] and model.failovers == []


async def test_protocol_violations_are_not_failed_over(make_wire: MakeWire) -> None:
    first, second = make_wire(), make_wire()
    first.add_sse(tool_stream("c", "fs_read", '{"path": '))  # arguments are not JSON
    second.add_sse(text_stream("unused"))
    model = FallbackModel([chat_model(first.url), chat_model(second.url)])
    with pytest.raises(ProtocolViolation):
        await answer(model)
    assert second.requests == []


def test_an_empty_chain_is_refused() -> None:
    with pytest.raises(ValueError):
        FallbackModel([])
