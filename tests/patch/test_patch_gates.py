"""Issue 21, items 3 and 4: required checks gate apply on every face, a check's own writes are
never the agent's, and a write the changeset could not carry fails at once with its code."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.gateway.gateway_support import AUTH, serving
from tests.patch.conftest import git, tree_hash
from tests.patch.test_patch_job import FAILING, HI, PASSING, call, job

from xclaw.config import CheckConfig
from xclaw.core.events import EventBus
from xclaw.core.messages import ToolResult
from xclaw.patch import JobRecord, JobStore, PatchError
from xclaw.patch.engine import apply_job
from xclaw.sandbox.host import HostSandbox

CHECKED = [{"tool_calls": [HI]}, "greet says hi."]


def new_file(rel: str, line: str = "note") -> str:
    return (
        f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n"
        f"@@ -0,0 +1 @@\n+{line}\n"
    )


def check(code: str) -> CheckConfig:
    return CheckConfig(command=[sys.executable, "-c", code], required=True)


def results(model: Any) -> dict[str, ToolResult]:
    """The tool results the model was last shown, by call id."""
    return {
        part.call_id: part.result
        for message in model.requests[-1].messages
        for part in message.tool_results
    }


def failed_codes(bus: EventBus) -> list[str]:
    codes: list[str] = []
    bus.subscribe(
        lambda ev: (
            codes.append(str(ev.payload.get("error_code")))
            if ev.type == "tool.completed" and not ev.payload.get("ok")
            else None
        )
    )
    return codes


def refused_apply(record: JobRecord) -> PatchError:
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(record, JobStore()))
    return err.value


# -- 3. required checks gate apply ---------------------------------------------------------------
def test_a_failed_required_check_blocks_apply_through_the_engine(
    repo: Path, sandbox: HostSandbox
) -> None:
    pj = job(repo, list(CHECKED), sandbox, checks={"unit": FAILING})
    record = asyncio.run(pj.run())
    assert record.status == "review" and record.checks[0]["ok"] is False
    start = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(pj.apply(record))
    assert err.value.code == "PATCH_CHECKS_FAILED"
    assert "unit failed" in err.value.message and "run the job again" in err.value.hint
    stored = JobStore().load(record.spec.job_id)  # as after a restart: still refused
    assert refused_apply(stored).code == "PATCH_CHECKS_FAILED"
    assert tree_hash(repo) == start
    assert JobStore().load(record.spec.job_id).status == "review"


def test_a_required_check_that_did_not_run_on_the_final_change_blocks_apply(
    repo: Path, sandbox: HostSandbox
) -> None:
    record = asyncio.run(job(repo, list(CHECKED), sandbox, checks={"unit": PASSING}).run())
    assert record.checks[0]["ok"] is True
    start = tree_hash(repo)
    ran_on = record.checks[0]["changeset"]
    record.checks[0]["changeset"] = "0" * 64  # a result of an earlier version of the change
    err = refused_apply(record)
    assert err.code == "PATCH_CHECKS_FAILED" and "did not run on the final version" in err.message
    record.checks.clear()  # none at all
    assert refused_apply(record).code == "PATCH_CHECKS_FAILED"
    assert tree_hash(repo) == start
    record.checks.append({"check_id": "unit", "ok": True, "changeset": ran_on})
    asyncio.run(apply_job(record, JobStore()))  # the passing result of the final change
    assert record.status == "applied"


def test_cli_apply_refuses_a_failed_required_check(repo: Path, sandbox: HostSandbox) -> None:
    from typer.testing import CliRunner

    from xclaw.cli.app import app

    record = asyncio.run(job(repo, list(CHECKED), sandbox, checks={"unit": FAILING}).run())
    start = tree_hash(repo)
    out = CliRunner().invoke(app, ["patch", "apply", record.spec.job_id])
    assert out.exit_code != 0
    assert "PATCH_CHECKS_FAILED" in out.output and "unit" in out.output
    assert tree_hash(repo) == start


async def test_web_apply_refuses_a_failed_required_check(repo: Path, sandbox: HostSandbox) -> None:
    record = await job(repo, list(CHECKED), sandbox, checks={"unit": FAILING}).run()
    start = tree_hash(repo)
    with serving(repo, ["x"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post(f"/api/jobs/{record.spec.job_id}/apply", headers=AUTH)
    assert r.status_code == 409 and r.json()["code"] == "PATCH_CHECKS_FAILED", r.text
    assert "unit" in r.json()["message"] and r.json()["next"]
    assert tree_hash(repo) == start


# -- 3. a check's own writes ---------------------------------------------------------------------
def test_a_check_that_writes_files_mid_job_is_put_back_and_fails(
    repo: Path, sandbox: HostSandbox, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.txt"
    formatter = check(
        f"open({str(runs)!r}, 'a').write('x'); "
        "open('src/app.py', 'a').write('# formatted\\n'); open('gen.txt', 'w').write('made')"
    )
    turns = [
        {"tool_calls": [call("read_file", "r1", path="src/app.py")]},
        {"tool_calls": [HI]},
        {"tool_calls": [call("run_check", "c1", checkId="fmt")]},
        {
            "expect": {"last_contains": ["PATCH_CHECK_WROTE_FILES", "gen.txt"]},
            "tool_calls": [
                call("read_file", "r2", path="src/app.py"),
                call("read_file", "r3", path="gen.txt"),
                call("run_check", "c2", checkId="fmt"),  # the check's write moved the version
            ],
        },
        "greet says hi.",
    ]
    pj = job(repo, turns, sandbox, checks={"fmt": formatter})
    record = asyncio.run(pj.run())
    pj.model.assert_complete()  # type: ignore[attr-defined]
    seen = results(pj.model)
    assert seen["r2"].data["content"] == "def greet():\n    return 'hi'\n"  # what is on disk
    assert seen["r3"].error_code == "TOOL_PATH_DENIED"  # put back: it does not exist
    assert seen["c2"].error_code == "PATCH_CHECK_WROTE_FILES"
    assert record.status == "review", record.reason
    assert "'hi'" in record.diff and "formatted" not in record.diff and "gen.txt" not in record.diff
    (result,) = record.checks
    assert result["status"] == "wrote-files" and result["ok"] is False
    assert list(result["wrote"]) == ["gen.txt", "src/app.py"]
    assert runs.read_text() == "xxx"  # c1, c2 and the final run: none reused a stale result
    assert refused_apply(record).code == "PATCH_CHECKS_FAILED"


def test_a_check_that_changes_the_worktree_index_ends_the_job(
    repo: Path, sandbox: HostSandbox
) -> None:
    stager = CheckConfig(command=["git", "add", "--all"], required=False)
    turns = [{"tool_calls": [HI]}, {"tool_calls": [call("run_check", "c1", checkId="stage")]}]
    record = asyncio.run(job(repo, turns, sandbox, checks={"stage": stager}).run())
    assert record.status == "failed" and "PATCH_STATE_LOST" in record.reason


def test_ignored_files_a_check_writes_are_left_alone_and_never_read(
    repo: Path, sandbox: HostSandbox
) -> None:
    (repo / ".gitignore").write_text(".env\n*.log\n")
    git(repo, "commit", "-qam", "ignore logs")
    logger = check("open('check.log', 'w').write('cache')")
    turns = [
        {"tool_calls": [HI]},
        {"tool_calls": [call("run_check", "c1", checkId="log")]},
        {"tool_calls": [call("read_file", "r1", path="check.log")]},
        "done",
    ]
    pj = job(repo, turns, sandbox, checks={"log": logger})
    record = asyncio.run(pj.run())
    assert results(pj.model)["r1"].error_code == "TOOL_PATH_DENIED"
    assert record.status == "review" and record.checks[0]["status"] == "passed"
    assert "check.log" not in record.diff


# -- 4. writes the changeset cannot carry --------------------------------------------------------
@pytest.fixture
def ignoring(repo: Path) -> Path:
    (repo / ".gitignore").write_text(".env\n*.log\nlogs/\n")
    git(repo, "commit", "-qam", "ignore logs")
    return repo


@pytest.mark.parametrize(
    "write",
    [
        call("apply_patch", "w2", patch=new_file("notes.log")),
        call("apply_patch", "w2", patch=new_file("logs/today.txt")),
        call("apply_patch", "w2", patch=new_file("src/a.py") + new_file("src/run.log")),
    ],
)
def test_a_write_to_an_ignored_path_is_refused_at_once(
    ignoring: Path, sandbox: HostSandbox, write: dict[str, Any]
) -> None:
    start = tree_hash(ignoring)
    bus = EventBus()
    codes = failed_codes(bus)
    record = asyncio.run(
        job(ignoring, [{"tool_calls": [HI, write]}, "done"], sandbox, bus=bus).run()
    )
    assert codes == ["PATCH_PATH_IGNORED"]
    assert record.status == "failed" and "PATCH_PATH_IGNORED" in record.reason
    assert tree_hash(ignoring) == start


def test_replace_text_on_an_ignored_file_is_refused(ignoring: Path, sandbox: HostSandbox) -> None:
    logger = CheckConfig(command=[sys.executable, "-c", "open('x.log', 'w').write('a b')"])
    edit = call("replace_text", "w2", path="x.log", oldText="a", newText="c")
    turns = [{"tool_calls": [HI, call("run_check", "c1", checkId="log")]}, {"tool_calls": [edit]}]
    record = asyncio.run(job(ignoring, turns, sandbox, checks={"log": logger}).run())
    assert record.status == "failed" and "PATCH_PATH_IGNORED" in record.reason


def test_a_gitignore_edit_that_hides_a_file_of_the_job_is_refused(
    repo: Path, sandbox: HostSandbox
) -> None:
    hide = call(
        "replace_text", "w3", path=".gitignore", oldText=".env\n", newText=".env\nnew.txt\n"
    )
    turns: list[Any] = [
        {"tool_calls": [HI, call("apply_patch", "w2", patch=new_file("new.txt"))]},
        {"expect": {"last_ok": True}, "tool_calls": [hide]},
        "done",
    ]
    record = asyncio.run(job(repo, turns, sandbox).run())
    assert record.status == "failed" and "PATCH_PATH_IGNORED" in record.reason
    assert "new.txt" in record.reason


@pytest.fixture
def with_submodule(repo: Path) -> Path:
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    git(repo, "commit", "-qm", "a submodule")
    (repo / "vendor" / "lib").mkdir(parents=True)  # as a clone leaves a submodule not checked out
    return repo


def test_a_write_inside_a_submodule_is_refused_at_once(
    with_submodule: Path, sandbox: HostSandbox
) -> None:
    start = tree_hash(with_submodule)
    bus = EventBus()
    codes = failed_codes(bus)
    write = call("apply_patch", "w2", patch=new_file("vendor/lib/x.py"))
    pj = job(with_submodule, [{"tool_calls": [HI, write]}, "done"], sandbox, bus=bus)
    record = asyncio.run(pj.run())
    assert codes == ["PATCH_PATH_IN_SUBMODULE"]
    assert record.status == "failed" and "PATCH_PATH_IN_SUBMODULE" in record.reason
    assert "vendor/lib" in record.reason
    assert tree_hash(with_submodule) == start


def test_a_file_a_check_leaves_in_a_submodule_fails_the_job(
    with_submodule: Path, sandbox: HostSandbox
) -> None:
    filler = CheckConfig(command=[sys.executable, "-c", "open('vendor/lib/gen.py', 'w').write('')"])
    turns = [{"tool_calls": [HI]}, {"tool_calls": [call("run_check", "c1", checkId="gen")]}]
    record = asyncio.run(
        job(with_submodule, [*turns, "done"], sandbox, checks={"gen": filler}).run()
    )
    assert record.status == "failed" and "PATCH_PATH_IN_SUBMODULE" in record.reason


def test_a_folder_with_its_own_git_is_a_nested_repository(tmp_path: Path) -> None:
    from xclaw.patch.changeset import enclosing_repository

    (tmp_path / "tools" / "inner" / ".git").mkdir(parents=True)
    assert enclosing_repository(tmp_path, "tools/inner/a/b.py", set()) == "tools/inner"
    assert enclosing_repository(tmp_path, "tools/x.py", set()) == ""
    assert enclosing_repository(tmp_path, "vendor/lib/x.py", {"vendor/lib"}) == "vendor/lib"
    assert enclosing_repository(tmp_path, "vendor/lib", {"vendor/lib"}) == ""  # the link itself


@pytest.mark.parametrize(
    "write",
    [
        call("apply_patch", "w2", patch=new_file(".gitmodules", '[submodule "x"]')),
        call("apply_patch", "w2", patch=new_file("src/.gitmodules", '[submodule "x"]')),
    ],
)
def test_creating_gitmodules_is_refused(
    repo: Path, sandbox: HostSandbox, write: dict[str, Any]
) -> None:
    start = tree_hash(repo)
    bus = EventBus()
    codes = failed_codes(bus)
    record = asyncio.run(job(repo, [{"tool_calls": [HI, write]}, "done"], sandbox, bus=bus).run())
    assert codes == ["TOOL_PATH_DENIED"]
    assert record.status == "failed" and "TOOL_PATH_DENIED" in record.reason
    assert tree_hash(repo) == start


def test_changing_an_existing_gitmodules_is_refused(repo: Path, sandbox: HostSandbox) -> None:
    (repo / ".gitmodules").write_text('[submodule "x"]\n\tpath = x\n')
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-qm", "modules")
    edit = call("replace_text", "w2", path=".gitmodules", oldText="path = x", newText="path = y")
    model_turns: list[Any] = [{"tool_calls": [HI, edit]}, "done"]
    record = asyncio.run(job(repo, model_turns, sandbox).run())
    assert record.status == "failed" and "TOOL_PATH_DENIED" in record.reason
