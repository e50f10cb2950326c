"""The request view that names the project root as ``.`` (coding/relative_paths.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xclaw.coding.relative_paths import RootRewriter, relative_paths_view
from xclaw.core.messages import Message, TextPart, ToolCallPart, ToolResult, ToolResultPart


def test_the_root_becomes_relative_and_its_siblings_stay(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    r = RootRewriter([root])
    assert r.text(f"see {root}/src/app.py") == "see src/app.py"
    assert r.text(f"cwd {root}") == "cwd ."
    assert r.text(f"{root}-old/x and /else{root}") == f"{root}-old/x and /else{root}"
    result = ToolResult.success(f"at {root}", cwd=str(root), items=[f"{root}/a"])
    shown = r.result(result)
    assert shown.message == "at ." and shown.data == {"cwd": ".", "items": ["a"]}


def test_a_message_without_the_root_is_handed_over_as_it_is(tmp_path: Path) -> None:
    r = RootRewriter([tmp_path / "shop"])
    message = Message(
        "assistant",
        (TextPart("hello"), ToolCallPart("c1", "fs.read", {"path": "a.py", "n": [1, 2]})),
    )
    assert r.message(message) is message
    tool = Message("tool", (ToolResultPart("c1", "fs.read", ToolResult.success("ok", n=1)),))
    assert r.message(tool) is tool


def test_the_view_of_a_growing_rewound_or_rebuilt_conversation(tmp_path: Path) -> None:
    """Each call shows every message rewritten, whichever way the conversation changed since
    the last call: grown (the usual turn), rewound, rebuilt with other objects, or with a
    message put in the middle (a recall hook)."""
    root = tmp_path / "shop"
    root.mkdir()
    view = relative_paths_view([root])
    rewriter = RootRewriter([root])
    state: Any = None  # the view does not look at the run's state

    def expected(messages: list[Message]) -> list[str]:
        return [rewriter.message(m).text for m in messages]

    conversation = [Message.system("s"), Message.user(f"open {root}/a.py")]
    for n in range(4):
        conversation.append(Message("assistant", (TextPart(f"{root}/f{n}.py is done"),)))
        shown = view(state, conversation)
        assert [m.text for m in shown] == expected(conversation)
    assert [m.text for m in shown][-1] == "f3.py is done"
    assert view(state, conversation[:3])[-1].text == "f0.py is done"  # rewound
    rebuilt = [Message(m.role, m.parts) for m in conversation]  # equal, other objects
    assert [m.text for m in view(state, rebuilt)] == expected(conversation)
    inserted = [*conversation[:1], Message.user(f"recalled: {root}/notes"), *conversation[1:]]
    assert [m.text for m in view(state, inserted)] == expected(inserted)
    assert view(state, inserted)[1].text == "recalled: notes"
