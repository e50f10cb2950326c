"""Event payloads as OpenTelemetry attribute values: redacted, clipped, JSON for structures.

Every string that leaves through a span (attribute or span event) passes ``redact`` here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from xclaw.redact import redact, redact_json

AttrValue = str | bool | int | float
MAX_CHARS = 4096  # a span is for reading, the transcript holds the full text


def text(value: str, limit: int = MAX_CHARS) -> str:
    """Redacted first, then clipped: a cut never leaves part of a secret behind."""
    clean = redact(value)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def value(raw: Any) -> AttrValue | None:
    """One attribute value: scalars as they are (strings redacted), anything else as JSON."""
    if raw is None:
        return None
    if isinstance(raw, bool | int | float):
        return raw
    if isinstance(raw, str):
        return text(raw)
    return text(json.dumps(redact_json(raw), ensure_ascii=False, default=str))


def from_payload(payload: Mapping[str, Any], prefix: str = "xclaw.") -> dict[str, AttrValue]:
    """A whole payload as attributes (``None`` values left out). Values under secret-named
    keys (``api_key``, ``password``) are masked whatever they hold."""
    masked: dict[str, Any] = redact_json(dict(payload))
    out: dict[str, AttrValue] = {}
    for key, raw in masked.items():
        v = value(raw)
        if v is not None:
            out[prefix + key] = v
    return out


def present(values: Mapping[str, Any]) -> dict[str, AttrValue]:
    """Named values as attributes, those that are ``None`` left out."""
    out: dict[str, AttrValue] = {}
    for key, raw in values.items():
        v = value(raw)
        if v is not None:
            out[key] = v
    return out
