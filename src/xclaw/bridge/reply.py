"""xclaw model events into OpenAI's answer formats: a whole ``chat.completion`` object, or
``chat.completion.chunk`` objects for a stream (``data: {...}`` lines ending in ``[DONE]``).

Text becomes ``content``; each tool call becomes an entry of ``tool_calls`` with its arguments
as a JSON string (in a stream: one delta per call carrying index, id, name and all arguments).
``usage`` appears when the model reported both token counts (in a stream, as a final chunk
with no choices, and only when the client asked with ``stream_options.include_usage``).
Reasoning events are not part of OpenAI's chat format and are left out.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, assert_never

from xclaw.core.messages import Message, Part, TextPart, ToolCallPart
from xclaw.core.model import (
    Finish,
    ModelEvent,
    ReasoningDelta,
    ReasoningEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)

__all__ = ["Completion", "TurnSummary", "sse"]

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}


@dataclass(slots=True)
class TurnSummary:
    """One answer gathered from its events."""

    text: list[str] = field(default_factory=list)
    calls: list[ToolCallPart] = field(default_factory=list)
    stop: str = "stop"
    input_tokens: int | None = None
    output_tokens: int | None = None

    def add(self, event: ModelEvent) -> None:
        match event:
            case TextDelta():
                self.text.append(event.text)
            case ToolCallEvent():
                self.calls.append(event.call)
            case Usage():
                self.input_tokens = _latest(event.input_tokens, self.input_tokens)
                self.output_tokens = _latest(event.output_tokens, self.output_tokens)
            case Finish():
                self.stop = event.stop_reason
            case ReasoningDelta() | ReasoningEvent():
                pass
            case _:
                assert_never(event)

    @property
    def finish_reason(self) -> str:
        if self.calls:
            return "tool_calls"
        return _FINISH_REASONS.get(self.stop, "stop")

    def usage(self) -> dict[str, int] | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
        }

    def message(self) -> Message:
        """The answer as the xclaw assistant message a client will send back."""
        text = "".join(self.text)
        parts: list[Part] = [TextPart(text)] if text else []
        return Message("assistant", (*parts, *self.calls))


def _latest(new: int | None, old: int | None) -> int | None:
    return new if new is not None else old


def wire_tool_call(call: ToolCallPart) -> dict[str, Any]:
    arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


@dataclass(frozen=True, slots=True)
class Completion:
    """The identity shared by every object of one answer."""

    id: str
    model: str
    created: int

    @classmethod
    def start(cls, model: str) -> Completion:
        return cls(f"chatcmpl-{secrets.token_hex(12)}", model, int(time.time()))

    def whole(self, turn: TurnSummary) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(turn.text) or None,
            "refusal": None,
        }
        if turn.calls:
            message["tool_calls"] = [wire_tool_call(call) for call in turn.calls]
        out = self._head("chat.completion")
        out["choices"] = [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": turn.finish_reason,
            }
        ]
        usage = turn.usage()
        if usage is not None:
            out["usage"] = usage
        return out

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        out = self._head("chat.completion.chunk")
        out["choices"] = [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ]
        return out

    def usage_chunk(self, usage: dict[str, int]) -> dict[str, Any]:
        out = self._head("chat.completion.chunk")
        out["choices"] = []
        out["usage"] = usage
        return out

    def delta(self, event: ModelEvent, calls_before: int) -> dict[str, Any] | None:
        """The stream delta for ``event`` (``None`` for events a client never sees);
        ``calls_before`` is the number of tool calls already streamed (the new call's index)."""
        if isinstance(event, TextDelta):
            return {"content": event.text} if event.text else None
        if isinstance(event, ToolCallEvent):
            return {"tool_calls": [{"index": calls_before, **wire_tool_call(event.call)}]}
        return None

    def _head(self, kind: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
        }


def sse(payload: dict[str, Any]) -> str:
    """One server-sent event carrying ``payload``."""
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"
