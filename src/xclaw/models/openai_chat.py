"""OpenAI Chat Completions (``POST /chat/completions``) wire adapter.

Speaks to OpenAI and to every server that copies its format: DeepSeek, OpenRouter, Qwen,
GLM, Moonshot, Copilot, Ollama, vLLM, LM Studio, llama.cpp and custom gateways. What differs
between them is data in their ``Preset``; the few wire quirks handled here are generic:

* tool-call fragments are gathered by ``index``; a fragment with a new id on a used index
  starts a new call (some servers send every call at index 0);
* reasoning arrives as ``reasoning_content`` (DeepSeek) or ``reasoning`` (OpenRouter);
* a stream that ends without a ``finish_reason`` is a dropped stream (``ModelUnavailable``).

Arguments that are not a JSON object raise ``ProtocolViolation`` (MODEL_TOOL_ARGS_INVALID_JSON):
the loop tells the model what was wrong and asks again, bounded by ``max_protocol_errors``.
Retries are not done here (the SDK's are off too): ``FallbackModel`` owns them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

import httpx2  # the SDK's HTTP library; its errors normally arrive wrapped
import openai

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
    settle_call_ids,
    stream_incomplete,
    tool_images_note,
)
from xclaw.models._wire import WireModel
from xclaw.models.presets import Preset

__all__ = ["CredentialSource", "OpenAIChatModel"]

# Request settings passed through to the wire when a caller sets them (the bridge accepts
# the same ones from its clients; per-model sampling settings arrive the same way).
# ``tool_choice`` ("auto" | "required" | "none") goes out only with tools.
PASSED_SETTINGS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "parallel_tool_calls",
    "reasoning_effort",
)
_TOOL_CHOICES = ("auto", "required", "none")
_STOP_REASONS = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "sensitive": "content_filter",  # GLM
}


class CredentialSource(Protocol):
    """Short-lived credentials fetched before each request (Copilot's token exchange)."""

    async def credentials(self) -> tuple[str, str]:
        """``(api_key, base_url)`` valid for the next request."""
        ...


class OpenAIChatModel(WireModel):
    """A model behind the Chat Completions wire format."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        preset: Preset,
        stream: bool = True,
        timeout_s: float = 600.0,
        credentials: CredentialSource | None = None,
    ) -> None:
        super().__init__(model, preset, default_label=preset.name, stream=stream)
        self.preset: Preset = preset
        self._credentials = credentials
        # A placeholder key keeps the SDK from reading OPENAI_API_KEY by itself: local servers
        # need none, and which variable holds a key is the preset's decision.
        self._client: openai.AsyncOpenAI = openai.AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            default_headers=self.extra_headers,
        )

    def request_body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The JSON body (minus streaming options) this model sends for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(
                request.messages,
                names,
                vision=self.profile.vision,
                echo_reasoning=self.preset.reasoning_echo_field,
                provider=self.preset.name,
            ),
        }
        if request.tools and self.profile.tools:
            body["tools"] = chat_tools(request.tools, names, strict=self.profile.strict_tools)
            if request.settings.get("tool_choice") in _TOOL_CHOICES:
                body["tool_choice"] = request.settings["tool_choice"]
        for key in PASSED_SETTINGS:
            if key in request.settings:
                body[key] = request.settings[key]
        return body

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        names = ToolNames(spec.name for spec in request.tools)
        body = self.request_body(request, names)
        try:
            client = await self._client_for_call()
            if self.stream:
                chunks = await client.chat.completions.create(
                    **body, stream=True, stream_options={"include_usage": True}
                )
                decoder = _StreamDecoder(names, self.preset.name)
                async with chunks:  # closes the response even if the caller stops early
                    async for chunk in chunks:
                        for event in decoder.feed(chunk):
                            yield event
                for event in decoder.finish():
                    yield event
            else:
                completion = await client.chat.completions.create(**body)
                for event in _decode_completion(completion, names, self.preset.name):
                    yield event
        except (openai.OpenAIError, httpx2.HTTPError) as err:
            raise map_sdk_error(
                err, provider=self.preset.name, key_env=self.preset.key_env
            ) from None

    async def _client_for_call(self) -> openai.AsyncOpenAI:
        if self._credentials is None:
            return self._client
        api_key, base_url = await self._credentials.credentials()
        return self._client.with_options(api_key=api_key, base_url=base_url)


# -- encoding ----------------------------------------------------------------------------------

_NO_VISION = "[image omitted: this model does not accept images]"


def chat_messages(
    messages: Sequence[Message],
    names: ToolNames,
    *,
    vision: bool = True,
    echo_reasoning: str | None = None,
    provider: str = "",
) -> list[dict[str, Any]]:
    """Our messages in chat format. Reasoning goes back only to the provider that wrote it,
    and only where the preset names a field for it."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        match msg.role:
            case "system":
                out.append({"role": "system", "content": msg.text})
            case "user":
                out.append({"role": "user", "content": _user_content(msg.parts, vision)})
            case "assistant":
                out.append(_assistant(msg, names, echo_reasoning, provider))
            case "tool":
                out.extend(_tool_messages(msg, vision))
            case _:
                assert_never(msg.role)
    return out


def _user_content(parts: Sequence[Any], vision: bool) -> str | list[dict[str, Any]]:
    if not any(isinstance(p, ImagePart) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, TextPart))
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            if vision:
                content.append({"type": "image_url", "image_url": {"url": data_url(part)}})
            else:
                content.append({"type": "text", "text": _NO_VISION})
    return content


