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

Each message is followed by the ``event_msg`` Codex records beside it (``EventMsg`` is
serde-tagged ``type``, snake_case): ``user_message`` (``UserMessageEvent``: ``message``,
``images``, ``local_images``, ``text_elements``) after a user message, ``agent_message``
(``AgentMessageEvent``: ``message``) after an assistant one. The resume view replays them,
and ``codex resume``'s picker lists a rollout only when its head holds a ``session_meta`` and
an ``EventMsg::UserMessage`` (``codex-rs/rollout/src/list.rs``, ``read_head_summary``: the
first 10 lines, longer once the meta is seen). The first user event therefore comes within
``PICKER_HEAD_LINES``: when the transcript has no user text there (all protocol text), the
session's task stands in for it right after the meta.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePosixPath
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

# How many lines from the top ``codex resume``'s picker reads for the meta and a user event.
PICKER_HEAD_LINES = 10


def export_codex(session: SessionRecord, items: list[TranscriptItem]) -> list[str]:
    body: list[tuple[float, str, dict[str, Any]]] = []
    called: set[str] = set()
    for item in items:
        payload = _response_item(item.payload, called)
        if payload is None:
            continue
        at = item_time(item, session)
        body.append((at, "response_item", payload))
        event = _event_for(payload)
        if event is not None:
            body.append((at, "event_msg", event))
    head = body[: PICKER_HEAD_LINES - 1]  # the meta is line 1
    if not any(kind == "event_msg" and p["type"] == "user_message" for _, kind, p in head):
        body.insert(0, (session.created_at, "event_msg", _user_event(clean_text(session.task))))
    meta = _line(session.created_at, "session_meta", _session_meta(session))
    return [meta, *(_line(at, kind, payload) for at, kind, payload in body)]


def rollout_path(session: SessionRecord) -> PurePosixPath:
    """Where the rollout goes under ``~/.codex/sessions``: ``YYYY/MM/DD/rollout-YYYY-MM-DDT
    hh-mm-ss-<uuid>.jsonl``. Codex finds a session by the UUID at the end of the name (the
    meta's ``id``) and orders the picker by the time before it (UTC here)."""
    moment = datetime.fromtimestamp(session.created_at, tz=UTC)
    name = f"rollout-{moment:%Y-%m-%dT%H-%M-%S}-{session_uuid(session.id)}.jsonl"
    return PurePosixPath(f"{moment:%Y}", f"{moment:%m}", f"{moment:%d}", name)


def _event_for(item: dict[str, Any]) -> dict[str, Any] | None:
    """The ``event_msg`` Codex writes beside a message: what its history view shows."""
    if item["type"] != "message":
        return None
    text = "".join(part["text"] for part in item["content"])
    if item["role"] == "user":
        return _user_event(text)
    return {"type": "agent_message", "message": text}


def _user_event(text: str) -> dict[str, Any]:
    return {
        "type": "user_message",
        "message": text,
        "images": [],
        "local_images": [],
        "text_elements": [],
    }


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
