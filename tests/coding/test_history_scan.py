"""Earlier runs' tool calls read once (coding/history.py): a ``RecordScan`` continued turn
after turn gives what reading the whole conversation gives, also when its last message grows,
when the conversation is rewound, and when it is another conversation altogether."""

from __future__ import annotations

from xclaw.coding.history import RecordScan, history_records
from xclaw.core.messages import Message, TextPart, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.state import ToolCallRecord
from xclaw.tools.fs import fs_tools
from xclaw.tools.registry import ToolRegistry

REGISTRY = ToolRegistry(fs_tools())


def call(n: int, name: str = "fs.write") -> Message:
    args = {"path": f"f{n}.txt", "content": "x"}
    return Message("assistant", (TextPart(f"step {n}"), ToolCallPart(f"c{n}", name, args)))


def result(n: int, ok: bool = True, name: str = "fs.write") -> Message:
    outcome = ToolResult.success("written") if ok else ToolResult.failure("FS_DENIED", "no")
    return Message("tool", (ToolResultPart(f"c{n}", name, outcome),))


def plain(records: list[ToolCallRecord]) -> list[tuple[object, ...]]:
    return [(r.call_id, r.name, r.input, r.result.ok, r.turn, r.read_only, r.risk) for r in records]


def test_a_scan_continued_turn_after_turn_reads_what_a_full_read_does() -> None:
    scan = RecordScan(REGISTRY)
    conversation: list[Message] = [Message.system("s"), Message.user("go")]
    for n in range(6):
        conversation += [call(n, "fs.read" if n % 2 else "fs.write"), result(n, ok=n != 3)]
        assert plain(scan.records(conversation)) == plain(history_records(conversation, REGISTRY))
    assert [r.turn for r in scan.records(conversation)] == [1, 2, 3, 4, 5, 6]
    assert [r.read_only for r in scan.records(conversation)][:2] == [False, True]


def test_a_last_message_that_grows_is_read_again() -> None:
    """A kept transcript rebuilds its open tail as parts come in: a new object each time."""
    scan = RecordScan(REGISTRY)
    base = [Message.user("go"), call(0), call(1)]
    first = Message("tool", result(0).parts)
    assert plain(scan.records([*base, first])) == plain(history_records([*base, first], REGISTRY))
    grown = Message("tool", (*result(0).parts, *result(1).parts))
    got = scan.records([*base, grown])
    assert [r.call_id for r in got] == ["c0", "c1"]
    assert plain(got) == plain(history_records([*base, grown], REGISTRY))


def test_a_rewound_or_other_conversation_is_read_from_the_start() -> None:
    scan = RecordScan(REGISTRY)
    long = [Message.user("go"), call(0), result(0), call(1), result(1), call(2), result(2)]
    assert len(scan.records(long)) == 3
    rewound = long[:3]  # a rollback to after the first call
    assert [r.call_id for r in scan.records(rewound)] == ["c0"]
    other = [Message.user("go"), call(7), result(7)]  # equal text, other objects
    assert [r.call_id for r in scan.records(other)] == ["c7"]
    assert scan.records([]) == []
