"""xclaw model events into the Responses API's shapes: a whole ``response`` object, or its
server-sent events (``event: <type>`` and ``data: {...}``, each with a ``sequence_number``).

An answer's text is one ``message`` item with one ``output_text`` part; each tool call is a
``function_call`` item (its arguments a JSON string). A stream goes:

    response.created, response.in_progress              (status in_progress, no output)
    response.output_item.added                          the message item, as text begins
      response.content_part.added, response.output_text.delta ..., response.output_text.done,
      response.content_part.done
    response.output_item.done
    response.output_item.added / function_call_arguments.delta / .done / output_item.done
                                                        per tool call, whole
    response.completed                                  the whole response, usage included
                                                        (response.incomplete when cut short)

A failure after the stream began ends it with ``response.failed`` (status failed, ``error``
with the bridge's code and message). Reasoning is left out, as in the chat format.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xclaw.bridge.errors import BridgeError
from xclaw.bridge.reply import TokenCount, TurnSummary, wire_arguments
from xclaw.bridge.responses import ResponsesRequest
from xclaw.core.messages import ToolCallPart
from xclaw.core.model import ModelEvent, TextDelta, ToolCallEvent

__all__ = ["ResponseHead", "ResponseStream", "whole_response"]


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


@dataclass(frozen=True, slots=True)
class ResponseHead:
    """What every snapshot of one response repeats: its id and the request's settings."""

    id: str
    model: str
    created_at: int
    echo: dict[str, Any]

    @classmethod
    def start(cls, model: str, body: ResponsesRequest) -> ResponseHead:
        tools = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": t.strict,
            }
            for t in body.tools or []
        ]
        echo = {
            "instructions": body.instructions,
            "max_output_tokens": body.max_output_tokens,
            "parallel_tool_calls": body.parallel_tool_calls is not False,
            "reasoning": {"effort": body.reasoning.effort if body.reasoning else None},
            "temperature": body.temperature,
            "tool_choice": body.tool_choice or "auto",
            "tools": tools,
            "top_p": body.top_p,
        }
        return cls(_new_id("resp"), model, int(time.time()), echo)

    def snapshot(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: dict[str, Any] | None = None,
        *,
        incomplete: dict[str, str] | None = None,
        error: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": incomplete,
            "model": self.model,
            "output": output,
            "previous_response_id": None,
            "store": False,
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "usage": usage,
            "metadata": {},
            **self.echo,
        }


def whole_response(head: ResponseHead, turn: TurnSummary, tokens: TokenCount) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    text = "".join(turn.text)
    if text:
        output.append(_message_item(_new_id("msg"), text, "completed"))
    output += [_call_item(_new_id("fc"), call, "completed") for call in turn.calls]
    status, incomplete = _outcome(turn)
    return head.snapshot(status, output, _usage(tokens), incomplete=incomplete)


@dataclass(slots=True)
class ResponseStream:
    """The events of one streamed answer (see the module docstring)."""

    head: ResponseHead
    output: list[dict[str, Any]] = field(default_factory=list)
    sequence: int = 0
    _message_id: str | None = None
    _text: list[str] = field(default_factory=list)

    def opening(self) -> Iterator[str]:
        snapshot = self.head.snapshot("in_progress", [])
        yield self._event("response.created", response=snapshot)
        yield self._event("response.in_progress", response=snapshot)

    def on(self, event: ModelEvent) -> Iterator[str]:
        if isinstance(event, TextDelta) and event.text:
            if self._message_id is None:
                yield from self._open_message()
            self._text.append(event.text)
            yield self._event(
                "response.output_text.delta",
                **self._text_place(),
                delta=event.text,
                logprobs=[],
            )
        elif isinstance(event, ToolCallEvent):
            yield from self._close_message()
            yield from self._call(event.call)

    def closing(self, turn: TurnSummary, tokens: TokenCount) -> Iterator[str]:
        yield from self._close_message()
        status, incomplete = _outcome(turn)
        final = self.head.snapshot(status, self.output, _usage(tokens), incomplete=incomplete)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        yield self._event(kind, response=final)

    def failed(self, err: BridgeError) -> Iterator[str]:
        shown = err.body()["error"]  # redacted
        error = {"code": str(shown["code"]), "message": str(shown["message"])}
        yield self._event(
            "response.failed", response=self.head.snapshot("failed", self.output, error=error)
        )

    def _open_message(self) -> Iterator[str]:
        self._message_id = _new_id("msg")
        item = _message_item(self._message_id, None, "in_progress")
        yield self._event("response.output_item.added", output_index=len(self.output), item=item)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield self._event("response.content_part.added", **self._text_place(), part=part)

    def _close_message(self) -> Iterator[str]:
        if self._message_id is None:
            return
        text = "".join(self._text)
        place = self._text_place()
        yield self._event("response.output_text.done", **place, text=text, logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        yield self._event("response.content_part.done", **place, part=part)
        item = _message_item(self._message_id, text, "completed")
        yield self._event("response.output_item.done", output_index=len(self.output), item=item)
        self.output.append(item)
        self._message_id, self._text = None, []

    def _call(self, call: ToolCallPart) -> Iterator[str]:
        item_id = _new_id("fc")
        index = len(self.output)
        started = {**_call_item(item_id, call, "in_progress"), "arguments": ""}
        yield self._event("response.output_item.added", output_index=index, item=started)
        arguments = wire_arguments(call)
        place = {"item_id": item_id, "output_index": index}
        yield self._event("response.function_call_arguments.delta", **place, delta=arguments)
        yield self._event(
            "response.function_call_arguments.done", **place, name=call.name, arguments=arguments
        )
        done = _call_item(item_id, call, "completed")
        yield self._event("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    def _text_place(self) -> dict[str, Any]:
        return {"item_id": self._message_id, "output_index": len(self.output), "content_index": 0}

    def _event(self, kind: str, **fields: Any) -> str:
        payload = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n"


def _message_item(item_id: str, text: str | None, status: str) -> dict[str, Any]:
    content = (
        []
        if text is None
        else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    )
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(item_id: str, call: ToolCallPart, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": wire_arguments(call),
        "status": status,
    }


def _outcome(turn: TurnSummary) -> tuple[str, dict[str, str] | None]:
    """The response's status and, when it was cut short, why."""
    reason = turn.finish_reason
    if reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if reason == "content_filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def _usage(tokens: TokenCount) -> dict[str, Any]:
    return {
        "input_tokens": tokens.input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens.input + tokens.output,
    }
