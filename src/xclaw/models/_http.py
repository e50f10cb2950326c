"""Helpers every wire adapter shares, so they fail, retry and name tools the same way.

* ``map_sdk_error`` turns an ``openai``/``anthropic`` SDK or ``httpx`` exception into
  ``ModelUnavailable`` (429, 408, 409, 5xx, timeouts, dropped connections: retry or fail over)
  or ``ModelRequestRejected`` (other 4xx: the request itself is wrong). Provider messages are
  redacted, because gateways like to echo keys back.
* ``stream_error`` does the same for an error object that arrives inside a 200 stream.
* ``backoff_delay`` is the one backoff formula (exponential, capped, optional jitter).
* ``ToolNames`` maps tool names to wire names (``fs.read`` → ``fs_read``) per request and back.
* ``settle_call_ids`` applies the tool-call id rule all adapters share: a duplicate id within
  one response is dropped when it repeats the same call (a replayed stream event) and rejected
  when it names a different call; ids may repeat across turns.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from xclaw.core.errors import ModelError, ModelRequestRejected, ModelUnavailable, ProtocolViolation
from xclaw.core.messages import ImagePart, ToolCallPart, ToolResultPart
from xclaw.core.tooling import wire_tool_name
from xclaw.redact import redact

__all__ = [
    "ToolNames",
    "backoff_delay",
    "data_url",
    "error_for_status",
    "fallback_call_id",
    "map_sdk_error",
    "parse_tool_arguments",
    "provider_message",
    "retry_after_seconds",
    "settle_call_ids",
    "stream_error",
    "stream_incomplete",
]

_MESSAGE_LIMIT = 400
_RETRYABLE_4XX = {408, 409, 425, 429}
# SDK modules whose exception classes we recognise. Looked up in sys.modules rather than
# imported: the SDKs take seconds to import, and an SDK never imported raised nothing.
_SDK_MODULES = ("openai", "anthropic", "httpx2")


def _sdk_classes(*names: str) -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name in _SDK_MODULES:
        module = sys.modules.get(module_name)
        for name in names:
            cls = getattr(module, name, None) if module is not None else None
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(found)


_UNAVAILABLE_TYPES = {
    "rate_limit_error",
    "rate_limit_exceeded",
    "server_error",
    "api_error",
    "overloaded_error",
    "service_unavailable",
    "timeout",
    "internal_error",
}


# -- errors ------------------------------------------------------------------------------------


def provider_message(body: Any, fallback: str = "") -> str:
    """The human part of a provider error body, redacted and shortened."""
    text = _find_message(body) or fallback
    text = redact(" ".join(str(text).split()))
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _find_message(body: Any) -> str:
    if isinstance(body, Mapping):
        for key in ("message", "error", "detail", "msg"):
            value = body.get(key)
            found = _find_message(value) if isinstance(value, Mapping) else value
            if isinstance(found, str) and found:
                return found
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            return _find_message(json.loads(body)) or body
        except ValueError:
            return body
    return ""


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if the server sent one."""
    if headers is None or not hasattr(headers, "items"):
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    retry_after_s: float | None = None,
    key_env: str | None = None,
) -> ModelError:
    """The xclaw error for an HTTP status a provider answered with."""
    said = f"{provider} answered {status}: {message or 'no message'}"
    if status in _RETRYABLE_4XX or status >= 500:
        code = "MODEL_RATE_LIMITED" if status == 429 else "MODEL_SERVER_ERROR"
        return ModelUnavailable(
            said,
            code=code,
            hint="Wait and retry, or add a fallback model (a,b in --model).",
            status=status,
            retry_after_s=retry_after_s,
        )
    if status in (401, 403):
        where = f"${key_env}" if key_env else "the key for this provider"
        return ModelRequestRejected(
            said,
            code="MODEL_AUTH_FAILED",
            hint=f"Check {where} and its permissions.",
            status=status,
        )
    if status == 404:
        return ModelRequestRejected(
            said,
            code="MODEL_NOT_FOUND",
            hint="Check the model name and the base URL (xclaw models list).",
            status=status,
        )
    return ModelRequestRejected(
        said,
        code="MODEL_REQUEST_REJECTED",
        hint="The provider refused this request; try another model or fewer tools.",
        status=status,
    )


def map_sdk_error(err: BaseException, *, provider: str, key_env: str | None = None) -> ModelError:
    """Translate an SDK or transport exception into the xclaw error tree."""
    if isinstance(err, ModelError):
        return err
    status = getattr(err, "status_code", None)
    if isinstance(status, int):
        # SDKs differ in their HTTP library (openai uses an httpx fork): duck-type the headers
        headers = getattr(getattr(err, "response", None), "headers", None)
        message = provider_message(getattr(err, "body", None), str(getattr(err, "message", err)))
        return error_for_status(
            status,
            message,
            provider=provider,
            retry_after_s=retry_after_seconds(headers),
            key_env=key_env,
        )
    if isinstance(
        err, (httpx.TimeoutException, *_sdk_classes("APITimeoutError", "TimeoutException"))
    ):
        return ModelUnavailable(
            f"{provider} did not answer in time.",
            code="MODEL_TIMEOUT",
            hint="Retry, raise the timeout, or add a fallback model.",
        )
    if isinstance(
        err, (httpx.TransportError, *_sdk_classes("APIConnectionError", "TransportError"))
    ):
        return ModelUnavailable(
            f"the connection to {provider} failed or dropped ({type(err).__name__}).",
            code="MODEL_CONNECTION_FAILED",
            hint="Check the base URL and that the server is running.",
        )
    if isinstance(err, _sdk_classes("APIError")):
        return stream_error(getattr(err, "body", None) or str(err), provider=provider)
    return ModelError(
        f"{provider} client failed: {redact(str(err))[:_MESSAGE_LIMIT]}", code="MODEL_ERROR"
    )


