"""OpenAI Responses API (``POST /responses``) wire adapter.

Stateless on purpose (``store=False``): the whole conversation goes out every turn, and
reasoning items come back encrypted so they can be replayed without server-side state.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, assert_never

import httpx2
import openai

from xclaw.core.errors import ModelError, ModelRequestRejected
from xclaw.core.messages import (
    ImagePart,
    Message,
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
    data_url,
    fallback_call_id,
    map_sdk_error,
    parse_tool_arguments,
    provider_message,
    settle_call_ids,
    stream_error,
    stream_incomplete,
)
from xclaw.models._wire import WireModel
from xclaw.models.presets import Preset

__all__ = ["OpenAIResponsesModel"]

PROVIDER = "openai"
IMAGE_OMITTED = "[an image was omitted: this model cannot read images]"

# Error codes a failed response carries that a retry (or another provider) can fix.
_TRANSIENT_CODES = {"server_error", "rate_limit_exceeded", "vector_store_timeout"}


class OpenAIResponsesModel(WireModel):
    """A model behind the OpenAI Responses wire format (OpenAI, or a compatible server)."""

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
        super().__init__(model, preset, default_label="openai-responses", stream=stream)
        # A placeholder key keeps the SDK from reading OPENAI_API_KEY on its own: which key a
        # provider uses is the resolver's decision. Retries and failover are ours: max_retries=0.
        self._client: openai.AsyncOpenAI = openai.AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            default_headers=self.extra_headers,
        )

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        names = ToolNames(spec.name for spec in request.tools)
        body = self.request_body(request, names)
        decoder = ResponsesDecoder(names, self.label)
        try:
            if not self.stream:
                response = await self._client.responses.create(**body)
                for ev in decoder.final(response):
                    yield ev
                return
            stream = await self._client.responses.create(**body, stream=True)
            async with stream:
                async for event in stream:
                    for ev in decoder.feed(event):
                        yield ev
            decoder.end_of_stream()
        except (openai.OpenAIError, httpx2.HTTPError) as err:
            key_env = self.preset.key_env if self.preset else None
            raise map_sdk_error(err, provider=self.label, key_env=key_env) from None

    def request_body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The keyword arguments for ``responses.create`` (everything but ``stream``)."""
        instructions, items = responses_input(request.messages, names, vision=self.profile.vision)
        body: dict[str, Any] = {"model": self.model, "input": items, "store": False}
        if instructions:
            body["instructions"] = instructions
        if request.tools and self.profile.tools:
            body["tools"] = [responses_tool(spec, names) for spec in request.tools]
            # The Responses API takes the same words as Chat; it has no seed.
            if request.settings.get("tool_choice") in ("auto", "required", "none"):
                body["tool_choice"] = request.settings["tool_choice"]
        if self.profile.reasoning:
            # Without server-side state, reasoning survives between turns only encrypted.
            body["include"] = ["reasoning.encrypted_content"]
            effort = request.settings.get("reasoning_effort")
            body["reasoning"] = {"summary": "auto", **({"effort": effort} if effort else {})}
        if "max_tokens" in request.settings:
            body["max_output_tokens"] = request.settings["max_tokens"]
        for key in ("temperature", "top_p", "parallel_tool_calls"):
            if key in request.settings:
                body[key] = request.settings[key]
        return body


# -- request --------------------------------------------------------------------------------


def responses_tool(spec: ToolSpec, names: ToolNames) -> dict[str, Any]:
    # strict=False: our schemas allow optional fields, which strict mode forbids.
    return {
        "type": "function",
        "name": names.wire(spec.name),
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": False,
    }


