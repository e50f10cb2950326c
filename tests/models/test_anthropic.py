"""AnthropicModel over real HTTP: request shapes, stream and JSON decoding, thinking, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tool_specs import LIST, READ
from wire_server import WireServer

from xclaw.core.errors import ModelRequestRejected, ModelUnavailable, ProtocolViolation
from xclaw.core.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from xclaw.core.model import (
    Finish,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ReasoningEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from xclaw.core.tooling import ToolSpec
from xclaw.models.anthropic import AnthropicModel
from xclaw.models.presets import Capabilities, Preset

THINKER = Preset(
    name="anthropic-test",
    api="anthropic",
    base_url=None,
    capabilities=Capabilities(reasoning=True, max_output_tokens=16000),
)
PLAIN = Preset(name="anthropic-plain", api="anthropic", base_url=None)


# -- fixtures: Messages wire events, written for these tests -----------------------------------


def ev(kind: str, **data: Any) -> str:
    """One SSE event with its ``event:`` line (the SDK skips events without one)."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def start(inp: int = 20, read: int = 0, write: int = 0) -> str:
    usage = {
        "input_tokens": inp,
        "output_tokens": 1,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return ev("message_start", message=message)


def text_block(index: int, *deltas: str) -> list[str]:
    return [
        ev("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(
            ev("content_block_delta", index=index, delta={"type": "text_delta", "text": d})
            for d in deltas
        ),
        ev("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, name: str, *fragments: str) -> list[str]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [
        ev("content_block_start", index=index, content_block=block),
        *(
            ev(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": f},
            )
            for f in fragments
        ),
        ev("content_block_stop", index=index),
    ]


def thinking_block(index: int, deltas: list[str], signature: list[str]) -> list[str]:
    block = {"type": "thinking", "thinking": "", "signature": ""}
    return [
        ev("content_block_start", index=index, content_block=block),
        *(
            ev("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": d})
            for d in deltas
        ),
        *(
            ev(
                "content_block_delta",
                index=index,
                delta={"type": "signature_delta", "signature": s},
            )
            for s in signature
        ),
        ev("content_block_stop", index=index),
    ]


def end(stop: str, out: int = 10) -> list[str]:
    return [
        ev(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": out},
        ),
        ev("message_stop"),
    ]


def model_for(server: WireServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel("claude-test", base_url=server.url, api_key="sk-ant-test", **kw)


async def collect(model: AnthropicModel, request: ModelRequest) -> list[ModelEvent]:
    try:
        return [ev async for ev in model.respond(request)]
    finally:
        await model.aclose()


def ask(text: str = "hi", tools: tuple[ToolSpec, ...] = (READ,), **settings: Any) -> ModelRequest:
    return ModelRequest([Message.system("Be brief."), Message.user(text)], tools, settings)


# -- decoding ----------------------------------------------------------------------------------


async def test_text_stream_yields_deltas_usage_and_stop(wire: WireServer) -> None:
    wire.add_sse([start(20), ev("ping"), *text_block(0, "Hel", "lo"), *end("end_turn", 5)])
    events = await collect(model_for(wire), ask())
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(20, 5, cache_read_tokens=0, cache_write_tokens=0),
        Finish("stop"),
    ]
    sent = wire.requests[0]
    assert sent.path == "/v1/messages"
    assert "sk-ant-test" in (sent.headers.get("x-api-key", "") + sent.headers["authorization"])
    assert sent.body["stream"] is True
    assert sent.body["system"] == "Be brief."
    assert sent.body["max_tokens"] == 8192
    assert sent.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert sent.body["tools"] == [
        {"name": "fs_read", "description": "Read a file.", "input_schema": READ.parameters}
    ]
    assert "thinking" not in sent.body


async def test_tool_input_split_across_fragments_is_joined_and_parsed(wire: WireServer) -> None:
    wire.add_sse(
        [
            start(),
            *text_block(0, "Reading."),
            *tool_block(1, "toolu_1", "fs_read", '{"pa', 'th": "a', '.txt"}'),
            *end("tool_use"),
        ]
    )
    events = await collect(model_for(wire), ask())
    assert events == [
        TextDelta("Reading."),
        ToolCallEvent(ToolCallPart("toolu_1", "fs.read", {"path": "a.txt"})),
        Usage(20, 10, cache_read_tokens=0, cache_write_tokens=0),
        Finish("tool_calls"),
    ]


async def test_parallel_tool_calls_and_empty_input(wire: WireServer) -> None:
    wire.add_sse(
        [
            start(),
            *tool_block(0, "toolu_1", "fs_read", '{"path": "a.txt"}'),
            *tool_block(1, "toolu_2", "fs_list"),
            *end("tool_use"),
        ]
    )
    events = await collect(model_for(wire), ask(tools=(READ, LIST)))
    assert [e.call for e in events if isinstance(e, ToolCallEvent)] == [
        ToolCallPart("toolu_1", "fs.read", {"path": "a.txt"}),
        ToolCallPart("toolu_2", "fs.list", {}),
    ]


async def test_usage_counts_cached_input_in_the_input_total(wire: WireServer) -> None:
    wire.add_sse([start(inp=10, read=300, write=50), *text_block(0, "ok"), *end("end_turn", 42)])
    events = await collect(model_for(wire), ask())
    assert Usage(360, 42, cache_read_tokens=300, cache_write_tokens=50) in events


async def test_stop_reasons_map_to_ours(wire: WireServer) -> None:
    for stop, ours in [("max_tokens", "length"), ("refusal", "content_filter")]:
        wire.add_sse([start(), *text_block(0, "x"), *end(stop)])
        assert (await collect(model_for(wire), ask()))[-1] == Finish(ours)


async def test_non_streaming_json_decodes_like_the_stream(wire: WireServer) -> None:
    wire.add_json(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "thinking", "thinking": "Plan.", "signature": "SIG"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 30, "output_tokens": 7},
        },
    )
    events = await collect(model_for(wire, stream=False), ask())
    assert events == [
        ReasoningDelta("Plan."),
        ReasoningEvent(ReasoningPart("Plan.", provider="anthropic", signature="SIG")),
        TextDelta("Reading."),
        ToolCallEvent(ToolCallPart("toolu_1", "fs.read", {"path": "a"})),
        Usage(30, 7),
        Finish("tool_calls"),
    ]
    assert "stream" not in wire.requests[0].body


