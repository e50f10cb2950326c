"""One scripted conversation, served in each wire format, means the same thing to xclaw.

The task: turn 1 the model says a line and calls ``fs.read`` with ``{"path": "a.txt"}`` (its
arguments split across two fragments); turn 2 it answers "done". OpenAI Chat Completions,
OpenAI Responses and Anthropic Messages must all decode to identical event sequences, and an
``Agent`` run must end the same way through each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tool_specs import READ
from wire_server import WireServer

from xclaw import Agent
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import (
    Finish,
    Model,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from xclaw.models.anthropic import AnthropicModel
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.openai_responses import OpenAIResponsesModel
from xclaw.models.presets import Preset, get_preset

FRAGMENTS = ('{"path": ', '"a.txt"}')


@dataclass(frozen=True)
class Turn:
    texts: tuple[str, ...]  # text deltas, in order
    call: bool  # whether the turn ends with the fs.read call
    input_tokens: int
    output_tokens: int


SCRIPT = (
    Turn(("Reading ", "a.txt."), call=True, input_tokens=100, output_tokens=10),
    Turn(("do", "ne"), call=False, input_tokens=150, output_tokens=5),
)

EXPECTED = [
    [
        TextDelta("Reading "),
        TextDelta("a.txt."),
        ToolCallEvent(ToolCallPart("call_1", "fs.read", {"path": "a.txt"})),
        Usage(100, 10),
        Finish("tool_calls"),
    ],
    [TextDelta("do"), TextDelta("ne"), Usage(150, 5), Finish("stop")],
]


# -- the script in each wire format (fixtures written for this test) ---------------------------

Events = list[str | bytes | dict[str, Any]]


def chat_events(turn: Turn) -> Events:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [choice],
        }

    out: Events = [chunk({"role": "assistant", "content": t}) for t in turn.texts]
    if turn.call:
        first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "fs_read"}}
        out.append(chunk({"tool_calls": [first]}))
        out += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in FRAGMENTS
        ]
    out.append(chunk({}, "tool_calls" if turn.call else "stop"))
    usage = {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    out.append(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [],
            "usage": usage,
        }
    )
    out.append("data: [DONE]")
    return out


def sse(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def responses_events(turn: Turn) -> Events:
    text = "".join(turn.texts)
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    call = {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "fs_read",
        "arguments": "",
        "status": "in_progress",
    }
    out: Events = [
        sse("response.output_item.added", output_index=0, item={**message, "content": []})
    ]
    out += [sse("response.output_text.delta", item_id="msg_1", delta=t) for t in turn.texts]
    out.append(sse("response.output_item.done", output_index=0, item=message))
    output = [message]
    if turn.call:
        done = {**call, "arguments": "".join(FRAGMENTS), "status": "completed"}
        out.append(sse("response.output_item.added", output_index=1, item=call))
        out += [
            sse("response.function_call_arguments.delta", item_id="fc_1", delta=f)
            for f in FRAGMENTS
        ]
        out.append(sse("response.output_item.done", output_index=1, item=done))
        output.append(done)
    usage = {
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": output,
        "usage": usage,
    }
    out.append(sse("response.completed", response=response))
    return out


def anthropic_events(turn: Turn) -> Events:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "usage": {"input_tokens": turn.input_tokens, "output_tokens": 1},
    }
    out: Events = [sse("message_start", message=message)]
    out.append(sse("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    out += [
        sse("content_block_delta", index=0, delta={"type": "text_delta", "text": t})
        for t in turn.texts
    ]
    out.append(sse("content_block_stop", index=0))
    if turn.call:
        block = {"type": "tool_use", "id": "call_1", "name": "fs_read", "input": {}}
        out.append(sse("content_block_start", index=1, content_block=block))
        out += [
            sse(
                "content_block_delta",
                index=1,
                delta={"type": "input_json_delta", "partial_json": f},
            )
            for f in FRAGMENTS
        ]
        out.append(sse("content_block_stop", index=1))
    stop = {"stop_reason": "tool_use" if turn.call else "end_turn"}
    out.append(sse("message_delta", delta=stop, usage={"output_tokens": turn.output_tokens}))
    out.append(sse("message_stop"))
    return out


def preset(name: str) -> Preset:
    found = get_preset(name)
    assert found is not None
    return found


@dataclass(frozen=True)
class Api:
    name: str
    events: Callable[[Turn], Events]
    make: Callable[[str], Model]


APIS = [
    Api(
        "openai_chat",
        chat_events,
        lambda url: OpenAIChatModel(
            "m", base_url=url + "/v1", api_key="k", preset=preset("openai-chat")
        ),
    ),
    Api(
        "openai_responses",
        responses_events,
        lambda url: OpenAIResponsesModel(
            "m", base_url=url + "/v1", api_key="k", preset=preset("openai")
        ),
    ),
    Api(
        "anthropic",
        anthropic_events,
        lambda url: AnthropicModel("m", base_url=url, api_key="k", preset=preset("anthropic")),
    ),
]


async def decode(api: Api, server: WireServer) -> list[list[ModelEvent]]:
    model = api.make(server.url)
    request = ModelRequest([Message.system("Be brief."), Message.user("Read a.txt")], [READ])
    turns = []
    try:
        for turn in SCRIPT:
            server.add_sse(api.events(turn))
            turns.append([ev async for ev in model.respond(request)])
    finally:
        await model.aclose()
    return turns


# -- tests -------------------------------------------------------------------------------------


async def test_every_wire_format_decodes_to_the_same_events(
    make_wire: Callable[[], WireServer],
) -> None:
    decoded = {api.name: await decode(api, make_wire()) for api in APIS}
    for name, turns in decoded.items():
        assert turns == EXPECTED, name


@pytest.mark.parametrize("api", APIS, ids=lambda api: api.name)
async def test_an_agent_run_ends_the_same_through_each_format(
    api: Api, wire: WireServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("contents of a\n", encoding="utf-8")
    for turn in SCRIPT:
        wire.add_sse(api.events(turn))
    model = api.make(wire.url)
    try:
        result = await Agent(model, tmp_path, evidence_gate_enabled=False).run("Read a.txt")
    finally:
        await model.aclose()

    assert (result.status, result.reply) == ("completed", "done"), result.reason
    assert [(c.call_id, c.name, c.input, c.result.ok) for c in result.tool_calls] == [
        ("call_1", "fs.read", {"path": "a.txt"}, True)
    ]
    assert result.metrics.input_tokens == 250
    wire.assert_all_used()
    # The second request carried the call and the file's contents back, in this API's shape.
    second = wire.requests[1].raw.decode()
    assert "call_1" in second and "contents of a" in second and "fs_read" in second
