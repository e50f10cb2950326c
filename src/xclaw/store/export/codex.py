"""Export a session as a Codex CLI rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Format followed: the rollout of openai/codex ``codex-rs/protocol`` as of early 2026, learned
from ``protocol.rs`` (``RolloutLine``, ``RolloutItem``, ``SessionMeta``, ``SessionMetaLine``)
and ``models.rs`` (``ResponseItem``, ``ContentItem``, ``FunctionCallOutputPayload``) in
github.com/openai/codex. Each line is ``{"timestamp", "type", "payload"}`` (``RolloutItem`` is
serde-tagged ``type``/``payload``, snake_case). The first line is ``session_meta``; its required
fields are ``id`` (a UUID), ``timestamp``, ``cwd``, ``originator`` and ``cli_version``. Then one
``response_item`` per transcript item: ``message`` with ``input_text`` / ``output_text`` parts,
``function_call`` with ``arguments`` as a JSON *string*, and ``function_call_output`` whose
``output`` is a plain string (``FunctionCallOutputBody::Text`` serialises untagged).

``reasoning`` items are dropped (their encrypted content belongs to the provider), as are
outputs whose call is not in the export (the Responses API rejects them on resume).
"""

from __future__ import annotations

from typing import Any

from xclaw.core.tooling import wire_tool_name
from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.export._common import (
    clean_json_text,
    clean_text,
    dump_line,
    iso_ms,
    item_time,
    message_text,
    session_uuid,
    split_model,
    xclaw_version,
)


def export_codex(session: SessionRecord, items: list[TranscriptItem]) -> list[str]:
    lines = [_line(session.created_at, "session_meta", _session_meta(session))]
    called: set[str] = set()
    for item in items:
        payload = _response_item(item.payload, called)
        if payload is not None:
            lines.append(_line(item_time(item, session), "response_item", payload))
    return lines


def _line(ts: float, kind: str, payload: dict[str, Any]) -> str:
    return dump_line({"timestamp": iso_ms(ts), "type": kind, "payload": payload})


def _session_meta(session: SessionRecord) -> dict[str, Any]:
    provider, _ = split_model(session.model)
    return {
        "id": session_uuid(session.id),
        "timestamp": iso_ms(session.created_at),
        "cwd": clean_text(session.root),
        "originator": "xclaw",
        "cli_version": xclaw_version(),
        # Older rollouts required the key; the system prompt never goes into it.
        "instructions": None,
        # "cli" makes ``codex resume`` list the session like one of its own.
        "source": "cli",
        "model_provider": provider,
    }


def _response_item(payload: dict[str, Any], called: set[str]) -> dict[str, Any] | None:
    kind = payload.get("type")
    if kind == "message":
        return _message(payload)
    if kind == "function_call":
        call_id = clean_text(str(payload.get("call_id", "")))
        called.add(call_id)
        return {
            "type": "function_call",
            "name": wire_tool_name(str(payload.get("name", ""))),
            "arguments": clean_json_text(str(payload.get("arguments") or "{}")),
            "call_id": call_id,
        }
    if kind == "function_call_output":
        call_id = clean_text(str(payload.get("call_id", "")))
        if call_id not in called:
            return None
        return {
            "type": "function_call_output",
            "call_id": call_id,
            "output": clean_json_text(str(payload.get("output", ""))),
        }
    return None  # reasoning, and kinds this format has no place for


def _message(payload: dict[str, Any]) -> dict[str, Any] | None:
    text = message_text(payload)
    if not text:
        return None  # nothing left once protocol text is gone
    role = "assistant" if payload.get("role") == "assistant" else "user"
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}