async def test_server_tool_blocks_are_not_our_tool_calls(wire: WireServer) -> None:
    server_use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    wire.add_sse(
        [
            start(),
            ev("content_block_start", index=0, content_block=server_use),
            ev(
                "content_block_delta",
                index=0,
                delta={"type": "input_json_delta", "partial_json": '{"q"'},
            ),
            ev("content_block_stop", index=0),
            ev("content_block_start", index=1, content_block=result),
            ev("content_block_stop", index=1),
            *text_block(2, "Found it."),
            *end("end_turn"),
        ]
    )
    events = await collect(model_for(wire), ask())
    assert [e for e in events if isinstance(e, ToolCallEvent)] == []
    assert TextDelta("Found it.") in events
    assert events[-1] == Finish("stop")


# -- thinking ----------------------------------------------------------------------------------


async def test_thinking_is_streamed_signed_and_replayed_first(wire: WireServer) -> None:
    wire.add_sse(
        [
            start(),
            *thinking_block(0, ["Need ", "the file."], ["SIG-", "PART2"]),
            *tool_block(1, "toolu_1", "fs_read", '{"path": "a.txt"}'),
            *end("tool_use"),
        ]
    )
    events = await collect(model_for(wire, preset=THINKER), ask(thinking_budget=4000))
    thought = ReasoningPart("Need the file.", provider="anthropic", signature="SIG-PART2")
    assert events[:3] == [
        ReasoningDelta("Need "),
        ReasoningDelta("the file."),
        ReasoningEvent(thought),
    ]
    first = wire.requests[0].body
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert first["max_tokens"] == 16000

    # The assistant message as the loop builds it: reasoning, text, calls. The thinking block
    # must lead the replayed assistant content, signature unchanged.
    wire.add_sse([start(), *text_block(0, "done"), *end("end_turn")])
    call = ToolCallPart("toolu_1", "fs.read", {"path": "a.txt"})
    history = [
        *ask().messages,
        Message("assistant", (TextPart("Reading."), thought, call)),
        Message("tool", (ToolResultPart("toolu_1", "fs.read", ToolResult.success("hello")),)),
    ]
    await collect(model_for(wire, preset=THINKER), ModelRequest(history, [READ]))
    assert wire.requests[1].body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the file.", "signature": "SIG-PART2"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a.txt"}},
        ],
    }
    assert "thinking" not in wire.requests[1].body  # opt-in per request


async def test_redacted_thinking_round_trips_as_data(wire: WireServer) -> None:
    block = {"type": "redacted_thinking", "data": "OPAQUE=="}
    wire.add_sse(
        [
            start(),
            ev("content_block_start", index=0, content_block=block),
            ev("content_block_stop", index=0),
            *text_block(1, "Hi."),
            *end("end_turn"),
        ]
    )
    events = await collect(model_for(wire), ask())
    part = ReasoningPart("", provider="anthropic", redacted=True, encrypted="OPAQUE==")
    assert events[0] == ReasoningEvent(part)

    wire.add_sse([start(), *text_block(0, "ok"), *end("end_turn")])
    history = [*ask().messages, Message("assistant", (part, TextPart("Hi."))), Message.user("go")]
    await collect(model_for(wire), ModelRequest(history, [READ]))
    assert wire.requests[1].body["messages"][1]["content"][0] == {
        "type": "redacted_thinking",
        "data": "OPAQUE==",
    }


# -- request shapes ----------------------------------------------------------------------------


