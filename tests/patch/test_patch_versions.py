"""Per-version caches of a change job: reads see every write, checks rerun only on change, and
a changeset that ends on a protected path fails whole."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from tests.patch.conftest import tree_hash

from xclaw.config import CheckConfig
from xclaw.models.scripted import ScriptedModel
from xclaw.patch import PatchJob, Target
from xclaw.sandbox.host import HostSandbox


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": args}


def job(repo: Path, turns: list[Any], **kw: Any) -> PatchJob:
    target = (Target(1, "src/app.py", "say hi instead of hello", line=2),)
    return PatchJob(ScriptedModel(turns), repo, target, sandbox=HostSandbox(), **kw)


def test_a_read_after_a_write_sees_the_new_text(repo: Path) -> None:
    turns = [
        {"tool_calls": [call("read_file", "r1", path="src/app.py")]},
        {
            "expect": {"last_contains": ["'hello'"]},
            "tool_calls": [
                call("replace_text", "w1", path="src/app.py", oldText="'hello'", newText="'hi'")
            ],
        },
        {"tool_calls": [call("read_file", "r2", path="src/app.py")]},
        {"expect": {"last_contains": ["'hi'"]}, "text": "greet says hi."},
    ]
    record = asyncio.run(job(repo, turns).run())
    assert record.status == "review", record.reason


def test_a_check_reruns_only_when_the_change_moved_on(repo: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    counting = CheckConfig(
        command=[sys.executable, "-c", f"open({str(runs)!r}, 'a').write('x')"], required=True
    )
    edit = call("replace_text", "w1", path="src/app.py", oldText="'hello'", newText="'hi'")
    turns = [
        {"tool_calls": [edit]},
        {"tool_calls": [call("run_check", "c1", checkId="unit")]},
        {"tool_calls": [call("run_check", "c2", checkId="unit")]},  # same version: reused
        {
            "tool_calls": [
                call("replace_text", "w2", path="src/app.py", oldText="'hi'", newText="'hey'")
            ]
        },
        {"tool_calls": [call("run_check", "c3", checkId="unit")]},  # new version: runs
        "greet says hey.",
    ]
    record = asyncio.run(job(repo, turns, checks={"unit": counting}).run())
    assert record.status == "review", record.reason
    # Two versions were checked; the required check before review reused the last result.
    assert runs.read_text() == "xx"


def test_a_changeset_that_ends_on_a_protected_path_fails_whole(repo: Path) -> None:
    start = tree_hash(repo)
    creates_lock = (
        "diff --git a/src/poetry.lock b/src/poetry.lock\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/src/poetry.lock\n"
        "@@ -0,0 +1 @@\n"
        "+[[package]]\n"
    )
    turns = [
        {"tool_calls": [call("apply_patch", "p1", patch=creates_lock)]},
        "added a lockfile",
    ]
    record = asyncio.run(job(repo, turns).run())
    assert record.status == "failed" and "TOOL_PATH_DENIED" in str(record.reason)
    assert tree_hash(repo) == start


def test_lockfiles_are_editable_only_when_the_user_config_says_so(repo: Path) -> None:
    from tests.patch.conftest import git

    from xclaw.patch.job import PatchLimits
    from xclaw.patch.paths import editable_lockfiles

    (repo / "Cargo.lock").write_text("version = 3\n")
    git(repo, "add", "Cargo.lock")
    git(repo, "commit", "-q", "-m", "lock")
    bump = call(
        "replace_text", "w1", path="Cargo.lock", oldText="version = 3", newText="version = 4"
    )
    refused = asyncio.run(job(repo, [{"tool_calls": [bump]}, "bumped."]).run())
    assert refused.status == "failed" and "TOOL_PATH_DENIED" in refused.reason
    # Only real lockfile names count: a listed ".env" stays protected.
    limits = PatchLimits(editable_lockfiles=editable_lockfiles(["Cargo.lock", ".env"]))
    assert limits.editable_lockfiles == ("cargo.lock",)
    allowed = asyncio.run(job(repo, [{"tool_calls": [bump]}, "bumped."], limits=limits).run())
    assert allowed.status == "review", allowed.reason
    assert "+version = 4" in allowed.diff


def test_project_file_may_not_widen_patch_settings(tmp_path: Path) -> None:
    import pytest

    from xclaw.config import load_config
    from xclaw.core.errors import ConfigError

    (tmp_path / "xclaw.yaml").write_text("patch: {editable_lockfiles: [Cargo.lock]}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.code == "CONFIG_UNSAFE"


def test_job_message_carries_bounded_redacted_conventions_nearest_first(repo: Path) -> None:
    from tests.patch.conftest import git

    from xclaw.patch.conventions import TOTAL_CHARS, convention_sections

    (repo / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (repo / "src" / ".editorconfig").write_text("[*.py]\nindent_size = 4\n")
    (repo / "src" / "util.py").write_text("API_KEY = 'sk-abcdefghijklmnopqrstuvwxyz012345'\n")
    (repo / "src" / "big.py").write_text("x = 1\n" * 5000)
    (repo / ".env.example").write_text("TOKEN=1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "conventions")
    targets = (Target(1, "src/app.py", "say hi"),)
    sections = convention_sections(repo, targets)
    paths = [rel for rel, _ in sections]
    assert paths[:2] == ["src/.editorconfig", "pyproject.toml"]  # nearest folder first
    assert "src/big.py" in paths and "src/util.py" in paths  # same-folder examples
    assert ".env.example" not in paths and "src/app.py" not in paths
    text = dict(sections)
    assert "sk-abcdefghijklmnopqrstuvwxyz012345" not in text["src/util.py"]  # redacted
    assert len(text["src/big.py"].splitlines()) <= 30
    assert sum(len(t) for _, t in sections) <= TOTAL_CHARS
    turns = [
        {"expect": {"last_contains": ["line-length = 100"]}, "text": "nothing to change."},
    ]
    record = asyncio.run(job(repo, turns).run())
    assert record.status == "failed"  # no tool call; the message was checked by `expect`
