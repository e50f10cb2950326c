"""End to end on a real git repository: a ScriptedModel drives the six tools."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.patch.conftest import git, tree_hash

from xclaw.config import CheckConfig
from xclaw.models.scripted import ScriptedModel
from xclaw.patch import JobStore, PatchError, PatchJob, Target
from xclaw.sandbox.host import HostSandbox

NEW_FILE = (
    "diff --git a/src/util.py b/src/util.py\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/src/util.py\n"
    "@@ -0,0 +1,2 @@\n"
    "+def shout(s):\n"
    "+    return s.upper()\n"
)
PASSING = CheckConfig(command=[sys.executable, "-c", "import sys; sys.exit(0)"], required=True)
FAILING = CheckConfig(
    command=[sys.executable, "-c", "print('bad'); raise SystemExit(3)"], required=True
)


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": args}


AUTO, TRUSTED = ("auto",), ("trusted-auto",)  # patch.allow_modes of the user config
HI = call("replace_text", "w1", path="src/app.py", oldText="'hello'", newText="'hi'")


def job(repo: Path, turns: list[Any], sandbox: HostSandbox, **kw: Any) -> PatchJob:
    return PatchJob(
        ScriptedModel(turns),
        repo,
        (Target(1, "src/app.py", "say hi instead of hello", line=2),),
        sandbox=sandbox,
        **kw,
    )


def happy_turns() -> list[Any]:
    return [
        {
            "tool_calls": [
                call("read_file", "r1", path="src/app.py"),
                call("search_text", "s1", query="hello", maxResults=10),
                call("list_files", "l1", glob="*", maxResults=50),
            ]
        },
        {
            "expect": {"last_ok": True},
            "tool_calls": [
                HI,
                call("apply_patch", "w2", patch=NEW_FILE),
            ],
        },
        {"expect": {"last_ok": True}, "tool_calls": [call("run_check", "c1", checkId="unit")]},
        "Done: greet says hi and util.shout exists.",
    ]


def test_full_job_then_apply_and_revert(repo: Path, sandbox: HostSandbox) -> None:
    start = tree_hash(repo)
    pj = job(repo, happy_turns(), sandbox, checks={"unit": PASSING})
    record = asyncio.run(pj.run())
    assert record.status == "review", record.reason
    assert tree_hash(repo) == start  # nothing written before apply
    assert "+    return 'hi'" in record.diff and "src/util.py" in record.diff
    assert [c["check_id"] for c in record.checks] == ["unit"] and record.checks[0]["ok"]
    assert not list((JobStore().base / "worktrees").iterdir())  # worktree cleaned up
    assert "worktrees" not in git(repo, "worktree", "list")
    pj.model.assert_complete()  # type: ignore[attr-defined]

    stored = JobStore().load(record.spec.job_id)  # as after a restart
    asyncio.run(pj.apply(stored))
    assert (repo / "src" / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""  # index untouched
    (repo / "README.md").write_text("# user edit after apply\n")
    asyncio.run(pj.revert(JobStore().load(record.spec.job_id)))
    after = tree_hash(repo)
    assert after.pop("README.md") != start.pop("README.md")
    assert after == start
    assert JobStore().load(record.spec.job_id).status == "reverted"


def test_concurrent_edit_after_job_blocks_apply(repo: Path, sandbox: HostSandbox) -> None:
    record = asyncio.run(job(repo, happy_turns(), sandbox, checks={"unit": PASSING}).run())
    (repo / "src" / "app.py").write_text("user work\n")
    before = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(job(repo, [], sandbox).apply(record))
    assert err.value.code == "PATCH_CONFLICT"
    assert tree_hash(repo) == before


def test_failing_required_check_blocks_auto_apply(repo: Path, sandbox: HostSandbox) -> None:
    start = tree_hash(repo)
    turns = happy_turns()
    turns[2] = {"tool_calls": [call("list_files", "l2", glob="*.py", maxResults=5)]}
    pj = job(repo, turns, sandbox, mode="auto", checks={"unit": FAILING}, allowed_modes=AUTO)
    record = asyncio.run(pj.run())
    assert record.status == "review"
    assert record.checks[0]["ok"] is False and "bad" in record.checks[0]["output"]
    assert tree_hash(repo) == start


def test_auto_mode_applies_when_gates_hold(repo: Path, sandbox: HostSandbox) -> None:
    turns = [
        {"tool_calls": [HI]},
        {"tool_calls": [call("run_check", "c1", checkId="unit")]},
        "done",
    ]
    pj = job(repo, turns, sandbox, mode="auto", checks={"unit": PASSING}, allowed_modes=AUTO)
    record = asyncio.run(pj.run())
    assert record.status == "applied"
    assert "'hi'" in (repo / "src" / "app.py").read_text()


def test_auto_mode_holds_a_file_made_executable_for_review(
    repo: Path, sandbox: HostSandbox
) -> None:
    chmod = "diff --git a/src/app.py b/src/app.py\nold mode 100644\nnew mode 100755\n"
    turns = [
        {"tool_calls": [HI]},
        {"tool_calls": [call("apply_patch", "p1", patch=chmod)]},
        {"tool_calls": [call("run_check", "c1", checkId="unit")]},
        "done",
    ]
    pj = job(repo, turns, sandbox, mode="auto", checks={"unit": PASSING}, allowed_modes=AUTO)
    record = asyncio.run(pj.run())
    assert record.status == "review", record.reason  # seed 001: no unattended mode escalation
    assert record.made_executable
    assert "'hi'" not in (repo / "src" / "app.py").read_text()


def test_dirty_tree_refused_and_untouched(repo: Path, sandbox: HostSandbox) -> None:
    (repo / "notes.txt").write_text("mine\n")
    before = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(job(repo, happy_turns(), sandbox).run())
    assert err.value.code == "PATCH_WORKTREE_DIRTY"
    assert tree_hash(repo) == before


def test_include_local_changes_keeps_them_out_of_the_diff(repo: Path, sandbox: HostSandbox) -> None:
    (repo / "README.md").write_text("# local edit\n")
    (repo / "notes.txt").write_text("mine\n")
    turns = [
        {"tool_calls": [call("read_file", "r1", path="notes.txt")]},
        {
            "expect": {"last_contains": ["mine"]},
            "tool_calls": [HI],
        },
        "done",
    ]
    record = asyncio.run(job(repo, turns, sandbox, include_local_changes=True, consent=True).run())
    assert record.status == "review", record.reason
    assert "README" not in record.diff and "notes" not in record.diff


def test_merge_in_progress_is_blocked_even_with_consent(repo: Path, sandbox: HostSandbox) -> None:
    gitdir = repo / ".git"
    (gitdir / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    with pytest.raises(PatchError) as err:
        asyncio.run(job(repo, [], sandbox, include_local_changes=True, consent=True).run())
    assert err.value.code == "PATCH_WORKTREE_BLOCKED"


def test_second_job_is_refused_while_one_runs(repo: Path, sandbox: HostSandbox) -> None:
    store = JobStore()
    with store.project_lock(str(repo), "other"):
        with pytest.raises(PatchError) as err:
            asyncio.run(job(repo, happy_turns(), sandbox).run())
    assert err.value.code == "PATCH_JOB_RUNNING"


def test_text_answer_without_tool_call_fails(repo: Path, sandbox: HostSandbox) -> None:
    record = asyncio.run(job(repo, ["I would change it."], sandbox).run())
    assert record.status == "failed" and "MODEL_TOOL_CALL_UNSUPPORTED" in record.reason


def test_trusted_auto_needs_consent_and_has_no_run_check(repo: Path, sandbox: HostSandbox) -> None:
    with pytest.raises(PatchError) as err:
        asyncio.run(job(repo, [], sandbox, mode="trusted-auto", allowed_modes=TRUSTED).run())
    assert err.value.code == "INVALID_REQUEST"
    turns = [
        {"tool_calls": [call("run_check", "c1", checkId="unit")]},
        {
            "expect": {"last_contains": ["TOOL_NOT_FOUND"]},
            "tool_calls": [HI],
        },
        "done",
    ]
    pj = job(
        repo,
        turns,
        sandbox,
        mode="trusted-auto",
        consent=True,
        checks={"unit": FAILING},
        allowed_modes=TRUSTED,
    )
    record = asyncio.run(pj.run())
    assert record.status == "applied" and record.checks == []


def test_project_file_may_not_define_checks(tmp_path: Path) -> None:
    from xclaw.config import load_config
    from xclaw.core.errors import ConfigError

    (tmp_path / "xclaw.yaml").write_text("checks: {t: {command: [rm, -rf, /]}}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert err.value.code == "CONFIG_UNSAFE"


def test_cli_run_show_apply_revert(repo: Path, tmp_path: Path) -> None:
    import json

    import yaml
    from typer.testing import CliRunner

    from xclaw.cli.app import app

    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"tool_calls": [HI]}, "done"]))
    runner = CliRunner()
    start = tree_hash(repo)
    out = runner.invoke(
        app,
        [
            "patch",
            "run",
            "-C",
            str(repo),
            "--model",
            f"scripted:{script}",
            "--target",
            "src/app.py:2",
            "say hi",
        ],
    )
    assert out.exit_code == 0, out.output
    job_id = re.search(r"job (\S+):", out.output).group(1)  # type: ignore[union-attr]
    shown = json.loads(runner.invoke(app, ["patch", "show", job_id, "--json"]).output)
    assert shown["status"] == "review"
    assert runner.invoke(app, ["patch", "apply", job_id]).exit_code == 0
    assert "'hi'" in (repo / "src" / "app.py").read_text()
    assert runner.invoke(app, ["patch", "revert", job_id]).exit_code == 0
    assert tree_hash(repo) == start
    assert job_id in runner.invoke(app, ["patch", "list"]).output
