"""Export a session in xclaw's own plain JSONL (format ``xclaw.session``, version 1).

Defined here, not borrowed: line 1 is ``{"type": "session", "format": "xclaw.session",
"version": 1, "session": <SessionRecord>}`` without the system prompt and tool catalogue; every
further line is ``{"session_id", "seq", "step_id", "turn", "created_at", "item"}`` where
``item`` is the canonical OpenAI Responses item from ``xclaw.store.transcript``. Reasoning items
keep their summary but lose ``signature`` / ``encrypted_content`` (opaque provider data).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.export._common import (
    PRIVATE_META_KEYS,
    clean_json_text,
    clean_value,
    dump_line,
)

FORMAT = "xclaw.session"
VERSION = 1
_OPAQUE_REASONING_KEYS = frozenset({"signature", "encrypted_content"})
_JSON_TEXT_KEYS = {"function_call": ("arguments",), "function_call_output": ("output",)}


def export_jsonl(session: SessionRecord, items: list[TranscriptItem]) -> list[str]:
    header = {"type": "session", "format": FORMAT, "version": VERSION}
    lines = [dump_line({**header, "session": clean_value(_public_record(session))})]
    for item in items:
        line = {
            "session_id": session.id,
            "seq": item.seq,
            "step_id": item.step_id,
            "turn": item.turn,
            "created_at": item.created_at,
            "item": _public_item(item.payload),
        }
        lines.append(dump_line(line))
    return lines


def _public_record(session: SessionRecord) -> dict[str, Any]:
    record = dataclasses.asdict(session)
    record["meta"] = {k: v for k, v in session.meta.items() if k not in PRIVATE_META_KEYS}
    return record


def _public_item(payload: dict[str, Any]) -> dict[str, Any]:
    """The item cleaned; JSON held as text is cleaned as JSON so key names count too."""
    kind = payload.get("type")
    if kind == "reasoning":
        payload = {k: v for k, v in payload.items() if k not in _OPAQUE_REASONING_KEYS}
    cleaned: dict[str, Any] = clean_value(payload)
    for key in _JSON_TEXT_KEYS.get(str(kind), ()):
        if isinstance(payload.get(key), str):
            cleaned[key] = clean_json_text(payload[key])
    return cleaned
