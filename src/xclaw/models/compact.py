"""Compact tool schemas for models with small context windows.

The full schemas of the coding tools are about 1,800 tokens, sent with every request: a
quarter of an 8k window before the conversation starts. ``compact_spec`` keeps everything a
call is validated against (names, types, enums, bounds, defaults, required fields) and cuts
what only explains: a description becomes its first sentence, a required argument's
description its first sentence (at most ``ARG_CHARS``), an optional argument's description
goes (its default says what leaving it out means), and so do pydantic's generated titles.

``is_small_window`` is the rule the model setup and the context budget share: a window of
``SMALL_WINDOW`` tokens or less gets compact schemas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from xclaw.core.tooling import ToolSpec

__all__ = [
    "SMALL_WINDOW",
    "compact_spec",
    "compact_specs",
    "is_small_window",
    "schema_chars",
]

SMALL_WINDOW = 32_768
DESCRIPTION_CHARS = 120
ARG_CHARS = 80
# A sentence ends at ". " (not after "e.g." / "i.e."), at "; " or at a line break.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.;!?](?=\s)|\n")


def is_small_window(context_window: int | None) -> bool:
    return context_window is not None and context_window <= SMALL_WINDOW


def _first_sentence(text: str, limit: int) -> str:
    text = " ".join(text.split())
    found = _SENTENCE_END.search(text)
    if found is not None:
        text = text[: found.start()].rstrip(" ,:;.") + "."
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,:;") + "…"
    return text


def _compact_schema(schema: Any, *, required: bool = True) -> Any:
    """``schema`` without titles; descriptions shortened, and dropped for optional arguments
    (their defaults say what leaving them out means)."""
    if isinstance(schema, list):
        return [_compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    needed = schema.get("required")
    names = set(needed) if isinstance(needed, list) else set()
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "description" and isinstance(value, str):
            if required:
                out[key] = _first_sentence(value, ARG_CHARS)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {n: _compact_schema(v, required=n in names) for n, v in value.items()}
        elif key in ("$defs", "definitions") and isinstance(value, dict):
            out[key] = {n: _compact_schema(v) for n, v in value.items()}
        else:
            out[key] = _compact_schema(value)
    return out


def compact_spec(spec: ToolSpec) -> ToolSpec:
    return replace(
        spec,
        description=_first_sentence(spec.description, DESCRIPTION_CHARS),
        parameters=_compact_schema(spec.parameters),
    )


def compact_specs(specs: Sequence[ToolSpec]) -> list[ToolSpec]:
    return [compact_spec(s) for s in specs]


def schema_chars(specs: Sequence[ToolSpec]) -> int:
    """Characters of the schemas as a request carries them (for a token estimate)."""
    return sum(
        len(json.dumps([s.name, s.description, s.parameters], ensure_ascii=False)) for s in specs
    )
