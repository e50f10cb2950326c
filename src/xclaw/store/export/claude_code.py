"""Export a session as a Claude Code transcript (``~/.claude/projects/<dir>/<session>.jsonl``).

Format followed: Claude Code 2.x session JSONL, learned from public descriptions and parsers of
real transcripts (daaain/claude-code-log ``models.py`` and its recorded 2.1.x sessions; the
"Claude Code Transcript Format" notes in kent/consciousness). Every conversation line carries
``parentUuid`` (the previous line's ``uuid``, null on the first), ``isSidechain``, ``userType``,
``cwd``, ``sessionId``, ``version``, ``type`` (``user`` / ``assistant``), ``message``, ``uuid``
and ``timestamp``. ``message`` is an Anthropic Messages API message: assistant lines carry
``{id, type: "message", role, model, content: [text | tool_use], stop_reason, stop_sequence,
usage}``; tool results are ``user`` lines whose content is one ``tool_result`` block, with the
result text repeated in ``toolUseResult`` as Claude Code does.

Line uuids are derived from the session id and line number, so an export is reproducible.
Tool-use ids must match ``^[a-zA-Z0-9_-]+$`` and be unique; others are replaced consistently.
Reasoning is dropped (thinking blocks need provider signatures we do not export).
"""

from __future__ import annotations

import re
from typing import Any

from xclaw.core.tooling import wire_tool_name
from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.export._common import (
    arguments_object,
    clean_json_text,
    clean_text,
    dump_line,
    iso_ms,
    item_time,
    message_text,
    output_failed,
    session_uuid,
    split_model,
    stable_uuid,
    xclaw_version,
)

_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")


class _ToolIds:
    """Maps call ids to unique, well-formed tool-use ids; a reused call id gets a fresh one."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self._current: dict[str, str] = {}
        self._used: set[str] = set()

    def open(self, call_id: str) -> str:
        tool_id = call_id
        if not _TOOL_ID.fullmatch(call_id) or call_id in self._used:
            digest = stable_uuid(self._session_id, "tool", call_id, str(len(self._used)))
            tool_id = "toolu_" + digest.replace("-", "")[:24]
        self._used.add(tool_id)
        self._current[call_id] = tool_id
        return tool_id

    def answer(self, call_id: str) -> str | None:
        return self._current.get(call_id)


class _Transcript:
    """The lines so far, chained by ``parentUuid``, plus the assistant message being built."""

    def __init__(self, session: SessionRecord) -> None:
        self.session = session
        self.session_id = session_uuid(session.id)
        self.model = split_model(session.model)[1] or "unknown"
        self.tool_ids = _ToolIds(self.session_id)
        self.lines: list[str] = []
        self._parent: str | None = None
        self._blocks: list[dict[str, Any]] = []
        self._blocks_ts = 0.0

    def add(self, kind: str, message: dict[str, Any], ts: float, **extra: Any) -> None:
        line_uuid = stable_uuid(self.session_id, "line", str(len(self.lines)))
        line = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": clean_text(self.session.root),
            "sessionId": self.session_id,
            "version": xclaw_version(),
            "type": kind,
            "message": message,
            "uuid": line_uuid,
            "timestamp": iso_ms(ts),
            **extra,
        }
        self.lines.append(dump_line(line))
        self._parent = line_uuid

    def assistant_block(self, block: dict[str, Any], ts: float) -> None:
        if not self._blocks:
            self._blocks_ts = ts
        self._blocks.append(block)

    def flush(self) -> None:
        """End the assistant message being built (a user line or the end comes next)."""
        if not self._blocks:
            return
        uses_tools = any(block["type"] == "tool_use" for block in self._blocks)
        message_id = stable_uuid(self.session_id, "message", str(len(self.lines)))
        message = {
            "id": "msg_" + message_id.replace("-", "")[:24],
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._blocks,
            "stop_reason": "tool_use" if uses_tools else "end_turn",
            "stop_sequence": None,
            # Per-message token counts are not part of the transcript.
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        self._blocks = []
        self.add("assistant", message, self._blocks_ts)


def export_claude_code(session: SessionRecord, items: list[TranscriptItem]) -> list[str]:
    out = _Transcript(session)
    for item in items:
        _add_item(out, item.payload, item_time(item, session))
    out.flush()
    return out.lines


def _add_item(out: _Transcript, payload: dict[str, Any], ts: float) -> None:
    kind = payload.get("type")
    if kind == "message":
        text = message_text(payload)
        if not text:
            return  # nothing left once protocol text is gone
        if payload.get("role") == "assistant":
            out.assistant_block({"type": "text", "text": text}, ts)
            return
        out.flush()
        out.add("user", {"role": "user", "content": [{"type": "text", "text": text}]}, ts)
    elif kind == "function_call":
        block = {
            "type": "tool_use",
            "id": out.tool_ids.open(str(payload.get("call_id", ""))),
            "name": wire_tool_name(str(payload.get("name", ""))),
            "input": arguments_object(str(payload.get("arguments") or "{}")),
        }
        out.assistant_block(block, ts)
    elif kind == "function_call_output":
        _add_tool_result(out, payload, ts)
    # reasoning (and kinds this format has no place for) is left out


def _add_tool_result(out: _Transcript, payload: dict[str, Any], ts: float) -> None:
    tool_id = out.tool_ids.answer(str(payload.get("call_id", "")))
    if tool_id is None:
        return  # its call is not in the export; a dangling tool_result breaks a resume
    out.flush()
    raw = str(payload.get("output", ""))
    text = clean_json_text(raw)
    block = {
        "type": "tool_result",
        "tool_use_id": tool_id,
        "content": text,
        "is_error": output_failed(raw),
    }
    out.add("user", {"role": "user", "content": [block]}, ts, toolUseResult=text)