async def test_history_shapes_system_results_grouped_and_foreign_reasoning_dropped(
    wire: WireServer,
) -> None:
    wire.add_sse([start(), *text_block(0, "ok"), *end("end_turn")])
    failed = ToolResult.failure("FILE_NOT_FOUND", "b.txt does not exist", hint="List first.")
    history = [
        Message.system("Rule one."),
        Message.user("task"),
        Message.system("Rule two."),
        Message(
            "assistant",
            (
                ReasoningPart("openai thought", provider="openai", encrypted="E", signature="rs"),
                ToolCallPart("c1", "fs.read", {"path": "a.txt"}),
                ToolCallPart("c2", "fs.read", {"path": "b.txt"}),
            ),
        ),
        Message(
            "tool",
            (
                ToolResultPart("c1", "fs.read", ToolResult.success("A")),
                ToolResultPart("c2", "fs.read", failed),
            ),
        ),
        Message.user("Please continue."),
    ]
    await collect(model_for(wire), ModelRequest(history, [READ]))
    body = wire.requests[0].body
    assert body["system"] == "Rule one.\n\nRule two."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "fs_read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "c2", "name": "fs_read", "input": {"path": "b.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": ToolResult.success("A").to_model_text(),
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": failed.to_model_text(),
                    "is_error": True,
                },
                {"type": "text", "text": "Please continue."},
            ],
        },
    ]


async def test_images_go_as_base64_unless_the_model_cannot_read_them(wire: WireServer) -> None:
    image = Message("user", (TextPart("look"), ImagePart("image/png", b"\x89PNG")))
    for preset in (None, PLAIN):
        wire.add_sse([start(), *text_block(0, "ok"), *end("end_turn")])
        await collect(model_for(wire, preset=preset), ModelRequest([image], []))
    with_vision, without = (r.body["messages"][0]["content"][1] for r in wire.requests)
    assert with_vision == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
    }
    assert without["type"] == "text" and "cannot read images" in without["text"]


# -- protocol violations -----------------------------------------------------------------------


async def test_invalid_input_json_asks_the_model_again(wire: WireServer) -> None:
    wire.add_sse(
        [start(), *tool_block(0, "toolu_1", "fs_read", '{"path": ', "a.txt}"), *end("tool_use")]
    )
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_TOOL_ARGS_INVALID_JSON"
    assert "fs.read" in info.value.feedback


async def test_duplicate_tool_use_ids_are_a_violation(wire: WireServer) -> None:
    wire.add_sse(
        [
            start(),
            *tool_block(0, "toolu_same", "fs_read", '{"path": "a.txt"}'),
            *tool_block(1, "toolu_same", "fs_read", '{"path": "b.txt"}'),
            *end("tool_use"),
        ]
    )
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_DUPLICATE_TOOL_CALL_ID"


# -- errors ------------------------------------------------------------------------------------


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


async def test_400_is_rejected_and_the_message_is_redacted(wire: WireServer) -> None:
    wire.add_json(400, error_body("invalid_request_error", "bad key sk-ant-ABCDEFGHIJKLMNOPQRSTU"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert info.value.status == 400
    assert "bad key" in str(info.value)
    assert "ABCDEFGHIJKLMNOP" not in str(info.value)


async def test_401_is_rejected_as_an_auth_failure(wire: WireServer) -> None:
    wire.add_json(401, error_body("authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert (info.value.status, info.value.code) == (401, "MODEL_AUTH_FAILED")


async def test_429_is_unavailable_with_the_retry_after_delay(wire: WireServer) -> None:
    wire.add_json(429, error_body("rate_limit_error", "slow down"), headers={"retry-after": "3"})
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert (info.value.status, info.value.retry_after_s) == (429, 3.0)


@pytest.mark.parametrize("status", [500, 529])
async def test_500_and_529_overloaded_are_unavailable(wire: WireServer, status: int) -> None:
    wire.add_json(status, error_body("overloaded_error", "Overloaded"))
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert info.value.status == status


async def test_error_events_in_the_stream_are_classified_by_type(wire: WireServer) -> None:
    wire.add_sse(
        [
            start(),
            *text_block(0, "par"),
            ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ]
    )
    with pytest.raises(ModelUnavailable):
        await collect(model_for(wire), ask())
    wire.add_sse([start(), ev("error", error={"type": "invalid_request_error", "message": "no"})])
    with pytest.raises(ModelRequestRejected):
        await collect(model_for(wire), ask())


async def test_stream_cut_before_message_stop_is_unavailable(wire: WireServer) -> None:
    events = [start(), *text_block(0, "a", "b"), *end("end_turn")]
    wire.add_sse(events, cut_after=4)
    with pytest.raises(ModelUnavailable):
        await collect(model_for(wire), ask())
    wire.add_sse(events[:-1])  # ends cleanly, but without message_stop
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_STREAM_INCOMPLETE"
