"""The request view that names the project root as ``.`` (coding/relative_paths.py)."""

from __future__ import annotations

from pathlib import Path

from xclaw.coding.relative_paths import RootRewriter
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
