"""project.status with a real git repository, real files and a real managed process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall
from xclaw.tools.base import Workspace
from xclaw.tools.fs import fs_tools
from xclaw.tools.process import process_tools
from xclaw.tools.project import CHANGED_CAP, parse_porcelain, project_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry

_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **_IDENTITY},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")


def toolbox(root: Path) -> BoundToolbox:
    return ToolRegistry(fs_tools() + project_tools() + process_tools()).bind(Workspace(root))


async def call(box: BoundToolbox, name: str, **args: Any) -> ToolResult:
    prepared = box.prepare(ToolCallPart("call_1", name, args))
    assert isinstance(prepared, PreparedCall), prepared
    return await box.execute(prepared, lambda _stream, _text: None)


async def test_status_outside_a_repository(root: Path) -> None:
    result = await call(toolbox(root), "project.status")
    assert result.ok
    assert result.data == {
        "root": str(root),
        "git": None,
        "processes": [],
        "last_verification": None,
        "changed_files": [],
    }
    assert "not a git repository" in result.message


async def test_status_reports_branch_and_changes(root: Path) -> None:
    make_repo(root)
    (root / "a.txt").write_text("changed\n")
    (root / "new file.txt").write_text("n\n")
    git(root, "mv", "b.txt", "c.txt")

    result = await call(toolbox(root), "project.status")
    status = result.data["git"]
    assert status["branch"] == "main" and status["upstream"] is None
    assert (status["ahead"], status["behind"], status["clean"]) == (0, 0, False)
    assert status["changed"] == [
        {"path": "a.txt", "status": " M"},
        {"path": "c.txt", "status": "R ", "from": "b.txt"},
        {"path": "new file.txt", "status": "??"},
    ]
    assert status["changed_count"] == 3 and status["truncated"] is False
    assert "git branch main, 3 changed" in result.message

    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "more")
    clean = (await call(toolbox(root), "project.status")).data["git"]
    assert clean["clean"] is True and clean["changed"] == []


async def test_status_of_a_subfolder_project(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    make_repo(repo)
    app = (repo / "app").resolve()
    (app / "main.py").write_text("print()\n")
    whole = (await call(toolbox(app), "project.status")).data["git"]
    assert whole["changed"] == [{"path": ".", "status": "??"}]  # nothing of it is tracked yet

    (app / "keep.txt").write_text("k\n")
    git(repo, "add", "app/keep.txt")
    git(repo, "commit", "-q", "-m", "keep")
    (repo / "a.txt").write_text("outside the project\n")
    status = (await call(toolbox(app), "project.status")).data["git"]
    assert status["changed"] == [{"path": "main.py", "status": "??"}]


async def test_status_before_the_first_commit(root: Path) -> None:
    git(root, "init", "-q", "-b", "trunk")
    status = (await call(toolbox(root), "project.status")).data["git"]
    assert status["branch"] == "trunk" and status["clean"] is True


async def test_status_never_runs_the_repos_fsmonitor(root: Path) -> None:
    make_repo(root)
    marker = root.parent / "fsmonitor-ran"
    hook = root.parent / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    git(root, "config", "core.fsmonitor", str(hook))
    git(root, "status")  # plain git does run it: the check below can fail
    assert marker.exists()
    marker.unlink()
    result = await call(toolbox(root), "project.status")
    assert result.data["git"]["branch"] == "main"
    assert not marker.exists()


async def test_status_shows_run_state(root: Path) -> None:
    box = toolbox(root)
    assert (await call(box, "fs.write", path="src/app.py", content="x = 1\n")).ok
    box.workspace.last_verification = {"command": ["pytest"], "ok": True, "exit_code": 0}
    started = await call(box, "process.start", program="sleep", argv=["30"], wait_for_url_ms=0)
    assert started.ok, started
    try:
        result = await call(box, "project.status")
    finally:
        await call(box, "process.stop", process_id=started.data["processId"])
    assert result.data["changed_files"] == ["src/app.py"]
    assert result.data["last_verification"] == {"command": ["pytest"], "ok": True, "exit_code": 0}
    [proc] = result.data["processes"]
    assert (proc["processId"], proc["status"], proc["command"][-1]) == ("proc_01", "running", "30")
    assert "1 managed processes; 1 files changed" in result.message


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("## main", {"branch": "main", "upstream": None, "ahead": 0, "behind": 0}),
        (
            "## dev...origin/dev [ahead 2, behind 5]",
            {"branch": "dev", "upstream": "origin/dev", "ahead": 2, "behind": 5},
        ),
        (
            "## x...origin/x [gone]",
            {"branch": "x", "upstream": "origin/x", "ahead": 0, "behind": 0},
        ),
        ("## HEAD (no branch)", {"branch": None, "upstream": None, "ahead": 0, "behind": 0}),
        (
            "## No commits yet on feat/y",
            {"branch": "feat/y", "upstream": None, "ahead": 0, "behind": 0},
        ),
    ],
)
def test_parse_porcelain_headers(header: str, expected: dict[str, Any]) -> None:
    parsed = parse_porcelain(header + "\0")
    assert {k: parsed[k] for k in expected} == expected


def test_parse_porcelain_caps_the_list_but_counts_everything() -> None:
    records = ["## main"] + [f"?? f{i}.txt" for i in range(CHANGED_CAP + 5)]
    parsed = parse_porcelain("\0".join(records) + "\0", prefix="")
    assert len(parsed["changed"]) == CHANGED_CAP
    assert parsed["changed_count"] == CHANGED_CAP + 5 and parsed["truncated"] is True