def stream_error(error: Any, *, provider: str) -> ModelError:
    """An error object sent inside a stream: rejected if it names a request fault, else
    unavailable (an unexplained mid-stream failure is most often transient)."""
    message = provider_message(error, "the stream reported an error")
    kind = ""
    code: Any = None
    if isinstance(error, Mapping):
        inner = error.get("error")
        obj = inner if isinstance(inner, Mapping) else error
        kind = str(obj.get("type") or "")
        code = obj.get("code") if obj.get("code") is not None else obj.get("status")
    status = int(code) if isinstance(code, int) or (isinstance(code, str) and code.isdigit()) else 0
    said = f"{provider} stream failed: {message}"
    if 400 <= status < 500 and status not in _RETRYABLE_4XX:
        return ModelRequestRejected(said, code="MODEL_REQUEST_REJECTED", status=status)
    if kind.endswith("_error") and kind not in _UNAVAILABLE_TYPES and status == 0:
        return ModelRequestRejected(said, code="MODEL_REQUEST_REJECTED")
    retry_code = "MODEL_RATE_LIMITED" if status == 429 or "rate" in kind else "MODEL_STREAM_ERROR"
    return ModelUnavailable(said, code=retry_code, status=status or None)


def stream_incomplete(provider: str) -> ModelUnavailable:
    return ModelUnavailable(
        f"the {provider} stream ended before the reply was finished.",
        code="MODEL_STREAM_INCOMPLETE",
        hint="Retry; if it keeps happening, try without streaming.",
    )


# -- backoff -----------------------------------------------------------------------------------


def backoff_delay(
    attempt: int,
    *,
    base_delay_s: float = 0.5,
    max_delay_s: float = 8.0,
    jitter: bool = True,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``base·2^attempt``, capped; with
    jitter a uniform pick from the upper half, so synchronized clients spread out."""
    delay = min(max_delay_s, base_delay_s * 2.0**attempt)
    if jitter:
        pick = rng.random() if rng is not None else random.random()
        delay *= 0.5 + 0.5 * pick
    return delay


# -- tool names and calls ----------------------------------------------------------------------


class ToolNames:
    """Real tool names ↔ wire names for one request; two tools on one wire name is an error."""

    __slots__ = ("_to_wire", "_to_real")

    def __init__(self, names: Iterable[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._to_real: dict[str, str] = {}
        for name in names:
            wire = wire_tool_name(name)
            other = self._to_real.get(wire)
            if other is not None and other != name:
                raise ModelRequestRejected(
                    f"tools {other!r} and {name!r} both become {wire!r} on the wire.",
                    code="MODEL_TOOL_NAME_COLLISION",
                    hint="Rename one of the tools.",
                )
            self._to_wire[name] = wire
            self._to_real[wire] = name

    def wire(self, name: str) -> str:
        return self._to_wire.get(name) or wire_tool_name(name)

    def real(self, wire: str) -> str:
        """The real name; an unknown name passes through so the registry can say TOOL_NOT_FOUND."""
        return self._to_real.get(wire, wire)


def fallback_call_id(index: int, name: str, arguments: str) -> str:
    """A deterministic id for a call the provider sent without one."""
    digest = hashlib.sha256(f"{index}\0{name}\0{arguments}".encode()).hexdigest()[:12]
    return f"call_{index}_{digest}"


def parse_tool_arguments(
    text: str, *, name: str, call_id: str, reply_text: str = ""
) -> dict[str, Any]:
    """Arguments as a JSON object. Anything else is a protocol violation: the loop shows the
    model what went wrong and asks again (bounded by ``max_protocol_errors``)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        problem = f"not valid JSON ({err.msg} at character {err.pos})"
    else:
        if isinstance(value, dict):
            return value
        problem = f"JSON {type(value).__name__}, not an object"
    raise ProtocolViolation(
        f"the arguments of tool call {call_id} ({name}) were {problem}.",
        code="MODEL_TOOL_ARGS_INVALID_JSON",
        feedback=(
            f"Your call to {name} could not be run: its arguments were {problem}. "
            "Send the tool call again with the arguments as one JSON object."
        ),
        reply_text=reply_text,
    )


def settle_call_ids(calls: Sequence[ToolCallPart], *, reply_text: str = "") -> list[ToolCallPart]:
    """Drop exact repeats of a call id within one response; reject conflicting ones."""
    seen: dict[str, ToolCallPart] = {}
    kept: list[ToolCallPart] = []
    for call in calls:
        first = seen.get(call.call_id)
        if first is None:
            seen[call.call_id] = call
            kept.append(call)
        elif (first.name, first.arguments) != (call.name, call.arguments):
            raise ProtocolViolation(
                f"the reply used tool call id {call.call_id!r} for two different calls.",
                code="MODEL_DUPLICATE_TOOL_CALL_ID",
                feedback=(
                    f"Your reply used the id {call.call_id} for two different tool calls, so "
                    "neither was run. Send the calls again, each with its own id."
                ),
                reply_text=reply_text,
            )
    return kept


def data_url(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def tool_images_note(part: ToolResultPart) -> str:
    """What introduces a tool result's images where the API cannot put them in the result
    itself (they follow it in a user message)."""
    count = len(part.result.images)
    what = "the image" if count == 1 else f"the {count} images"
    return f"[{what} returned by tool call {part.call_id} ({part.name}):]"