def responses_input(
    messages: Sequence[Message], names: ToolNames, *, vision: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """System messages become ``instructions``; everything else becomes input items."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "system":
            if msg.text:
                instructions.append(msg.text)
            continue
        items.extend(_message_items(msg, names, vision))
    return "\n\n".join(instructions), items


def _message_items(msg: Message, names: ToolNames, vision: bool) -> Iterator[dict[str, Any]]:
    content: list[dict[str, Any]] = []  # adjacent text/image parts share one message item
    for part in msg.parts:
        if isinstance(part, TextPart | ImagePart):
            block = _content_block(part, msg.role, vision)
            if block is not None:
                content.append(block)
            continue
        if content:
            yield _content_message(msg.role, content)
            content = []
        item = _part_item(part, names)
        if isinstance(part, ToolResultPart) and part.result.images and vision:
            # The output of a call may be content: its text, then the images it returned.
            assert item is not None
            item["output"] = [
                {"type": "input_text", "text": item["output"]},
                *({"type": "input_image", "image_url": data_url(i)} for i in part.result.images),
            ]
        if item is not None:
            yield item
    if content:
        yield _content_message(msg.role, content)


def _content_block(part: TextPart | ImagePart, role: str, vision: bool) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        if not part.text:
            return None
        if role == "assistant":
            return {"type": "output_text", "text": part.text, "annotations": []}
        return {"type": "input_text", "text": part.text}
    if role == "assistant":
        return None  # the API takes no images from the assistant
    if not vision:
        return {"type": "input_text", "text": IMAGE_OMITTED}
    return {"type": "input_image", "image_url": data_url(part)}


def _content_message(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant" if role == "assistant" else "user",
        "content": content,
    }


def _part_item(
    part: ReasoningPart | ToolCallPart | ToolResultPart, names: ToolNames
) -> dict[str, Any] | None:
    match part:
        case ReasoningPart():
            # Only our own encrypted items can be replayed; anything else means nothing here.
            if part.provider != PROVIDER or not part.encrypted:
                return None
            item: dict[str, Any] = {
                "type": "reasoning",
                "encrypted_content": part.encrypted,
                "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
            }
            if part.signature:  # the reasoning item id, kept in ``signature`` for this provider
                item["id"] = part.signature
            return item
        case ToolCallPart():
            return {
                "type": "function_call",
                "call_id": part.call_id,
                "name": names.wire(part.name),
                "arguments": json.dumps(part.arguments, ensure_ascii=False),
            }
        case ToolResultPart():
            return {
                "type": "function_call_output",
                "call_id": part.call_id,
                "output": part.result.to_model_text(),
            }
        case _:
            assert_never(part)


# -- response -------------------------------------------------------------------------------


class ResponsesDecoder:
    """Turns stream events (``feed``) or a whole response (``final``) into model events.

    Tool calls are held back until the response is complete, so duplicate ids can be settled
    across the whole reply before the loop sees any of them.
    """

    def __init__(self, names: ToolNames, label: str = "openai-responses") -> None:
        self.names = names
        self.label = label
        self.pending: dict[str, list[str]] = {}  # function_call item id -> argument fragments
        self.finished_items: set[str] = set()
        self.calls: list[ToolCallPart] = []
        self.reasoning: dict[str, list[str]] = {}  # reasoning item id -> streamed text
        self.text: list[str] = []
        self.refused = False
        self.ended = False

    def feed(self, event: Any) -> Iterator[ModelEvent]:
        kind = getattr(event, "type", "")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            self.refused = self.refused or kind == "response.refusal.delta"
            self.text.append(event.delta)
            yield TextDelta(event.delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self.reasoning.setdefault(event.item_id, []).append(event.delta)
            yield ReasoningDelta(event.delta)
        elif kind == "response.output_item.added":
            if getattr(event.item, "type", "") == "function_call":
                self.pending[_item_key(event.item)] = [event.item.arguments or ""]
        elif kind == "response.function_call_arguments.delta":
            self.pending.setdefault(event.item_id, []).append(event.delta)
        elif kind == "response.output_item.done":
            yield from self._item_done(event.item)
        elif kind in ("response.completed", "response.incomplete"):
            self.ended = True
            yield from self.final(event.response)
        elif kind == "response.failed":
            raise failure_error(getattr(event.response, "error", None), self.label)
        elif kind == "error":
            raise failure_error(event, self.label)

    def end_of_stream(self) -> None:
        if not self.ended:
            raise stream_incomplete(self.label)

    def final(self, response: Any) -> Iterator[ModelEvent]:
        """Whatever the stream has not delivered yet, the tool calls, usage, the stop reason."""
        if getattr(response, "status", None) == "failed":
            raise failure_error(getattr(response, "error", None), self.label)
        streamed_text = bool(self.text)
        for item in getattr(response, "output", None) or []:
            if getattr(item, "type", "") != "message":
                yield from self._item_done(item)
            elif not streamed_text:
                yield from self._message_text(item)
        for call in settle_call_ids(self.calls, reply_text="".join(self.text)):
            yield ToolCallEvent(call)
        usage = _usage(getattr(response, "usage", None))
        if usage is not None:
            yield usage
        yield Finish(self._stop_reason(response))

    def _item_done(self, item: Any) -> Iterator[ModelEvent]:
        kind = getattr(item, "type", "")
        key = _item_key(item)
        if kind not in ("function_call", "reasoning") or key in self.finished_items:
            return  # built-in tool items and the like are the provider's business
        self.finished_items.add(key)
        if kind == "function_call":
            arguments = item.arguments or "".join(self.pending.pop(key, []))
            self.calls.append(self._call(item, arguments))
            return
        text = "".join(self.reasoning.pop(item.id, [])) or _reasoning_text(item)
        encrypted = getattr(item, "encrypted_content", None)
        if text or encrypted:
            # The item id rides in ``signature``: replaying an item needs it back.
            yield ReasoningEvent(
                ReasoningPart(text, provider=PROVIDER, signature=item.id, encrypted=encrypted)
            )

    def _call(self, item: Any, arguments: str) -> ToolCallPart:
        name = self.names.real(item.name)
        call_id = item.call_id or fallback_call_id(len(self.calls), item.name, arguments)
        reply = "".join(self.text)
        args = parse_tool_arguments(arguments, name=name, call_id=call_id, reply_text=reply)
        return ToolCallPart(call_id, name, args)

    def _message_text(self, item: Any) -> Iterator[ModelEvent]:
        for block in getattr(item, "content", None) or []:
            if getattr(block, "type", "") == "refusal":
                self.refused = True
            text = getattr(block, "text", None) or getattr(block, "refusal", None)
            if text:
                self.text.append(text)
                yield TextDelta(text)

    def _stop_reason(self, response: Any) -> str:
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter" or self.refused:
            return "content_filter"
        return "tool_calls" if self.calls else "stop"


def _item_key(item: Any) -> str:
    return str(getattr(item, "id", None) or getattr(item, "call_id", None) or "")


def _reasoning_text(item: Any) -> str:
    summaries = [getattr(s, "text", "") for s in getattr(item, "summary", None) or []]
    if any(summaries):
        return "\n\n".join(s for s in summaries if s)
    return "".join(getattr(c, "text", "") or "" for c in getattr(item, "content", None) or [])


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    inputs = getattr(usage, "input_tokens_details", None)
    outputs = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        cache_read_tokens=getattr(inputs, "cached_tokens", None),
        cache_write_tokens=getattr(inputs, "cache_write_tokens", None),
        reasoning_tokens=getattr(outputs, "reasoning_tokens", None),
    )


def failure_error(error: Any, provider: str) -> ModelError:
    """A failed response or an ``error`` event. The Responses API names the fault in ``code``:
    a few codes are worth a retry, the rest describe a request that cannot succeed."""
    code = str(getattr(error, "code", None) or "")
    message = getattr(error, "message", None) or "the response failed"
    if code and code not in _TRANSIENT_CODES:
        return ModelRequestRejected(
            f"{provider} refused the request ({code}): {provider_message(message)}",
            code="MODEL_REQUEST_REJECTED",
            hint="The provider refused this request; try another model or fewer tools.",
        )
    return stream_error(
        {"error": {"type": code or "server_error", "message": message}},
        provider=provider,
    )
