"""OpenAIResponsesModel over real HTTP: request shapes, stream and JSON decoding, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tool_specs import LIST, READ
from wire_server import WireServer, unused_url

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
from xclaw.models.openai_responses import OpenAIResponsesModel
from xclaw.models.presets import Capabilities, Preset

REASONING = Preset(
    name="openai-test",
    api="openai_responses",
    base_url=None,
    capabilities=Capabilities(reasoning=True),
)


# -- fixtures: Responses wire events, written for these tests ----------------------------------


def ev(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def response(
    output: list[dict[str, Any]] | None = None,
    *,
    usage: dict[str, Any] | None = None,
    status: str = "completed",
    incomplete: str | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "gpt-test",
        "output": output or [],
        "usage": usage,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def usage(inp: int, out: int, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def message_item(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(item_id: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def text_stream(*deltas: str, use: dict[str, Any] | None = None) -> list[str | bytes | dict]:
    text = "".join(deltas)
    return [
        ev("response.created", response=response(status="in_progress")),
        ev("response.output_item.added", output_index=0, item={**message_item(""), "content": []}),
        *(ev("response.output_text.delta", item_id="msg_1", delta=d) for d in deltas),
        ev("response.output_item.done", output_index=0, item=message_item(text)),
        ev("response.completed", response=response([message_item(text)], usage=use)),
    ]


def call_stream(calls: list[tuple[str, str, str, list[str]]]) -> list[str | bytes | dict]:
    """Function calls streamed as added → argument fragments → done, one after another."""
    events: list[str | bytes | dict] = [ev("response.created", response=response())]
    items = []
    for index, (item_id, call_id, name, fragments) in enumerate(calls):
        events.append(
            ev(
                "response.output_item.added",
                output_index=index,
                item={**call_item(item_id, call_id, name, ""), "status": "in_progress"},
            )
        )
        for fragment in fragments:
            events.append(
                ev("response.function_call_arguments.delta", item_id=item_id, delta=fragment)
            )
        whole = "".join(fragments)
        events.append(ev("response.function_call_arguments.done", item_id=item_id, arguments=whole))
        items.append(call_item(item_id, call_id, name, whole))
        events.append(ev("response.output_item.done", output_index=index, item=items[-1]))
    events.append(ev("response.completed", response=response(items, usage=usage(50, 9))))
    return events


def model_for(server: WireServer, **kw: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-test", base_url=server.url + "/v1", api_key="sk-test", **kw)


async def collect(model: OpenAIResponsesModel, request: ModelRequest) -> list[ModelEvent]:
    try:
        return [ev async for ev in model.respond(request)]
    finally:
        await model.aclose()


def ask(text: str = "hi", tools: tuple[ToolSpec, ...] = (READ,)) -> ModelRequest:
    return ModelRequest([Message.system("Be brief."), Message.user(text)], tools)


# -- decoding ----------------------------------------------------------------------------------


async def test_text_stream_yields_deltas_usage_and_stop(wire: WireServer) -> None:
    wire.add_sse(text_stream("Hel", "lo", use=usage(12, 3)))
    events = await collect(model_for(wire), ask())
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(12, 3, cache_read_tokens=0, reasoning_tokens=0),
        Finish("stop"),
    ]
    sent = wire.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["stream"] is True
    assert sent.body["store"] is False
    assert sent.body["instructions"] == "Be brief."
    assert sent.body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert sent.body["tools"] == [
        {
            "type": "function",
            "name": "fs_read",
            "description": "Read a file.",
            "parameters": READ.parameters,
            "strict": False,
        }
    ]
    assert "include" not in sent.body


async def test_tool_arguments_split_across_chunks_map_back_to_real_names(
    wire: WireServer,
) -> None:
    wire.add_sse(call_stream([("fc_1", "call_a", "fs_read", ['{"pa', 'th": "a', '.txt"}'])]))
    events = await collect(model_for(wire), ask())
    assert events == [
        ToolCallEvent(ToolCallPart("call_a", "fs.read", {"path": "a.txt"})),
        Usage(50, 9, cache_read_tokens=0, reasoning_tokens=0),
        Finish("tool_calls"),
    ]


async def test_parallel_tool_calls_keep_their_order(wire: WireServer) -> None:
    wire.add_sse(
        call_stream(
            [
                ("fc_1", "call_a", "fs_read", ['{"path":', ' "a.txt"}']),
                ("fc_2", "call_b", "fs_list", ["{}"]),
            ]
        )
    )
    events = await collect(model_for(wire), ask(tools=(READ, LIST)))
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert calls == [
        ToolCallPart("call_a", "fs.read", {"path": "a.txt"}),
        ToolCallPart("call_b", "fs.list", {}),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_usage_reports_cached_and_reasoning_tokens(wire: WireServer) -> None:
    wire.add_sse(text_stream("ok", use=usage(1000, 80, cached=600, reasoning=50)))
    events = await collect(model_for(wire), ask())
    assert Usage(1000, 80, cache_read_tokens=600, reasoning_tokens=50) in events


async def test_non_streaming_json_decodes_like_the_stream(wire: WireServer) -> None:
    body = response(
        [message_item("Reading."), call_item("fc_1", "call_a", "fs_read", '{"path":"a.txt"}')],
        usage=usage(30, 7),
    )
    wire.add_json(200, body)
    events = await collect(model_for(wire, stream=False), ask())
    assert events == [
        TextDelta("Reading."),
        ToolCallEvent(ToolCallPart("call_a", "fs.read", {"path": "a.txt"})),
        Usage(30, 7, cache_read_tokens=0, reasoning_tokens=0),
        Finish("tool_calls"),
    ]
    assert "stream" not in wire.requests[0].body


async def test_incomplete_response_finishes_with_length(wire: WireServer) -> None:
    events = text_stream("cut sh")
    events[-1] = ev(
        "response.incomplete",
        response=response(status="incomplete", incomplete="max_output_tokens"),
    )
    wire.add_sse(events)
    assert (await collect(model_for(wire), ask()))[-1] == Finish("length")


# -- reasoning ---------------------------------------------------------------------------------


async def test_reasoning_summary_streams_and_encrypted_item_is_replayed(
    wire: WireServer,
) -> None:
    item = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Need the file."}],
        "encrypted_content": "ENC-BLOB",
    }
    wire.add_sse(
        [
            ev("response.output_item.added", output_index=0, item={**item, "summary": []}),
            ev("response.reasoning_summary_text.delta", item_id="rs_1", delta="Need "),
            ev("response.reasoning_summary_text.delta", item_id="rs_1", delta="the file."),
            ev("response.output_item.done", output_index=0, item=item),
            *call_stream([("fc_1", "call_a", "fs_read", ['{"path": "a.txt"}'])])[1:],
        ]
    )
    model = model_for(wire, preset=REASONING)
    events = await collect(model, ask())
    part = ReasoningPart(
        "Need the file.", provider="openai", signature="rs_1", encrypted="ENC-BLOB"
    )
    assert events[:3] == [
        ReasoningDelta("Need "),
        ReasoningDelta("the file."),
        ReasoningEvent(part),
    ]
    assert wire.requests[0].body["include"] == ["reasoning.encrypted_content"]

    # The next turn sends the reasoning item back before the call it led to.
    wire.add_sse(text_stream("done"))
    call = ToolCallPart("call_a", "fs.read", {"path": "a.txt"})
    history = [
        *ask().messages,
        Message("assistant", (part, call)),
        Message("tool", (ToolResultPart("call_a", "fs.read", ToolResult.success("hello")),)),
    ]
    await collect(model_for(wire, preset=REASONING), ModelRequest(history, [READ]))
    assert wire.requests[1].body["input"][1:] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "ENC-BLOB",
            "summary": [{"type": "summary_text", "text": "Need the file."}],
        },
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "fs_read",
            "arguments": '{"path": "a.txt"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_a",
            "output": ToolResult.success("hello").to_model_text(),
        },
    ]


# -- request shapes ----------------------------------------------------------------------------


async def test_history_shapes_system_text_calls_and_results(wire: WireServer) -> None:
    wire.add_sse(text_stream("ok"))
    failed = ToolResult.failure("FILE_NOT_FOUND", "b.txt does not exist", hint="List first.")
    history = [
        Message.system("Rule one."),
        Message.user("task"),
        Message.system("Rule two."),
        Message(
            "assistant",
            (
                ReasoningPart("foreign thought", provider="anthropic", signature="sig"),
                TextPart("Looking."),
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
    ]
    await collect(model_for(wire), ModelRequest(history, [READ]))
    body = wire.requests[0].body
    assert body["instructions"] == "Rule one.\n\nRule two."
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "task"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "fs_read",
            "arguments": '{"path": "a.txt"}',
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "fs_read",
            "arguments": '{"path": "b.txt"}',
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": ToolResult.success("A").to_model_text(),
        },
        {"type": "function_call_output", "call_id": "c2", "output": failed.to_model_text()},
    ]


async def test_images_go_as_data_urls_unless_the_model_cannot_read_them(wire: WireServer) -> None:
    image = Message("user", (TextPart("look"), ImagePart("image/png", b"\x89PNG")))
    blind = Preset(name="blind", api="openai_responses", base_url=None)
    for preset in (None, blind):
        wire.add_sse(text_stream("ok"))
        await collect(model_for(wire, preset=preset), ModelRequest([image], []))
    with_vision, without = (r.body["input"][0]["content"][1] for r in wire.requests)
    assert with_vision == {"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="}
    assert without["type"] == "input_text" and "cannot read images" in without["text"]
    assert "tools" not in wire.requests[0].body


async def test_tool_name_collision_is_refused_before_sending(wire: WireServer) -> None:
    twin = ToolSpec("fs_read", "Twin.", {"type": "object"}, read_only=True, risk=Risk.READ)
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask(tools=(READ, twin)))
    assert info.value.code == "MODEL_TOOL_NAME_COLLISION"
    assert wire.requests == []


# -- protocol violations -----------------------------------------------------------------------


async def test_invalid_argument_json_asks_the_model_again(wire: WireServer) -> None:
    wire.add_sse(call_stream([("fc_1", "call_a", "fs_read", ['{"path": ', "a.txt}"])]))
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_TOOL_ARGS_INVALID_JSON"
    assert "fs.read" in info.value.feedback


async def test_duplicate_call_ids_in_one_response_are_a_violation(wire: WireServer) -> None:
    wire.add_sse(
        call_stream(
            [
                ("fc_1", "call_same", "fs_read", ['{"path": "a.txt"}']),
                ("fc_2", "call_same", "fs_read", ['{"path": "b.txt"}']),
            ]
        )
    )
    with pytest.raises(ProtocolViolation) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_DUPLICATE_TOOL_CALL_ID"


# -- errors ------------------------------------------------------------------------------------


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


async def test_400_is_rejected_and_the_message_is_redacted(wire: WireServer) -> None:
    wire.add_json(400, error_body("bad input near sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "invalid"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert info.value.status == 400
    assert "bad input" in str(info.value)
    assert "ABCDEFGHIJKLMNOP" not in str(info.value)


async def test_401_is_rejected_as_an_auth_failure(wire: WireServer) -> None:
    wire.add_json(401, error_body("Incorrect API key provided", "invalid_request_error"))
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert (info.value.status, info.value.code) == (401, "MODEL_AUTH_FAILED")


async def test_429_is_unavailable_with_the_retry_after_delay(wire: WireServer) -> None:
    wire.add_json(429, error_body("slow down", "rate_limit_error"), headers={"retry-after": "7"})
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert (info.value.status, info.value.code) == (429, "MODEL_RATE_LIMITED")
    assert info.value.retry_after_s == 7.0


async def test_500_is_unavailable(wire: WireServer) -> None:
    wire.add_json(500, error_body("boom", "server_error"))
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert info.value.status == 500


async def test_stream_cut_mid_way_is_unavailable(wire: WireServer) -> None:
    wire.add_sse(text_stream("a", "b", "c"), cut_after=3)
    with pytest.raises(ModelUnavailable):
        await collect(model_for(wire), ask())


async def test_stream_ending_without_completion_is_unavailable(wire: WireServer) -> None:
    wire.add_sse(text_stream("a", "b")[:-1])
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire), ask())
    assert info.value.code == "MODEL_STREAM_INCOMPLETE"


async def test_failed_response_event_is_classified_by_its_code(wire: WireServer) -> None:
    failed = response(status="failed", error={"code": "server_error", "message": "oops"})
    wire.add_sse(
        [ev("response.created", response=response()), ev("response.failed", response=failed)]
    )
    with pytest.raises(ModelUnavailable):
        await collect(model_for(wire), ask())
    wire.add_sse([ev("error", code="invalid_prompt", message="not allowed", param=None)])
    with pytest.raises(ModelRequestRejected) as info:
        await collect(model_for(wire), ask())
    assert "invalid_prompt" in str(info.value)


async def test_nested_error_event_is_classified_by_its_type(wire: WireServer) -> None:
    wire.add_sse([ev("error", error={"type": "invalid_request_error", "message": "too long"})])
    with pytest.raises(ModelRequestRejected):
        await collect(model_for(wire), ask())


async def test_timeout_and_refused_connection_are_unavailable(wire: WireServer) -> None:
    wire.add_hang(5)
    with pytest.raises(ModelUnavailable) as info:
        await collect(model_for(wire, timeout_s=0.3), ask())
    assert info.value.code == "MODEL_TIMEOUT"
    refused = OpenAIResponsesModel("m", base_url=unused_url(), api_key=None)
    with pytest.raises(ModelUnavailable) as info:
        await collect(refused, ask())
    assert info.value.code == "MODEL_CONNECTION_FAILED"
