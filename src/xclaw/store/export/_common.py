"""What every export shares: scrubbing text and values, stable ids, timestamps, one line.

Scrubbing happens here once so no format can forget it: protocol blocks a text-protocol
transport added are cut out, then every string goes through ``redact``; values under keys that
name a secret (``api_key``, ``password``, ``token``) are masked whatever they look like.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from xclaw.redact import MASK, is_secret_field, redact
from xclaw.store.base import SessionRecord, TranscriptItem

# Session meta the model was given but a transcript must never carry.
PRIVATE_META_KEYS = frozenset({"system_prompt", "tools"})

_PROTOCOL_BLOCK = re.compile(
    r"<(agent_protocol|system[_-]reminder)\b[^>]*>.*?</\1\s*>", re.DOTALL | re.IGNORECASE
)
# A block cut off before its closing tag (a truncated reply) is still protocol text.
_PROTOCOL_TAIL = re.compile(r"<(?:agent_protocol|system[_-]reminder)\b[^>]*>.*\Z", re.DOTALL)


def clean_text(text: str) -> str:
    """Text without protocol blocks, with secrets masked."""
    stripped = _PROTOCOL_TAIL.sub("", _PROTOCOL_BLOCK.sub("", text))
    if stripped != text:
        stripped = stripped.strip()
    return redact(stripped)


def clean_value(value: Any) -> Any:
    """``clean_text`` applied to every string inside a JSON-like value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {str(key): _clean_entry(str(key), item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(item) for item in value]
    return value


def _clean_entry(key: str, value: Any) -> Any:
    if isinstance(value, str) and value and is_secret_field(key):
        return MASK
    return clean_value(value)


def clean_json_text(text: str) -> str:
    """A JSON document held as text (tool arguments, tool output), cleaned value by value."""
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return clean_text(text)
    if not isinstance(parsed, dict | list):
        return clean_text(text)
    return json.dumps(clean_value(parsed), ensure_ascii=False, separators=(",", ":"))


def arguments_object(text: str) -> dict[str, Any]:
    """Tool arguments as a cleaned JSON object (formats that want an object, not text)."""
    try:
        parsed = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"raw": clean_text(text)}
    return clean_value(parsed) if isinstance(parsed, dict) else {"value": clean_value(parsed)}


def output_failed(text: str) -> bool:
    """Whether a ``function_call_output`` holds a failed ``ToolResult``."""
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return False
    return isinstance(parsed, dict) and parsed.get("ok") is False


def message_text(payload: dict[str, Any]) -> str:
    """The cleaned text of a ``message`` item; images (stored without bytes) as a note."""
    pieces: list[str] = []
    for part in payload.get("content") or []:
        if not isinstance(part, dict):
            continue
        if "text" in part:
            pieces.append(str(part["text"]))
        elif part.get("type") == "input_image":
            media = part.get("media_type", "image")
            pieces.append(f"[{media} image, {part.get('bytes', 0)} bytes, not exported]")
    return clean_text("".join(pieces))


def stable_uuid(*parts: str) -> str:
    """A version-4-shaped UUID derived from ``parts``, so an export is reproducible."""
    digest = hashlib.sha256("\x1f".join(("xclaw-export", *parts)).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def session_uuid(session_id: str) -> str:
    """Both foreign formats name a session by UUID; ours are ``YYYYmmdd-HHMMSS-hex``."""
    try:
        return str(uuid.UUID(session_id))
    except ValueError:
        return stable_uuid("session", session_id)


def iso_ms(ts: float) -> str:
    """``2025-01-02T03:04:05.678Z``: UTC, milliseconds, as both foreign formats write it."""
    moment = datetime.fromtimestamp(ts, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def item_time(item: TranscriptItem, session: SessionRecord) -> float:
    return item.created_at or session.created_at


def split_model(spec: str) -> tuple[str | None, str]:
    """``openai:gpt-5`` → (``openai``, ``gpt-5``)."""
    provider, sep, name = spec.partition(":")
    return (provider, name) if sep and name else (None, spec)


def xclaw_version() -> str:
    try:
        return importlib.metadata.version("xclaw")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def dump_line(obj: dict[str, Any]) -> str:
    """Compact JSON on one line. U+2028/9 are escaped: some readers split lines on them."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
