"""Sampling settings from `models:` in xclaw.yaml reach the wire, in each API's own format
(real HTTP against a local WireServer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chat_sse import chat_text
from wire_server import WireServer

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import Message
from xclaw.core.model import Model, ModelRequest

TOOLS = [t.spec for t in coding_registry() if t.name == "fs.read"]
SETTINGS = "{temperature: 0.2, top_p: 0.9, seed: 11, tool_choice: required}"


def _configure(root: Path, pattern: str) -> None:
    (root / "xclaw.yaml").write_text(f"models:\n  '{pattern}': {SETTINGS}\n")


async def _ask(model: Model, *, tools: bool = True, **settings: Any) -> None:
    request = ModelRequest([Message.user("hi")], TOOLS if tools else [], settings)
    try:
        async for _ in model.respond(request):
            pass
    finally:
        await model.aclose()


def _resolve(spec: str, wire: WireServer, root: Path, **kwargs: Any) -> Model:
    from xclaw.config import load_config
    from xclaw.models.resolve import resolve_model

    env = {"XCLAW_API_KEY": "k", "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    settings = load_config(root).models  # the caller's resolved configuration
    return resolve_model(
        spec, base_url=wire.url, env=env, project=root, model_settings=settings, **kwargs
    )


async def test_chat_completions_get_every_setting(wire: WireServer, root: Path) -> None:
    _configure(root, "openai-compatible:*")
    wire.add_sse(chat_text("ok"))
    wire.add_sse(chat_text("ok"))
    await _ask(_resolve("openai-compatible:m", wire, root))
    body = wire.requests[0].body
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.2, 0.9, 11)
    assert body["tool_choice"] == "required"
    # without tools there is no tool_choice; a setting the request carries itself wins
    await _ask(_resolve("openai-compatible:m", wire, root), tools=False, temperature=0.5)
    body = wire.requests[1].body
    assert "tool_choice" not in body and "tools" not in body and body["temperature"] == 0.5


async def test_nothing_is_sent_when_nothing_is_set(wire: WireServer, root: Path) -> None:
    wire.add_sse(chat_text("ok"))
    await _ask(_resolve("openai-compatible:m", wire, root))
    body = wire.requests[0].body
    assert not {"temperature", "top_p", "seed", "tool_choice"} & set(body)


async def test_anthropic_gets_its_own_tool_choice_and_no_seed(wire: WireServer, root: Path) -> None:
    _configure(root, "anthropic-compatible:*")
    wire.add_json(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    )
    await _ask(_resolve("anthropic-compatible:claude-test", wire, root, stream=False))
    body = wire.requests[0].body
    assert (body["temperature"], body["top_p"]) == (0.2, 0.9)
    assert body["tool_choice"] == {"type": "any"}  # "required" in the Messages API's words
    assert "seed" not in body  # the Messages API has none


async def test_responses_get_tool_choice_and_no_seed(wire: WireServer, root: Path) -> None:
    _configure(root, "openai:*")
    wire.add_json(
        200,
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": "gpt-test",
            "output": [
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}],
                }
            ],
            "usage": None,
            "error": None,
            "incomplete_details": None,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        },
    )
    await _ask(_resolve("openai:gpt-4.1", wire, root, stream=False))
    body = wire.requests[0].body
    assert (body["temperature"], body["top_p"], body["tool_choice"]) == (0.2, 0.9, "required")
    assert "seed" not in body


@pytest.mark.parametrize("value", ["3", "1.5"])
def test_out_of_range_settings_are_refused(root: Path, value: str) -> None:
    from xclaw.config import load_config
    from xclaw.core.errors import ConfigError

    key = "temperature" if value == "3" else "top_p"
    (root / "xclaw.yaml").write_text(f"models:\n  '*': {{{key}: {value}}}\n")
    with pytest.raises(ConfigError):
        load_config(root)
