"""Compact round messages (seed 002 §7.1 B): what the model reads each round instead of the
whole history — the remaining instruction, done steps, the previous planned batch, the
previous output (normalised) and the latest snapshot. Only the latest snapshot is ever sent;
an older one left in a conversation is replaced by ``SNAPSHOT_OUTDATED``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xclaw.core.messages import Message, TextPart, ToolResult
from xclaw.page.remaining import is_done, parse_remaining, strip_remaining

SNAPSHOT_START = "SNAPSHOT_START"
SNAPSHOT_END = "SNAPSHOT_END"
SNAPSHOT_OUTDATED = "SNAPSHOT_OUTDATED (an older snapshot; only the latest one is current)"
_SNAPSHOT_BLOCK = re.compile(rf"{SNAPSHOT_START}.*?{SNAPSHOT_END}", re.DOTALL)
_OUTPUT_CAP = 600
_RESULT_CAP = 300


def wrap_snapshot(text: str, url: str = "") -> str:
    head = f"{SNAPSHOT_START} url={url}" if url else SNAPSHOT_START
    return f"{head}\n{text.rstrip()}\n{SNAPSHOT_END}"


def latest_snapshot(text: str) -> str | None:
    """The last wrapped snapshot in ``text`` (markers included), if any."""
    blocks = _SNAPSHOT_BLOCK.findall(text)
    return blocks[-1] if blocks else None


def outdate_snapshots(text: str) -> str:
    return _SNAPSHOT_BLOCK.sub(SNAPSHOT_OUTDATED, text)


def deduplicate_snapshots(messages: Sequence[Message]) -> list[Message]:
    """Keep the last snapshot of the conversation; earlier ones become SNAPSHOT_OUTDATED."""
    last = max(
        (i for i, m in enumerate(messages) if SNAPSHOT_START in m.text),
        default=-1,
    )
    out: list[Message] = []
    for i, msg in enumerate(messages):
        if i < last and SNAPSHOT_START in msg.text:
            parts = tuple(
                TextPart(outdate_snapshots(p.text)) if isinstance(p, TextPart) else p
                for p in msg.parts
            )
            msg = Message(msg.role, parts)
        out.append(msg)
    return out


def describe_call(name: str, args: Mapping[str, Any]) -> str:
    """One line a model recognises its own call by: ``dom.fill #a1b2c "abc"``."""
    action = args.get("action")
    if not isinstance(action, str):
        body = json.dumps(dict(args), ensure_ascii=False, sort_keys=True)
        return f"{name} {_clip(body, 160)}"
    bits = [f"{name}.{action}"]
    for key in ("selector", "url", "key", "label", "index", "attribute", "text", "state"):
        if args.get(key) is not None:
            bits.append(str(args[key]) if key in ("selector", "url") else f"{key}={args[key]}")
    if args.get("value") is not None:
        bits.append(json.dumps(args["value"], ensure_ascii=False))
    return _clip(" ".join(bits), 200)


def describe_result(name: str, args: Mapping[str, Any], result: ToolResult) -> str:
    head = describe_call(name, args)
    if result.ok:
        return f"✓ {head} → {_clip(result.message, _RESULT_CAP)}"
    return f"✗ {head} → {result.error_code}: {_clip(result.message, _RESULT_CAP)}"


def normalise_output(text: str) -> str:
    """The previous reply, trimmed: prose collapsed and capped, REMAINING kept last."""
    prose = " ".join(strip_remaining(text).split())
    parsed = parse_remaining(text)
    out = _clip(prose, _OUTPUT_CAP) if prose else "(no text)"
    if parsed.value is not None:
        out += f"\nREMAINING: {parsed.value or 'DONE'}"
    return out


@dataclass(frozen=True, slots=True)
class RoundInput:
    """Everything one round message is built from."""

    round: int
    task: str
    remaining: str
    snapshot: str  # wrapped, or a note saying why there is none
    done_steps: Sequence[str] = ()
    previous_planned: Sequence[str] = ()
    previous_output: str = ""
    previous_results: Sequence[str] = ()
    extra_sections: Sequence[tuple[str, str]] = field(default_factory=tuple)


def build_round_message(inp: RoundInput) -> str:
    """Round 0: the task and the first snapshot. Later rounds: the remaining instruction
    drives; the original task is not repeated, so the model does not start over."""
    if inp.round == 0 and not inp.done_steps:
        sections = [("Task", inp.task)]
    else:
        remaining = inp.remaining.strip()
        if is_done(remaining):
            remaining = "DONE — nothing is left: reply with a short summary and REMAINING: DONE"
        sections = [
            ("Current remaining instruction", remaining),
            ("Done steps (do NOT repeat)", _numbered(inp.done_steps)),
            ("Previous round planned task array", _planned(inp.previous_planned)),
            ("Previous round model output (normalized)", inp.previous_output or "(none)"),
        ]
        if inp.previous_results:
            sections.append(("Previous round results", "\n".join(inp.previous_results)))
    sections.extend(inp.extra_sections)
    sections.append(("Latest DOM snapshot", inp.snapshot))
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections)


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(items, 1)) if items else "(none yet)"


def _planned(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False) if items else "[]"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
