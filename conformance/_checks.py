"""What an adapter yielded, decoded the corpus's way, and compared with ``expected``.

The corpus conventions (index.json ``conventions``) report provider values as they came; xclaw
normalises them. The tables below say, per API, which xclaw value each provider value must
become; a provider value missing from a table is a failure, not a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, assert_never

from xclaw.core.errors import ModelError, ModelRequestRejected, ModelUnavailable
from xclaw.core.messages import ReasoningPart, ToolCallPart
from xclaw.core.model import (
    Finish,
    ModelEvent,
    ReasoningDelta,
    ReasoningEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)

__all__ = ["STOP_REASONS", "Outcome", "compare", "expected_usage"]

# Corpus stop_reason -> xclaw ``Finish.stop_reason``. Chat: ``choices[0].finish_reason``;
# Messages: ``stop_reason``; Responses: the response status, plus ``:reason`` for an
# incomplete one. A completed Responses turn has no finish reason of its own: xclaw says
# ``tool_calls`` when it carried client tool calls (key ``completed+tool_calls`` here).
STOP_REASONS: dict[str, dict[str, str]] = {
    "chat_completions": {
        "stop": "stop",
        "tool_calls": "tool_calls",
        "function_call": "tool_calls",
        "length": "length",
        "content_filter": "content_filter",
    },
    "messages": {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool_calls",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "content_filter",
    },
    "responses": {
        "completed": "stop",
        "completed+tool_calls": "tool_calls",
        "incomplete:max_output_tokens": "length",
        "incomplete:content_filter": "content_filter",
    },
}
# HTTP statuses a retry or a fallback model can fix (as ``xclaw.models._http`` classifies).
_RETRYABLE_STATUSES = {408, 409, 425, 429}
_REDACTED_THINKING = "[redacted_thinking]"  # the corpus's stand-in for a redacted block
_LIMIT = 200  # the corpus keeps the first 200 characters of text and reasoning


@dataclass
class Outcome:
    texts: list[str] = field(default_factory=list)
    reasoning_deltas: list[str] = field(default_factory=list)
    reasoning_parts: list[ReasoningPart] = field(default_factory=list)
    calls: list[ToolCallPart] = field(default_factory=list)
    usage: Usage | None = None
    usage_events: int = 0
    stop_reason: str | None = None
    error: BaseException | None = None

    def add(self, event: ModelEvent) -> None:
        match event:
            case TextDelta(text):
                self.texts.append(text)
            case ReasoningDelta(text):
                self.reasoning_deltas.append(text)
            case ReasoningEvent(part):
                self.reasoning_parts.append(part)
            case ToolCallEvent(call):
                self.calls.append(call)
            case Usage():
                self.usage = event
                self.usage_events += 1
            case Finish(stop_reason):
                self.stop_reason = stop_reason
            case _:
                assert_never(event)

    @property
    def reasoning(self) -> str:
        """Finished reasoning blocks; only the streamed deltas when none finished (an error)."""
        if not self.reasoning_parts:
            return "".join(self.reasoning_deltas)
        return "".join(
            p.text or (_REDACTED_THINKING if p.redacted else "") for p in self.reasoning_parts
        )


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def expected_usage(api: str, usage: dict[str, Any]) -> dict[str, int | None]:
    """The xclaw ``Usage`` fields a reported usage object must become."""
    if api == "chat_completions":
        cached = _dig(usage, "prompt_tokens_details", "cached_tokens")
        return {
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "cache_read_tokens": cached
            if cached is not None
            else usage.get("prompt_cache_hit_tokens"),
            "reasoning_tokens": _dig(usage, "completion_tokens_details", "reasoning_tokens"),
        }
    if api == "responses":
        return {
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cache_read_tokens": _dig(usage, "input_tokens_details", "cached_tokens"),
            "cache_write_tokens": _dig(usage, "input_tokens_details", "cache_write_tokens"),
            "reasoning_tokens": _dig(usage, "output_tokens_details", "reasoning_tokens"),
        }
    # Anthropic reports fresh input apart from cache reads and writes; xclaw's input_tokens
    # is everything the model read, so it is their sum.
    read = usage.get("cache_read_input_tokens")
    write = usage.get("cache_creation_input_tokens")
    fresh = usage.get("input_tokens")
    return {
        "input_tokens": None if fresh is None else fresh + (read or 0) + (write or 0),
        "output_tokens": usage.get("output_tokens"),
        "cache_read_tokens": read,
        "cache_write_tokens": write,
    }


def _corpus_stop_key(api: str, raw: str, expected_calls: list[Any]) -> str:
    if api == "responses":
        if raw == "completed" and expected_calls:
            return "completed+tool_calls"
        if raw.startswith("incomplete"):
            reason = re.findall(r"[a-z_]+", raw)
            return f"incomplete:{reason[1]}" if len(reason) > 1 else "incomplete"
    return raw


def _check_stop(api: str, expected: dict[str, Any], out: Outcome) -> list[str]:
    raw = expected.get("stop_reason")
    if raw is None:
        return [] if out.stop_reason is not None else ["stop_reason: the adapter sent no Finish"]
    key = _corpus_stop_key(api, str(raw), expected.get("tool_calls") or [])
    want = STOP_REASONS[api].get(key)
    if want is None:
        return [f"stop_reason: no mapping for {api} stop reason {raw!r}"]
    if out.stop_reason != want:
        return [f"stop_reason: expected {want!r} (recorded {raw!r}), got {out.stop_reason!r}"]
    return []


def _check_calls(expected: dict[str, Any], out: Outcome) -> list[str]:
    fails: list[str] = []
    want = [(c["name"], c["arguments"]) for c in expected.get("tool_calls") or []]
    got = [(c.name, c.arguments) for c in out.calls]
    if want != got:
        fails.append(f"tool_calls: expected {want}, got {got}")
    want_ids = expected.get("tool_call_ids")
    if want_ids is not None and want_ids != [c.call_id for c in out.calls]:
        fails.append(f"tool_call_ids: expected {want_ids}, got {[c.call_id for c in out.calls]}")
    # Server-side tools are the provider's business: they must not come back as client calls.
    builtin = {b.get("name") for b in expected.get("builtin_tool_calls") or [] if b.get("name")}
    leaked = builtin & {c.name for c in out.calls}
    if leaked:
        fails.append(f"builtin_tool_calls: server tools surfaced as client calls: {sorted(leaked)}")
    return fails


def _check_usage(api: str, expected: dict[str, Any], out: Outcome) -> list[str]:
    reported = expected.get("usage")
    if not isinstance(reported, dict):
        return []
    if out.usage is None:
        return ["usage: the provider reported usage, the adapter yielded none"]
    fails = [
        f"usage: {key} expected {want}, got {getattr(out.usage, key)}"
        for key, want in expected_usage(api, reported).items()
        if want is not None and getattr(out.usage, key) != want
    ]
    if out.usage_events != 1:
        fails.append(f"usage: expected one Usage event, got {out.usage_events}")
    return fails


def _check_texts(expected: dict[str, Any], out: Outcome) -> list[str]:
    fails: list[str] = []
    text = "".join(out.texts)[:_LIMIT]
    if text != expected.get("text", ""):
        fails.append(f"text: expected {expected.get('text', '')[:60]!r}…, got {text[:60]!r}…")
    reasoning = out.reasoning[:_LIMIT]
    if reasoning != expected.get("reasoning_text", ""):
        want = expected.get("reasoning_text", "")
        fails.append(f"reasoning: expected {want[:60]!r}…, got {reasoning[:60]!r}…")
    streamed = "".join(out.reasoning_deltas)
    finished = "".join(p.text for p in out.reasoning_parts)
    if streamed and out.reasoning_parts and streamed != finished:
        fails.append("reasoning: the streamed deltas differ from the finished reasoning blocks")
    return fails


def _check_error(status: int, body: Any, err: BaseException | None) -> list[str]:
    """An HTTP error: the right xclaw class, the status, and the provider's message."""
    retryable = status in _RETRYABLE_STATUSES or status >= 500
    want = ModelUnavailable if retryable else ModelRequestRejected
    if not isinstance(err, want):
        return [f"error: expected {want.__name__} for HTTP {status}, got {err!r}"]
    fails = []
    if getattr(err, "status", None) != status:
        fails.append(f"error: expected status {status}, got {getattr(err, 'status', None)}")
    message = str(_dig(body, "message") or "")
    if message and " ".join(message.split()) not in str(err):
        fails.append(f"error: the provider's message {message[:60]!r} is missing from {str(err)!r}")
    return fails


def _check_stream_error(errors: list[dict[str, Any]], out: Outcome) -> list[str]:
    """An error inside a 200 stream ends the turn as a ``ModelError``; a 4xx code in it means
    the request itself was refused."""
    first = errors[0]
    code = first.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        return _check_error(code, first, out.error)
    if not isinstance(out.error, ModelError):
        return [f"in_stream_errors: expected a ModelError, got {out.error!r}"]
    return []


def compare(api: str, expected: dict[str, Any], status: int, out: Outcome) -> list[str]:
    """Failures, each ``field: what differs``; empty when the outcome matches."""
    if "error" in expected:
        return _check_error(status, expected["error"], out.error)
    stream_errors = expected.get("in_stream_errors") or []
    if stream_errors:
        # The turn ends in the error: only what streamed before it can be compared.
        return _check_stream_error(stream_errors, out) + _check_texts(expected, out)
    if out.error is not None:
        return [f"error: unexpected {type(out.error).__name__}: {out.error}"]
    return (
        _check_texts(expected, out)
        + _check_calls(expected, out)
        + _check_stop(api, expected, out)
        + _check_usage(api, expected, out)
    )
