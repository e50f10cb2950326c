"""Chat Completions SSE streams for the protocol, repair and retry tests (served by WireServer)."""

from __future__ import annotations

import json
from typing import Any

Events = list[str | dict[str, Any]]


def chat_text(*chunks: str, finish: str = "stop", usage: bool = True) -> Events:
    """A streamed text reply: one delta per chunk, then the finish and usage chunks."""
    events: Events = [
        {"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in chunks
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage:
        events.append({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}})
    events.append("data: [DONE]")
    return events


def chat_call(wire_name: str, arguments: dict[str, Any], call_id: str = "c1") -> Events:
    """A streamed native tool call."""
    fragment = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": wire_name, "arguments": json.dumps(arguments)},
    }
    return [
        {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "data: [DONE]",
    ]
