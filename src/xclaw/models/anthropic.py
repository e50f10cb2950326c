"""Anthropic Messages API (``POST /v1/messages``) wire adapter.

Thinking blocks come back with a signature and go out again, unchanged and first in their
assistant message: with thinking on, a tool-use turn without its thinking is refused.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

import anthropic
import httpx2

from xclaw.core.errors import ModelError
from xclaw.core.messages import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
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
from xclaw.models._http import (
    ToolNames,
    fallback_call_id,
    map_sdk_error,
    parse_tool_arguments,
    settle_call_ids,
    stream_error,
    stream_incomplete,
)
from xclaw.models._wire import WireModel
from xclaw.models.presets import Preset

__all__ = ["AnthropicModel"]

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024
IMAGE_OMITTED = "[an image was omitted: this model cannot read images]"
_EFFORT_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


class AnthropicModel(WireModel):
    """A model behind the Anthropic Messages wire format."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        preset: Preset | None = None,
        stream: bool = True,
        timeout_s: float = 600.0,
    ) -> None:
        super().__init__(model, preset, default_label="anthropic", stream=stream)
        # A placeholder key keeps the SDK from looking for credentials on its own (environment,
        # profiles): which key a provider uses is the resolver's decision. Retries are ours.
        self._client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=api_key or "unused",
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            default_headers=self.extra_headers,
        )

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        names = ToolNames(spec.name for spec in request.tools)
        body = self.request_body(request, names)
        decoder = MessagesDecoder(names)
        try:
            if not self.stream:
                message = await self._client.messages.create(**body)
                for ev in decoder.final(message):
                    yield ev
                return
            stream = await self._client.messages.create(**body, stream=True)
            async with stream:
                async for event in stream:
                    for ev in decoder.feed(event):
                        yield ev
            if not decoder.stopped:
                raise stream_incomplete(self.label)
        except (anthropic.AnthropicError, httpx2.HTTPError) as err:
            key_env = self.preset.key_env if self.preset else None
            raise anthropic_error(err, self.label, key_env) from None

    def request_body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` (everything but ``stream``)."""
        system, messages = anthropic_messages(request.messages, names, vision=self.profile.vision)
        settings = request.settings
        max_tokens = int(
            settings.get("max_tokens") or self.profile.max_output_tokens or DEFAULT_MAX_TOKENS
        )
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if system:
            body["system"] = system
        budget = thinking_budget(settings, max_tokens) if self.profile.reasoning else None
        if request.tools and self.profile.tools:
            body["tools"] = [anthropic_tool(spec, names) for spec in request.tools]
            choice = anthropic_tool_choice(settings.get("tool_choice"), thinking=bool(budget))
            if choice is not None:
                body["tool_choice"] = choice
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        sampling = {key: settings[key] for key in ("temperature", "top_p") if key in settings}
        if sampling:  # the Messages API takes them; this SDK's create() no longer names them
            body["extra_body"] = sampling
        return body


def anthropic_tool_choice(choice: Any, *, thinking: bool) -> dict[str, str] | None:
    """``tool_choice`` in the Messages format: auto, any (our "required") or none. With
    thinking on, the API accepts only auto and none, so "required" is not sent then; there
    is no seed in this API."""
    kind = {"auto": "auto", "required": "any", "none": "none"}.get(str(choice))
    if kind is None or (thinking and kind == "any"):
        return None
    return {"type": kind}


def anthropic_error(err: Exception, provider: str, key_env: str | None = None) -> ModelError:
    """The SDK reports an ``error`` event inside a stream as a status error that carries the
    stream's 200; classify it by the error object, the way ``stream_error`` does."""
    if isinstance(err, anthropic.APIStatusError) and err.status_code < 400:
        return stream_error(err.body, provider=provider)
    return map_sdk_error(err, provider=provider, key_env=key_env)


def thinking_budget(settings: Mapping[str, Any], max_tokens: int) -> int | None:
    """Thinking is opt-in (it costs tokens and time): ``thinking_budget`` in tokens, or a
    ``reasoning_effort`` word. The API wants at least 1024 and less than ``max_tokens``."""
    wanted = settings.get("thinking_budget") or _EFFORT_BUDGETS.get(
        str(settings.get("reasoning_effort"))
    )
    if not wanted:
        return None
    budget = min(max(int(wanted), MIN_THINKING_BUDGET), max_tokens - 1)
    return budget if budget >= MIN_THINKING_BUDGET else None


# -- request --------------------------------------------------------------------------------


def anthropic_tool(spec: ToolSpec, names: ToolNames) -> dict[str, Any]:
    return {
        "name": names.wire(spec.name),
        "description": spec.description,
        "input_schema": spec.parameters,
    }


def anthropic_messages(
    messages: Sequence[Message], names: ToolNames, *, vision: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """System text, and the conversation as alternating user/assistant content blocks.

    Tool results travel in user messages; consecutive messages of one side are merged, so the
    results of one tool turn (and any note after them) arrive as one user message.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "system":
            if msg.text:
                system.append(msg.text)
            continue
        role = "assistant" if msg.role == "assistant" else "user"
        blocks = _blocks(msg.parts, names, assistant=role == "assistant", vision=vision)
        if not blocks:
            continue  # the API refuses empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return "\n\n".join(system), out


def _blocks(
    parts: Sequence[Part], names: ToolNames, *, assistant: bool, vision: bool
) -> list[dict[str, Any]]:
    thinking: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for part in parts:
        block = _block(part, names)
        if isinstance(part, ToolResultPart) and part.result.images and vision and block:
            # A tool result's content may hold images: its text, then what it returned.
            images = [_block(i, names) for i in part.result.images]
            block["content"] = [{"type": "text", "text": block["content"]}, *images]
        if block is not None and block["type"] == "image" and not vision:
            block = {"type": "text", "text": IMAGE_OMITTED}
        if block is None:
            continue
        if block["type"] in ("thinking", "redacted_thinking"):
            if assistant:  # thinking leads its assistant message, as the API requires
                thinking.append(block)
            continue
        if block["type"] == "image" and assistant:
            continue
        rest.append(block)
    return thinking + rest


def _block(part: Part, names: ToolNames) -> dict[str, Any] | None:
    match part:
        case TextPart():
            return {"type": "text", "text": part.text} if part.text else None
        case ImagePart():
            data = base64.b64encode(part.data).decode("ascii")
            source = {"type": "base64", "media_type": part.media_type, "data": data}
            return {"type": "image", "source": source}
        case ReasoningPart():
            return _thinking_block(part)
        case ToolCallPart():
            return {
                "type": "tool_use",
                "id": part.call_id,
                "name": names.wire(part.name),
                "input": part.arguments,
            }
        case ToolResultPart():
            return {
                "type": "tool_result",
                "tool_use_id": part.call_id,
                "content": part.result.to_model_text(),
                "is_error": not part.result.ok,
            }
        case _:
            assert_never(part)


def _thinking_block(part: ReasoningPart) -> dict[str, Any] | None:
    if part.provider != PROVIDER:
        return None  # another provider's reasoning means nothing here
    if part.redacted:
        data = part.encrypted or part.signature
        return {"type": "redacted_thinking", "data": data} if data else None
    if not part.signature:
        return None  # unsigned thinking is refused; the text alone cannot be replayed
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


# -- response -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)  # text, thinking, or tool input JSON
    signature: str = ""  # a thinking signature, or a redacted_thinking block's data
    call_id: str = ""
    name: str = ""
    start_input: Any = None


class MessagesDecoder:
    """Turns stream events (``feed``) or a whole message (``final``) into model events.

    Tool calls are held back until the message stops, so duplicate ids can be settled across
    the whole reply before the loop sees any of them.
    """

    def __init__(self, names: ToolNames) -> None:
        self.names = names
        self.blocks: dict[int, _Block] = {}
        self.calls: list[ToolCallPart] = []
        self.text: list[str] = []
        self.usage: dict[str, int | None] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def feed(self, event: Any) -> Iterator[ModelEvent]:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self._usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            yield from self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            yield from self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            block = self.blocks.pop(event.index, None)
            if block is not None:
                yield from self._finish_block(block)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.stopped = True
            yield from self._end()

    def final(self, message: Any) -> Iterator[ModelEvent]:
        """A whole (non-streamed) message."""
        self._usage(getattr(message, "usage", None))
        self.stop_reason = getattr(message, "stop_reason", None)
        for index, content in enumerate(getattr(message, "content", None) or []):
            yield from self._start(index, content)
            block = self.blocks.pop(index, None)
            if block is not None:
                yield from self._finish_block(block)
        self.stopped = True
        yield from self._end()

    def _start(self, index: int, content: Any) -> Iterator[ModelEvent]:
        kind = getattr(content, "type", "")
        if kind == "text":
            self.blocks[index] = _Block(kind)
            yield from self._text(self.blocks[index], getattr(content, "text", "") or "")
        elif kind == "thinking":
            block = _Block(kind, signature=getattr(content, "signature", "") or "")
            self.blocks[index] = block
            yield from self._thinking(block, getattr(content, "thinking", "") or "")
        elif kind == "redacted_thinking":
            self.blocks[index] = _Block(kind, signature=getattr(content, "data", "") or "")
        elif kind == "tool_use":
            self.blocks[index] = _Block(
                kind, call_id=content.id, name=content.name, start_input=content.input
            )
        # Server tool blocks (server_tool_use, web_search_tool_result, ...) are run by the
        # provider, not by us: they are neither text nor our tool calls.

    def _delta(self, index: int, delta: Any) -> Iterator[ModelEvent]:
        block = self.blocks.get(index)
        if block is None:
            return
        kind = getattr(delta, "type", "")
        if kind == "text_delta" and block.kind == "text":
            yield from self._text(block, delta.text)
        elif kind == "thinking_delta" and block.kind == "thinking":
            yield from self._thinking(block, delta.thinking)
        elif kind == "signature_delta" and block.kind == "thinking":
            block.signature += delta.signature
        elif kind == "input_json_delta" and block.kind == "tool_use":
            block.text.append(delta.partial_json)

    def _text(self, block: _Block, text: str) -> Iterator[ModelEvent]:
        if text:
            block.text.append(text)
            self.text.append(text)
            yield TextDelta(text)

    def _thinking(self, block: _Block, text: str) -> Iterator[ModelEvent]:
        if text:
            block.text.append(text)
            yield ReasoningDelta(text)

    def _finish_block(self, block: _Block) -> Iterator[ModelEvent]:
        if block.kind == "thinking":
            part = ReasoningPart(
                "".join(block.text), provider=PROVIDER, signature=block.signature or None
            )
            yield ReasoningEvent(part)
        elif block.kind == "redacted_thinking":
            data = block.signature
            yield ReasoningEvent(
                ReasoningPart("", provider=PROVIDER, redacted=True, encrypted=data)
            )
        elif block.kind == "tool_use":
            self.calls.append(self._call(block))

    def _call(self, block: _Block) -> ToolCallPart:
        name = self.names.real(block.name)
        raw = "".join(block.text)
        call_id = block.call_id or fallback_call_id(len(self.calls), block.name, raw)
        if not raw.strip():  # no fragments: the input came whole with the block start
            start = block.start_input
            return ToolCallPart(call_id, name, dict(start) if isinstance(start, dict) else {})
        reply = "".join(self.text)
        args = parse_tool_arguments(raw, name=name, call_id=call_id, reply_text=reply)
        return ToolCallPart(call_id, name, args)

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, key, None)
            if value is not None:  # message_delta counts are cumulative: the latest wins
                self.usage[key] = value
        details = getattr(usage, "output_tokens_details", None)
        thinking = getattr(details, "thinking_tokens", None)
        if thinking is not None:
            self.usage["thinking_tokens"] = thinking

    def _end(self) -> Iterator[ModelEvent]:
        for call in settle_call_ids(self.calls, reply_text="".join(self.text)):
            yield ToolCallEvent(call)
        if self.usage:
            yield _usage_event(self.usage)
        stop = _STOP_REASONS.get(self.stop_reason or "", "")
        yield Finish(stop or ("tool_calls" if self.calls else "stop"))


def _usage_event(usage: dict[str, int | None]) -> Usage:
    read = usage.get("cache_read_input_tokens")
    write = usage.get("cache_creation_input_tokens")
    fresh = usage.get("input_tokens")
    # Anthropic counts cached input apart; our input_tokens is everything the model read.
    total = None if fresh is None else fresh + (read or 0) + (write or 0)
    return Usage(
        input_tokens=total,
        output_tokens=usage.get("output_tokens"),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=usage.get("thinking_tokens"),
    )
