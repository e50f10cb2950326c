"""OpenAIChatModel over real HTTP against the local wire server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
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
from xclaw.core.tooling import Risk, ToolSpec
from xclaw.models.openai_chat import OpenAIChatModel, strict_compatible
from xclaw.models.presets import Preset, get_preset

STRICT_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
LOOSE_SCHEMA = {
    "type": "object",
    "properties": {"cmd": {"type": "string"}, "timeout": {"type": "integer", "default": 5}},
    "required": ["cmd"],
    "additionalProperties": False,
}
TOOLS = [
    ToolSpec("fs.read", "Read a file.", STRICT_SCHEMA, True, Risk.READ),
    ToolSpec("terminal.exec", "Run a program.", LOOSE_SCHEMA, False, Risk.EXECUTE),
]


def preset(name: str = "openai-chat") -> Preset:
    found = get_preset(name)
    assert found is not None
    return found


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def call_fragment(
    index: int, *, id: str | None = None, name: str | None = None, args: str = ""
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    if name:
        function["name"] = name
    frag: dict[str, Any] = {"index": index, "function": function}
    if id:
        frag["id"] = id
        frag["type"] = "function"
    return {"tool_calls": [frag]}


USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 12},
}


def model_for(wire: WireServer, name: str = "openai-chat", **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "test-model", base_url=wire.url, api_key="sk-test", preset=preset(name), **kw
    )


async def collect(model: OpenAIChatModel, request: ModelRequest) -> list[ModelEvent]:
    try:
        return [ev async for ev in model.respond(request)]
    finally:
        await model.aclose()


def ask(text: str = "hi", tools: list[ToolSpec] | None = None) -> ModelRequest:
    return ModelRequest([Message.system("be brief"), Message.user(text)], tools or [])


def calls_of(events: list[ModelEvent]) -> list[ToolCallPart]:
    return [ev.call for ev in events if isinstance(ev, ToolCallEvent)]


# -- streaming decode ----------------------------------------------------------------------------


async def test_streamed_text_usage_finish_and_request_shape(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk({"role": "assistant", "content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            chunk(usage=USAGE),
            "data: [DONE]",
        ]
    )
    events = await collect(model_for(wire), ask("hi", TOOLS))
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(120, 30, cache_read_tokens=100, reasoning_tokens=12),
        Finish("stop"),
    ]
    sent = wire.requests[0]
    assert (sent.method, sent.path) == ("POST", "/chat/completions")
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "test-model"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    tools = {t["function"]["name"]: t["function"] for t in sent.body["tools"]}
    assert set(tools) == {"fs_read", "terminal_exec"}
    assert all(t["type"] == "function" for t in sent.body["tools"])
    assert tools["fs_read"]["parameters"] == STRICT_SCHEMA
    # openai-chat may use strict tools, but only for schemas strict mode accepts unchanged
    assert tools["fs_read"]["strict"] is True
    assert "strict" not in tools["terminal_exec"]


async def test_no_strict_flag_when_profile_lacks_it(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "ok"}, "stop"), "data: [DONE]"])
    await collect(model_for(wire, "deepseek"), ask("hi", TOOLS))
    assert all("strict" not in t["function"] for t in wire.requests[0].body["tools"])


def test_strict_compatible_rules() -> None:
    assert strict_compatible(STRICT_SCHEMA)
    assert not strict_compatible(LOOSE_SCHEMA)
    assert not strict_compatible({**STRICT_SCHEMA, "additionalProperties": True})
    nested = {**STRICT_SCHEMA, "properties": {"path": {"type": "object", "properties": {}}}}
    assert not strict_compatible(nested)


async def test_deltas_arrive_before_the_stream_ends(wire: WireServer) -> None:
    wire.add_sse(
        [chunk({"content": "first"}), chunk({"content": " second"}, "stop"), "data: [DONE]"],
        gate_after=1,
    )
    model = model_for(wire)
    stream = model.respond(ask())
    try:
        first = await asyncio.wait_for(anext(stream), 5)
        assert first == TextDelta("first")  # the server still holds back the rest
        wire.release()
        rest = [ev async for ev in stream]
    finally:
        await model.aclose()
    assert rest[0] == TextDelta(" second") and rest[-1] == Finish("stop")


async def test_tool_arguments_split_across_many_chunks(wire: WireServer) -> None:
    arguments = json.dumps({"path": "src/main.py", "note": "ünïcode ✓"})
    pieces = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    events: list[str | dict[str, Any]] = [
        chunk({"role": "assistant", "content": None}),
        chunk(call_fragment(0, id="call_A", name="fs_read")),
    ]
    events += [chunk(call_fragment(0, args=p)) for p in pieces]
    events += [chunk({}, "tool_calls"), "data: [DONE]"]
    wire.add_sse(events)
    out = await collect(model_for(wire), ask("read", TOOLS))
    assert len(pieces) > 10
    assert calls_of(out) == [ToolCallPart("call_A", "fs.read", json.loads(arguments))]
    assert out[-1] == Finish("tool_calls")


async def test_parallel_tool_calls_interleaved(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk(call_fragment(0, id="call_1", name="fs_read")),
            chunk(call_fragment(1, id="call_2", name="terminal_exec")),
            chunk(call_fragment(1, args='{"cmd": ')),
            chunk(call_fragment(0, args='{"path": "a.txt"}')),
            chunk(call_fragment(1, args='"ls"}')),
            chunk({}, "tool_calls"),
            chunk(usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}),
            "data: [DONE]",
        ]
    )
    out = await collect(model_for(wire), ask("two", TOOLS))
    assert calls_of(out) == [
        ToolCallPart("call_1", "fs.read", {"path": "a.txt"}),
        ToolCallPart("call_2", "terminal.exec", {"cmd": "ls"}),
    ]
    assert Usage(5, 9) in out


async def test_index_reused_with_new_id_is_a_new_call(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk(call_fragment(0, id="c1", name="fs_read", args='{"path": "a"}')),
            chunk(call_fragment(0, id="c2", name="fs_read", args='{"path": "b"}')),
            chunk({}, "tool_calls"),
        ]
    )
    out = await collect(model_for(wire), ask("two", TOOLS))
    assert [(c.call_id, c.arguments["path"]) for c in calls_of(out)] == [("c1", "a"), ("c2", "b")]


async def test_reasoning_content_deltas_and_block(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk({"role": "assistant", "reasoning_content": "Let me "}),
            chunk({"reasoning_content": "think."}),
            chunk({"content": "Answer."}),
            chunk({}, "stop"),
            "data: [DONE]",
        ]
    )
    out = await collect(model_for(wire, "deepseek"), ask())
    assert out[:3] == [ReasoningDelta("Let me "), ReasoningDelta("think."), TextDelta("Answer.")]
    assert ReasoningEvent(ReasoningPart("Let me think.", provider="deepseek")) in out


async def test_openrouter_reasoning_field_and_comments(wire: WireServer) -> None:
    wire.add_sse(
        [
            ": OPENROUTER PROCESSING",
            chunk({"role": "assistant", "content": "", "reasoning": "Hmm"}),
            chunk({"content": "Yes"}, "stop"),
            "data: [DONE]",
        ]
    )
    out = await collect(model_for(wire, "openrouter"), ask())
    assert ReasoningDelta("Hmm") in out and TextDelta("Yes") in out
    assert ReasoningEvent(ReasoningPart("Hmm", provider="openrouter")) in out
    assert wire.requests[0].headers["x-title"] == "xclaw"  # preset headers go out


async def test_stop_with_tool_calls_is_normalised(wire: WireServer) -> None:
    wire.add_sse([chunk(call_fragment(0, id="c", name="fs_read", args="{}"), "stop")])
    out = await collect(model_for(wire), ask("x", TOOLS))
    assert out[-1] == Finish("tool_calls")


@pytest.mark.parametrize(
    ("wire_reason", "ours"), [("length", "length"), ("content_filter", "content_filter")]
)
async def test_finish_reasons(wire: WireServer, wire_reason: str, ours: str) -> None:
    wire.add_sse([chunk({"content": "cut"}, wire_reason), "data: [DONE]"])
    out = await collect(model_for(wire), ask())
    assert out[-1] == Finish(ours)


# -- tool-call ids and names ---------------------------------------------------------------------


async def test_conflicting_duplicate_ids_are_rejected(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk({"content": "two calls"}),
            chunk(call_fragment(0, id="dup", name="fs_read", args='{"path": "a"}')),
            chunk(call_fragment(1, id="dup", name="fs_read", args='{"path": "b"}')),
            chunk({}, "tool_calls"),
            "data: [DONE]",
        ]
    )
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask("x", TOOLS))
    assert info.value.code == "MODEL_DUPLICATE_TOOL_CALL_ID"
    assert "dup" in info.value.feedback
    assert info.value.reply_text == "two calls"


async def test_identical_duplicate_is_collapsed(wire: WireServer) -> None:
    repeated = call_fragment(0, id="same", name="fs_read", args='{"path": "a"}')
    again = call_fragment(1, id="same", name="fs_read", args='{"path": "a"}')
    wire.add_sse([chunk(repeated), chunk(again), chunk({}, "tool_calls")])
    out = await collect(model_for(wire), ask("x", TOOLS))
    assert calls_of(out) == [ToolCallPart("same", "fs.read", {"path": "a"})]


async def test_missing_ids_get_deterministic_unique_ids(make_wire: Any) -> None:
    ids: list[list[str]] = []
    for _ in range(2):
        wire = make_wire()
        wire.add_sse(
            [
                chunk(call_fragment(0, name="fs_read", args='{"path": "a"}')),
                chunk(call_fragment(1, name="fs_read", args='{"path": "a"}')),
                chunk({}, "tool_calls"),
            ]
        )
        ids.append([c.call_id for c in calls_of(await collect(model_for(wire), ask("x", TOOLS)))])
    assert ids[0] == ids[1]
    assert len(set(ids[0])) == 2 and all(i for i in ids[0])


async def test_invalid_json_arguments_ask_the_model_again(wire: WireServer) -> None:
    wire.add_sse(
        [
            chunk(call_fragment(0, id="c", name="fs_read", args='{"path": "a"')),
            chunk({}, "tool_calls"),
        ]
    )
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask("x", TOOLS))
    assert info.value.code == "MODEL_TOOL_ARGS_INVALID_JSON"
    assert "fs.read" in info.value.feedback and "JSON" in info.value.feedback


async def test_unknown_wire_name_passes_through(wire: WireServer) -> None:
    wire.add_sse([chunk(call_fragment(0, id="c", name="no_such_tool", args="{}"), "tool_calls")])
    out = await collect(model_for(wire), ask("x", TOOLS))
    assert calls_of(out) == [ToolCallPart("c", "no_such_tool", {})]


async def test_colliding_wire_names_are_rejected_before_sending(wire: WireServer) -> None:
    tools = [*TOOLS, ToolSpec("fs_read", "Another.", STRICT_SCHEMA, True, Risk.READ)]
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask("x", tools))
    assert info.value.code == "MODEL_TOOL_NAME_COLLISION"
    assert wire.requests == []


# -- history encoding ----------------------------------------------------------------------------


DENIED = ToolResult.failure("PATH_DENIED", "no", hint="h")


def history() -> list[Message]:
    png = b"\x89PNG\r\n\x1a\nfake"
    return [
        Message.system("sys"),
        Message("user", (TextPart("look"), ImagePart("image/png", png))),
        Message(
            "assistant",
            (
                ReasoningPart("thinking...", provider="deepseek"),
                ReasoningPart("other provider's", provider="anthropic", signature="sig"),
                TextPart("reading"),
                ToolCallPart("call_9", "fs.read", {"path": "ä.txt"}),
            ),
        ),
        Message(
            "tool",
            (
                ToolResultPart(
                    "call_9", "fs.read", ToolResult.failure("PATH_DENIED", "no", hint="h")
                ),
            ),
        ),
    ]


async def test_history_round_trip_shape(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "ok"}, "stop")])
    deepseek = preset("deepseek")
    seeing = deepseek.model_copy(
        update={"capabilities": deepseek.capabilities.model_copy(update={"vision": True})}
    )
    model = OpenAIChatModel("m", base_url=wire.url, api_key="k", preset=seeing)
    await collect(model, ModelRequest(history(), TOOLS))
    user, assistant, tool = wire.requests[0].body["messages"][1:]
    assert user["content"][0] == {"type": "text", "text": "look"}
    assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0K")
    assert assistant["content"] == "reading"
    assert assistant["tool_calls"] == [
        {
            "id": "call_9",
            "type": "function",
            "function": {"name": "fs_read", "arguments": '{"path": "ä.txt"}'},
        }
    ]
    # reasoning goes back only to the provider that wrote it
    assert assistant["reasoning_content"] == "thinking..."
    assert tool == {"role": "tool", "tool_call_id": "call_9", "content": DENIED.to_model_text()}


async def test_no_reasoning_echo_or_images_without_support(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "ok"}, "stop")])
    await collect(model_for(wire, "ollama"), ModelRequest(history(), TOOLS))
    user, assistant = wire.requests[0].body["messages"][1:3]
    assert "reasoning_content" not in assistant
    assert "image_url" not in json.dumps(user)
    assert "image omitted" in user["content"][1]["text"]


# -- non-streaming mode --------------------------------------------------------------------------


async def test_non_streaming_completion(wire: WireServer) -> None:
    wire.add_json(
        200,
        {
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Reading.",
                        "reasoning_content": "plan",
                        "tool_calls": [
                            {
                                "id": "call_x",
                                "type": "function",
                                "function": {"name": "fs_read", "arguments": '{"path": "a"}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        },
    )
    out = await collect(model_for(wire, "deepseek", stream=False), ask("x", TOOLS))
    assert out == [
        ReasoningDelta("plan"),
        TextDelta("Reading."),
        ReasoningEvent(ReasoningPart("plan", provider="deepseek")),
        ToolCallEvent(ToolCallPart("call_x", "fs.read", {"path": "a"})),
        Usage(7, 3),
        Finish("tool_calls"),
    ]
    assert "stream" not in wire.requests[0].body or wire.requests[0].body["stream"] is False


# -- errors --------------------------------------------------------------------------------------


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


async def test_400_is_rejected_with_the_redacted_provider_message(wire: WireServer) -> None:
    secret = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234"
    wire.add_json(400, error_body(f"Invalid schema for tool fs_read (key {secret})"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask("x", TOOLS))
    err = info.value
    assert (err.code, err.status) == ("MODEL_REQUEST_REJECTED", 400)
    assert "Invalid schema for tool fs_read" in err.message
    assert secret not in str(err)


async def test_400_with_a_non_json_content_type(wire: WireServer) -> None:
    body = json.dumps(error_body("Model Not Exist")).encode()
    wire.add_raw(400, body, "application/octet-stream")
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire, "deepseek"), ask())
    assert "Model Not Exist" in info.value.message


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "MODEL_AUTH_FAILED"), (403, "MODEL_AUTH_FAILED"), (404, "MODEL_NOT_FOUND")],
)
async def test_auth_and_not_found_are_rejected(wire: WireServer, status: int, code: str) -> None:
    wire.add_json(status, error_body("Incorrect API key provided", "authentication_error"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert (info.value.code, info.value.status) == (code, status)
    if status == 401:
        assert "OPENAI_API_KEY" in info.value.hint


async def test_429_is_unavailable_with_retry_after(wire: WireServer) -> None:
    wire.add_json(429, error_body("Rate limit reached", "rate_limit_error"), {"retry-after": "3"})
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    err = info.value
    assert (err.code, err.status, err.retry_after_s) == ("MODEL_RATE_LIMITED", 429, 3.0)
    assert len(wire.requests) == 1  # the SDK's own retries are off


async def test_500_is_unavailable(wire: WireServer) -> None:
    wire.add_json(500, error_body("The server had an error", "server_error"))
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert (info.value.code, info.value.status) == ("MODEL_SERVER_ERROR", 500)


async def test_stream_cut_mid_way_is_unavailable(wire: WireServer) -> None:
    wire.add_sse(
        [chunk({"content": "partial "}), chunk({"content": "answer"}), chunk({}, "stop")],
        cut_after=2,
    )
    seen: list[ModelEvent] = []
    model = model_for(wire)
    with pytest.raises(ModelUnavailable) as info:
        try:
            async for ev in model.respond(ask()):
                seen.append(ev)
        finally:
            await model.aclose()
    assert seen == [TextDelta("partial "), TextDelta("answer")]
    assert info.value.code == "MODEL_CONNECTION_FAILED"


async def test_stream_without_finish_reason_is_incomplete(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "half"}), "data: [DONE]"])
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_STREAM_INCOMPLETE"


async def test_hang_times_out(wire: WireServer) -> None:
    wire.add_hang(10)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire, timeout_s=0.3), ask())
    assert info.value.code == "MODEL_TIMEOUT"
    assert loop.time() - started < 3


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"code": 400, "message": "Token limit reached"}, ModelRequestRejected),
        ({"type": "server_error", "message": "overloaded"}, ModelUnavailable),
        ({"message": "something broke"}, ModelUnavailable),
    ],
)
async def test_in_stream_error_objects(wire: WireServer, error: dict[str, Any], kind: type) -> None:
    wire.add_sse(
        [chunk({"content": "x"}), {**chunk({"content": ""}), "error": error}, "data: [DONE]"]
    )
    with pytest.raises(kind) as info:
        await collect(model_for(wire), ask())
    assert str(error["message"]) in info.value.message


async def test_connection_refused_is_unavailable() -> None:
    from wire_server import unused_url

    model = OpenAIChatModel("m", base_url=unused_url(), api_key=None, preset=preset("ollama"))
    with pytest.raises(ModelUnavailable) as info:
        await collect(model, ask())
    assert info.value.code == "MODEL_CONNECTION_FAILED"


async def test_events_are_an_async_generator(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "a"}, "stop")])
    model = model_for(wire)
    stream = model.respond(ask())
    assert isinstance(stream, AsyncIterator)
    assert [ev async for ev in stream][-1] == Finish("stop")
    await model.aclose()


async def test_stopping_early_closes_the_stream(wire: WireServer) -> None:
    wire.add_sse([chunk({"content": "a"}), chunk({"content": "b"}, "stop")], gate_after=1)
    wire.add_sse([chunk({"content": "again"}, "stop")])
    model = model_for(wire)
    stream = model.respond(ask())
    try:
        assert await anext(stream) == TextDelta("a")
        await stream.aclose()  # the caller gives up mid-stream (e.g. Ctrl+C)
        wire.release()
        events = [ev async for ev in model.respond(ask())]
    finally:
        await model.aclose()
    assert events == [TextDelta("again"), Finish("stop")]