def _assistant(
    msg: Message, names: ToolNames, echo_reasoning: str | None, provider: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
    calls = msg.tool_calls
    if calls:
        out["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {
                    "name": names.wire(call.name),
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    if echo_reasoning:
        thoughts = [
            p.text
            for p in msg.parts
            if isinstance(p, ReasoningPart) and p.provider == provider and not p.redacted
        ]
        if thoughts:
            out[echo_reasoning] = "".join(thoughts)
    return out


def _tool_messages(msg: Message, vision: bool) -> list[dict[str, Any]]:
    """One ``tool`` message per result; text or images beside them, and the images a result
    holds (a screenshot, introduced by the call they came from), follow as a user message
    (chat tool messages carry text only)."""
    out: list[dict[str, Any]] = []
    extra: list[TextPart | ImagePart] = []
    for part in msg.parts:
        if isinstance(part, ToolResultPart):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": part.call_id,
                    "content": part.result.to_model_text(),
                }
            )
            if part.result.images:
                extra.append(TextPart(tool_images_note(part)))
                extra.extend(part.result.images)
        elif isinstance(part, TextPart | ImagePart):
            extra.append(part)
    if extra:
        out.append({"role": "user", "content": _user_content(extra, vision)})
    return out


def chat_tools(
    specs: Sequence[ToolSpec], names: ToolNames, *, strict: bool
) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for spec in specs:
        function: dict[str, Any] = {
            "name": names.wire(spec.name),
            "description": spec.description,
            "parameters": spec.parameters,
        }
        if strict and strict_compatible(spec.parameters):
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI strict mode accepts ``schema`` as it is: every object closed, every
    property required, no defaults. We never rewrite a schema to make it fit."""
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if "default" in schema:
        return False
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", [])) != set(props):
            return False
    return all(strict_compatible(v) for k, v in schema.items() if k != "enum")


# -- decoding ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _PartialCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamDecoder:
    """Turns chunks into events: deltas at once, whole tool calls and usage at the end."""

    def __init__(self, names: ToolNames, provider: str) -> None:
        self.names = names
        self.provider = provider
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: Any) -> Iterator[ModelEvent]:
        if getattr(chunk, "usage", None) is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            if (choice.index or 0) != 0:
                continue  # n > 1 is never requested; ignore stray choices
            delta = choice.delta
            if delta is not None:
                thought = _reasoning_text(delta)
                if thought:
                    self.reasoning.append(thought)
                    yield ReasoningDelta(thought)
                if delta.content:
                    self.text.append(delta.content)
                    yield TextDelta(delta.content)
                for fragment in delta.tool_calls or ():
                    self._add_fragment(fragment)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _add_fragment(self, fragment: Any) -> None:
        index = fragment.index if isinstance(fragment.index, int) else len(self.calls)
        slot = self.calls.get(index)
        if slot is not None and fragment.id and slot.call_id and fragment.id != slot.call_id:
            # A server that reuses one index for several calls: the new id starts a new call.
            index = max(self.calls) + 1 if self.calls else 0
            slot = None
        if slot is None:
            slot = self.calls[index] = _PartialCall()
        if fragment.id and not slot.call_id:
            slot.call_id = fragment.id
        function = fragment.function
        if function is not None:
            if function.name and not slot.name:
                slot.name = function.name
            if function.arguments:
                slot.arguments.append(function.arguments)

    def finish(self) -> Iterator[ModelEvent]:
        if self.finish_reason is None:
            raise stream_incomplete(self.provider)
        raw = [(c.call_id, c.name, "".join(c.arguments)) for _, c in sorted(self.calls.items())]
        yield from _closing_events(
            "".join(self.text),
            "".join(self.reasoning),
            raw,
            self.finish_reason,
            self.usage,
            self.names,
            self.provider,
        )


def _decode_completion(completion: Any, names: ToolNames, provider: str) -> Iterator[ModelEvent]:
    if not completion.choices:
        raise stream_incomplete(provider)
    choice = completion.choices[0]
    message = choice.message
    reasoning = _reasoning_text(message)
    if reasoning:
        yield ReasoningDelta(reasoning)
    if message.content:
        yield TextDelta(message.content)
    raw = [
        (c.id or "", c.function.name or "", c.function.arguments or "")
        for c in message.tool_calls or ()
        if getattr(c, "function", None) is not None
    ]
    usage = _usage(completion.usage) if completion.usage is not None else None
    yield from _closing_events(
        message.content or "",
        reasoning,
        raw,
        choice.finish_reason or "stop",
        usage,
        names,
        provider,
    )


def _closing_events(
    text: str,
    reasoning: str,
    raw_calls: Sequence[tuple[str, str, str]],
    finish_reason: str,
    usage: Usage | None,
    names: ToolNames,
    provider: str,
) -> Iterator[ModelEvent]:
    """The events that close a turn: reasoning block, tool calls, usage, finish."""
    calls = [
        ToolCallPart(
            call_id or fallback_call_id(i, name, arguments),
            names.real(name),
            parse_tool_arguments(
                arguments, name=names.real(name), call_id=call_id, reply_text=text
            ),
        )
        for i, (call_id, name, arguments) in enumerate(raw_calls)
    ]
    calls = settle_call_ids(calls, reply_text=text)
    if reasoning:
        yield ReasoningEvent(ReasoningPart(reasoning, provider=provider))
    for call in calls:
        yield ToolCallEvent(call)
    if usage is not None:
        yield usage
    stop = _STOP_REASONS.get(finish_reason, finish_reason)
    # Some local servers say "stop" while returning tool calls.
    yield Finish("tool_calls" if calls and stop == "stop" else stop)


def _reasoning_text(delta: Any) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = getattr(delta, key, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _usage(raw: Any) -> Usage:
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None)
    if cached is None:
        cached = getattr(raw, "prompt_cache_hit_tokens", None)  # DeepSeek
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", None),
        output_tokens=getattr(raw, "completion_tokens", None),
        cache_read_tokens=cached,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
    )
