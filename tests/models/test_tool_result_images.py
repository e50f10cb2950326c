"""A tool result's images (a screenshot) on the wire of each API, against the local wire-format
server the adapter tests use: OpenAI Chat sends them after the tool messages in a user message
(``image_url`` data URLs: chat tool messages hold text only), OpenAI Responses puts them in the
``function_call_output`` (``input_image``), Anthropic in the ``tool_result`` content (``image``
base64). A model without vision gets the result's text (which names the file) and no image."""

from __future__ import annotations

import base64
import json

import pytest
from test_anthropic import PLAIN, text_block
from test_anthropic import end as anthropic_end
from test_anthropic import model_for as anthropic_model
from test_anthropic import start as anthropic_start
from test_openai_chat import chunk
from test_openai_chat import model_for as chat_model
from test_openai_chat import preset as chat_preset
from test_openai_responses import model_for as responses_model
from test_openai_responses import text_stream
from tool_specs import READ
from wire_server import WireServer

from xclaw.core.messages import (
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from xclaw.core.model import ModelRequest
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.presets import Preset

PNG = b"\x89PNG\r\n\x1a\n" + b"shot" * 8
B64 = base64.b64encode(PNG).decode()
SHOT = ToolResult(
    ok=True,
    message="Screenshot saved to /out/shot-001.png (1280x800 PNG).",
    data={"path": "/out/shot-001.png"},
    images=(ImagePart("image/png", PNG),),
)


def history() -> list[Message]:
    return [
        Message.system("sys"),
        Message.user("what does the page look like?"),
        Message("assistant", (ToolCallPart("call_7", "browser.screenshot", {"full_page": False}),)),
        Message("tool", (ToolResultPart("call_7", "browser.screenshot", SHOT),)),
    ]


async def drain(model: object, request: ModelRequest) -> None:
    try:
        async for _ in model.respond(request):  # type: ignore[attr-defined]
            pass
    finally:
        await model.aclose()  # type: ignore[attr-defined]


def test_images_are_not_in_the_stored_form_of_a_result() -> None:
    assert "images" not in SHOT.to_dict() and B64 not in SHOT.to_model_text()
    assert ToolResult.from_dict(SHOT.to_dict()).images == ()


async def test_openai_chat_sends_the_image_after_the_tool_message(wire: WireServer) -> None:
    seeing = chat_preset("deepseek")
    seeing = seeing.model_copy(
        update={"capabilities": seeing.capabilities.model_copy(update={"vision": True})}
    )
    for model in (
        OpenAIChatModel("m", base_url=wire.url, api_key="k", preset=seeing),
        chat_model(wire, "ollama"),  # no vision
    ):
        wire.add_sse([chunk({"content": "ok"}, "stop")])
        await drain(model, ModelRequest(history(), [READ]))
    seen, blind = (r.body["messages"] for r in wire.requests)
    tool, after = seen[3], seen[4]
    assert tool == {"role": "tool", "tool_call_id": "call_7", "content": SHOT.to_model_text()}
    assert after["role"] == "user"
    note, image = after["content"]
    assert note["type"] == "text" and "call_7" in note["text"]
    assert image == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
    assert B64 not in json.dumps(blind)
    assert "/out/shot-001.png" in blind[3]["content"]  # the text names the file
    assert "image omitted" in json.dumps(blind[4])


async def test_openai_responses_puts_the_image_in_the_call_output(wire: WireServer) -> None:
    blind = Preset(name="blind", api="openai_responses", base_url=None)
    for preset in (None, blind):
        wire.add_sse(text_stream("ok"))
        await drain(responses_model(wire, preset=preset), ModelRequest(history(), [READ]))
    seen, without = (
        next(i for i in r.body["input"] if i["type"] == "function_call_output")
        for r in wire.requests
    )
    assert seen["call_id"] == "call_7"
    assert seen["output"] == [
        {"type": "input_text", "text": SHOT.to_model_text()},
        {"type": "input_image", "image_url": f"data:image/png;base64,{B64}"},
    ]
    assert without["output"] == SHOT.to_model_text()


async def test_anthropic_puts_the_image_in_the_tool_result(wire: WireServer) -> None:
    for preset in (None, PLAIN):
        wire.add_sse([anthropic_start(), *text_block(0, "ok"), *anthropic_end("end_turn")])
        await drain(anthropic_model(wire, preset=preset), ModelRequest(history(), [READ]))
    seen, without = (r.body["messages"][-1]["content"][0] for r in wire.requests)
    assert seen["type"] == "tool_result" and seen["tool_use_id"] == "call_7"
    assert seen["content"] == [
        {"type": "text", "text": SHOT.to_model_text()},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
    ]
    assert without["content"] == SHOT.to_model_text()


@pytest.mark.parametrize("count", [1, 2])
async def test_several_results_keep_their_own_images(wire: WireServer, count: int) -> None:
    """Chat: each result's images follow the tool messages, each introduced by its call."""
    results = tuple(ToolResultPart(f"call_{i}", "browser.screenshot", SHOT) for i in range(count))
    calls = tuple(ToolCallPart(f"call_{i}", "browser.screenshot", {}) for i in range(count))
    messages = [Message.user("look"), Message("assistant", calls), Message("tool", results)]
    messages.append(Message("user", (TextPart("and now?"),)))
    wire.add_sse([chunk({"content": "ok"}, "stop")])
    seeing = chat_preset("openai-chat")
    await drain(
        OpenAIChatModel("m", base_url=wire.url, api_key="k", preset=seeing),
        ModelRequest(messages, [READ]),
    )
    sent = wire.requests[0].body["messages"]
    extra = next(m for m in sent if m["role"] == "user" and isinstance(m["content"], list))
    notes = [c["text"] for c in extra["content"] if c["type"] == "text"]
    assert [f"call_{i}" in n for i, n in enumerate(notes)] == [True] * count
    assert sum(c["type"] == "image_url" for c in extra["content"]) == count
