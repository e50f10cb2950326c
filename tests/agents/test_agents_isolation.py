"""Isolated workspaces: two writers writing the same path at once, diffs, artifacts."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.agents.conftest import call, git_project, tree

from xclaw.agents.registry import WorkerRegistry, WorkerSpec
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Model, ModelRequest
from xclaw.models.base import ModelTurn
from xclaw.models.scripted import FunctionModel, ScriptedModel
from xclaw.store.sqlite import SqliteStore

BIG = 200_000  # large enough that interleaved writes to one file would show


def _writer(barrier: asyncio.Barrier, letter: str) -> Model:
    """Both writers reach the barrier together, then write the same path in their tree."""

    async def turn(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        step = sum(1 for m in messages if m.role == "assistant")
        if step == 0:
            async with asyncio.timeout(5):
                await barrier.wait()
            args = {"path": "docs/guide.md", "content": letter * BIG}
            return ModelTurn(tool_calls=(ToolCallPart("w", "fs.write", args),))
        args2 = {
            "summary": f"wrote the {letter} guide",
            "artifact_pointers": {"guide": "docs/guide.md"},
        }
        return ModelTurn(tool_calls=(ToolCallPart("d", "deliver", args2),))

    return FunctionModel(turn)


def test_two_isolated_writers_on_the_same_path_never_collide(
    tmp_path: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    root = git_project(tmp_path / "repo", {"docs/guide.md": "old\n", "src/app.py": "x = 1\n"})
    (root / "notes.txt").write_text("uncommitted, untracked\n")
    (root / "src" / "app.py").write_text("x = 2\n")  # an uncommitted change
    barrier = asyncio.Barrier(2)
    letters = iter("AB")

    def model_for(spec: WorkerSpec) -> Model:
        assert spec.name == "writer" and spec.workspace == "isolated"
        return _writer(barrier, next(letters))

    debate_like = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "agents.delegate",
                        "arguments": {"worker": "writer", "task": "Write the guide (A)."},
                    },
                    {
                        "id": "c2",
                        "name": "agents.delegate",
                        "arguments": {"worker": "writer", "task": "Write the guide (B)."},
                    },
                ]
            },
            call("agents.open_artifact", pointer="{{result:c2.data.workspace.diff}}"),
            call("agents.open_artifact", pointer="/etc/passwd"),
            "two guides written",
        ]
    )
    orch = tree(
        debate_like,
        root,
        store,
        registry,
        model_for=model_for,
    )
    result = asyncio.run(orch.run("Have two writers write the guide at once."))
    assert result.status == "completed", result.reason

    a, b, opened, refused = (r.result for r in result.tool_calls)
    assert a.ok and b.ok, (a, b)
    trees = [Path(r.data["workspace"]["path"]) for r in (a, b)]
    assert trees[0] != trees[1]
    # Each tree holds its own writer's file, whole; the project is untouched.
    assert (trees[0] / "docs/guide.md").read_text() == "A" * BIG
    assert (trees[1] / "docs/guide.md").read_text() == "B" * BIG
    assert (root / "docs/guide.md").read_text() == "old\n"
    assert a.data["artifact_pointers"] == {"guide": str(trees[0] / "docs/guide.md")}
    assert a.data["workspace"]["changed_files"] == ["docs/guide.md"]
    # The tree started from the project as it is, uncommitted changes included.
    for worktree in trees:
        assert (worktree / "src/app.py").read_text() == "x = 2\n"
        assert (worktree / "notes.txt").read_text() == "uncommitted, untracked\n"
    # The diff applies to the project and gives the writer's file.
    diff = Path(b.data["workspace"]["diff"])
    assert opened.ok and opened.data["path"] == str(diff) and "+BBBB" in opened.message
    subprocess.run(["git", "apply", str(diff)], cwd=root, check=True)
    assert (root / "docs/guide.md").read_text() == "B" * BIG
    assert not refused.ok and refused.error_code == "PATH_OUTSIDE_ROOT"
    # The parent's context never held the file bodies.
    assert "AAAA" not in a.to_model_text() and "BBBB" not in b.to_model_text()


def test_an_isolated_copy_for_a_project_without_git(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    (root / "a.txt").write_text("one\n")
    model = ScriptedModel(
        [call("agents.delegate", worker="writer", task="Append to a.txt"), "done"]
    )

    def model_for(spec: WorkerSpec) -> Model:
        return ScriptedModel(
            [
                call("fs.read", path="a.txt"),
                call("fs.edit", path="a.txt", old_text="one\n", new_text="one\ntwo\n"),
                call("deliver", summary="appended"),
            ]
        )

    result = asyncio.run(
        tree(
            model,
            root,
            store,
            registry,
            model_for=model_for,
        ).run("x")
    )
    data = result.tool_calls[0].result.data
    assert (root / "a.txt").read_text() == "one\n"
    assert (Path(data["workspace"]["path"]) / "a.txt").read_text() == "one\ntwo\n"
    diff = Path(data["workspace"]["diff"]).read_text()
    assert "+two" in diff and data["workspace"]["changed_files"] == ["a.txt"]
