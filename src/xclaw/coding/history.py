"""Earlier runs' tool calls, read back from a conversation: what the completion gate,
checkpoints and metrics count when a session goes on.

A session's turns follow one another in the same agent with the same message objects (the
transcript kept between follow-ups), so a ``RecordScan`` reads each message once: the next
turn it checks that the messages it read are still the conversation's first ones (identity,
at C speed) and reads only the new ones. Anything else (a rollback, a history loaded afresh)
is read from the start.
"""

from __future__ import annotations

from collections.abc import Sequence

from xclaw.core.messages import Message, ToolCallPart, ToolResultPart, starts_with
from xclaw.core.state import ToolCallRecord
from xclaw.tools.registry import ToolRegistry

__all__ = ["RecordScan", "history_records"]


def history_records(messages: Sequence[Message], registry: ToolRegistry) -> list[ToolCallRecord]:
    """Tool calls and their results as recorded in a conversation, in order."""
    return RecordScan(registry).records(messages)


class RecordScan:
    """``history_records`` of a growing conversation, each message read once."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.kinds: dict[str, tuple[bool, str]] = {
            t.name: (t.read_only, str(t.risk)) for t in registry
        }
        self._reset()

    def _reset(self) -> None:
        self._read: list[Message] = []  # read into the state below (all but a last message)
        self._records: list[ToolCallRecord] = []
        self._calls: dict[str, tuple[ToolCallPart, int]] = {}
        self._turn = 0
        self._written: dict[str, None] = {}  # of the records above, in order
        self._failed = 0  # of the records above
        self.written: list[str] = []
        """The paths written by the records ``records`` last returned, each once, in the
        order they were first written: kept as the scan goes, not read from them again."""
        self.failed = 0
        """How many of the records ``records`` last returned failed (kept the same way)."""

    def records(self, messages: Sequence[Message]) -> list[ToolCallRecord]:
        """The records of ``messages``: a new list, earlier calls first."""
        if not starts_with(messages, self._read):
            self._reset()
        known = len(self._read)
        # The last message may still grow (a transcript's open tail is rebuilt as parts come
        # in): it is read on a copy of the state, and again next time.
        settled = max(known, len(messages) - 1)
        self._read.extend(messages[known:settled])
        count = len(self._records)
        self._turn = _scan(
            messages[known:settled], self._records, self._calls, self._turn, self.kinds
        )
        self._failed += _note(self._records[count:], self._written)
        out = list(self._records)
        written, failed = self._written, self._failed
        if settled < len(messages):
            _scan(messages[settled:], out, dict(self._calls), self._turn, self.kinds)
            written = dict(written)
            failed += _note(out[len(self._records) :], written)
        self.written, self.failed = list(written), failed
        return out


def _note(records: Sequence[ToolCallRecord], written: dict[str, None]) -> int:
    """Add the paths ``records`` wrote to ``written``; how many of them failed."""
    failed = 0
    for rec in records:
        if not rec.result.ok:
            failed += 1
            continue
        path = rec.input.get("path")
        if rec.risk == "write" and isinstance(path, str):
            written.setdefault(path, None)
    return failed


def _scan(
    messages: Sequence[Message],
    records: list[ToolCallRecord],
    calls: dict[str, tuple[ToolCallPart, int]],
    turn: int,
    kinds: dict[str, tuple[bool, str]],
) -> int:
    """Read ``messages`` into ``records`` and the open ``calls``; the turn reached."""
    for msg in messages:  # hot on resume of long sessions: plain loops, no helpers
        if msg.role == "assistant":
            turn += 1
            for part in msg.parts:
                if isinstance(part, ToolCallPart):
                    calls[part.call_id] = (part, turn)
        elif msg.role == "tool":
            for part in msg.parts:
                if isinstance(part, ToolResultPart) and part.call_id in calls:
                    call, at = calls.pop(part.call_id)
                    read_only, risk = kinds.get(call.name, (True, "read"))
                    records.append(
                        ToolCallRecord(
                            call.call_id,
                            call.name,
                            call.arguments,
                            part.result,
                            at,
                            0.0,
                            read_only,
                            risk,
                        )
                    )
    return turn
