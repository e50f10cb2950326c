"""xclaw model events into OpenAI's answer formats: a whole ``chat.completion`` object, or
``chat.completion.chunk`` objects for a stream (``data: {...}`` lines ending in ``[DONE]``).

Text becomes ``content``; each tool call becomes an entry of ``tool_calls`` with its arguments
as a JSON string (in a stream: one delta per call carrying index, id, name and all arguments).
``usage`` is always in a whole answer, and in a stream it is a final chunk with no choices
when the client asked with ``stream_options.include_usage``. Counts are the model's own when
it reported them; otherwise (a web page reports none) they are estimated offline from the
request and the answer (``xclaw.context.tokens``). Reasoning events are not part of OpenAI's
chat format and are left out.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, assert_never

from xclaw.bridge.errors import BridgeError
from xclaw.context.tokens import count_messages, counter_for_model
from xclaw.core.messages import Message, Part, TextPart, ToolCallPart
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

__all__ = [
    "ChatStream",
    "Completion",
    "TokenCount",
    "TurnSummary",
    "sse",
    "token_count",
    "wire_arguments",
]

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

    def message(self) -> Message:
        """The answer as the xclaw assistant message a client will send back."""
        text = "".join(self.text)
        parts: list[Part] = [TextPart(text)] if text else []
        return Message("assistant", (*parts, *self.calls))


def _latest(new: int | None, old: int | None) -> int | None:
    return new if new is not None else old


@dataclass(frozen=True, slots=True)
class TokenCount:
    input: int
    output: int

    def chat(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.input,
            "completion_tokens": self.output,
            "total_tokens": self.input + self.output,
        }


def token_count(turn: TurnSummary, request: ModelRequest, model_name: str) -> TokenCount:
    """The model's own counts, or an offline estimate of what it did not report."""
    if turn.input_tokens is not None and turn.output_tokens is not None:
        return TokenCount(turn.input_tokens, turn.output_tokens)
    counter = counter_for_model(model_name)
    prompt = turn.input_tokens
    if prompt is None:
        prompt = count_messages(counter, request.messages)
    answer = turn.output_tokens
    if answer is None:
        answer = counter.count_message(turn.message())
    return TokenCount(prompt, answer)


def wire_arguments(call: ToolCallPart) -> str:
    """A call's arguments as OpenAI's formats carry them: a JSON object in a string."""
    return json.dumps(call.arguments, ensure_ascii=False, default=str)


def wire_tool_call(call: ToolCallPart) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": wire_arguments(call)},
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

    def whole(self, turn: TurnSummary, tokens: TokenCount) -> dict[str, Any]:
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
        out["usage"] = tokens.chat()
        return out

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        out = self._head("chat.completion.chunk")
        out["choices"] = [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ]
        return out

    def usage_chunk(self, tokens: TokenCount) -> dict[str, Any]:
        out = self._head("chat.completion.chunk")
        out["choices"] = []
        out["usage"] = tokens.chat()
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


@dataclass(slots=True)
class ChatStream:
    """The chunks of one streamed answer: a role chunk, the deltas, a finish chunk, the
    usage chunk if asked for, ``[DONE]``; a failure after the start is an ``error`` chunk."""

    completion: Completion
    include_usage: bool
    calls: int = 0  # tool calls streamed so far: the next one's index

    def opening(self) -> Iterator[str]:
        yield sse(self.completion.chunk({"role": "assistant", "content": ""}))

    def on(self, event: ModelEvent) -> Iterator[str]:
        delta = self.completion.delta(event, self.calls)
        if isinstance(event, ToolCallEvent):
            self.calls += 1
        if delta is not None:
            yield sse(self.completion.chunk(delta))

    def closing(self, turn: TurnSummary, tokens: TokenCount) -> Iterator[str]:
        yield sse(self.completion.chunk({}, turn.finish_reason))
        if self.include_usage:
            yield sse(self.completion.usage_chunk(tokens))
        yield "data: [DONE]\n\n"

    def failed(self, err: BridgeError) -> Iterator[str]:
        yield sse(err.body())


def sse(payload: dict[str, Any]) -> str:
    """One server-sent event carrying ``payload``."""
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"
