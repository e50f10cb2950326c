"""Apply and revert are verified, and the stored record is signed (issue 21, item 2).

A record changed outside xclaw (a hash edited, a hunk added, a record copied under another
job's name, an unsigned one) is refused before anything is read from it. A record that is
inconsistent in memory (its diff does not give its hashes, or writes another file) writes
nothing. A write that does not verify afterwards (a path outside the job changed, a file does
not hold the expected bytes) is put back and the call fails with its code.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.patch.conftest import tree_hash
from tests.patch.test_patch_job import HI, NEW_FILE, call, job
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.patch import JobRecord, JobStore, PatchError
from xclaw.patch import apply as apply_module
from xclaw.patch.engine import apply_job, revert_job
from xclaw.patch.job import sha256
from xclaw.sandbox.host import HostSandbox

README_HUNK = (
    "diff --git a/README.md b/README.md\n"
    "--- a/README.md\n"
    "+++ b/README.md\n"
    "@@ -1 +1 @@\n"
    "-# demo\n"
    "+# changed behind the review\n"
)
APP_BEFORE = "def greet():\n    return 'hello'\n"
APP_AFTER = "def greet():\n    return 'hi'\n"


def reviewed(repo: Path, sandbox: HostSandbox, *edits: dict[str, Any]) -> JobRecord:
    record = asyncio.run(job(repo, [{"tool_calls": list(edits or [HI])}, "done"], sandbox).run())
    assert record.status == "review", record.reason
    return record


def edit_stored(job_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the record file the way an editor or another program would (MAC kept)."""
    path = JobStore().jobs / f"{job_id}.json"
    stored = json.loads(path.read_text())
    change(stored.get("record", stored))
    path.write_text(json.dumps(stored))


def cli_apply(job_id: str) -> Any:
    return CliRunner().invoke(app, ["patch", "apply", job_id])


def refused_everywhere(repo: Path, job_id: str) -> None:
    before = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        JobStore().load(job_id)
    assert err.value.code == "PATCH_RECORD_TAMPERED"
    out = cli_apply(job_id)
    assert out.exit_code != 0 and "PATCH_RECORD_TAMPERED" in out.output
    assert tree_hash(repo) == before
    listed = CliRunner().invoke(app, ["patch", "list"]).output
    assert re.search(rf"{job_id}\s+refused", listed), listed


def test_a_changed_hash_is_refused(repo: Path, sandbox: HostSandbox) -> None:
    record = reviewed(repo, sandbox)
    moved = sha256(b"def greet():\n    return 'other'\n")
    edit_stored(record.spec.job_id, lambda r: r["result_hashes"].update({"src/app.py": moved}))
    refused_everywhere(repo, record.spec.job_id)


def test_an_added_hunk_is_refused(repo: Path, sandbox: HostSandbox) -> None:
    record = reviewed(repo, sandbox)
    edit_stored(record.spec.job_id, lambda r: r.update(diff=r["diff"] + README_HUNK))
    refused_everywhere(repo, record.spec.job_id)
    assert (repo / "README.md").read_text() == "# demo\n"


@pytest.mark.parametrize("how", ["unsigned", "renamed"])
def test_unsigned_or_renamed_records_are_refused(
    how: str, repo: Path, sandbox: HostSandbox
) -> None:
    record = reviewed(repo, sandbox)
    jobs = JobStore().jobs
    path = jobs / f"{record.spec.job_id}.json"
    if how == "unsigned":  # the format before records were signed
        path.write_text(json.dumps(json.loads(path.read_text())["record"]))
        job_id = record.spec.job_id
    else:  # a valid record of one job under another job's name
        job_id = record.spec.job_id[:-8] + "00000000"
        (jobs / f"{job_id}.json").write_bytes(path.read_bytes())
    refused_everywhere(repo, job_id)


def test_the_key_is_private_and_made_once(repo: Path, sandbox: HostSandbox) -> None:
    record = reviewed(repo, sandbox)
    key = JobStore().base / "record.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and len(key.read_bytes()) == 32
    first = key.read_bytes()
    assert JobStore().load(record.spec.job_id).status == "review"  # a new store, same key
    assert key.read_bytes() == first
    assert not [p for p in key.parent.iterdir() if p.name.startswith(".record.key")]


def test_a_hunk_added_in_memory_writes_nothing(repo: Path, sandbox: HostSandbox) -> None:
    record = reviewed(repo, sandbox)
    record.diff += README_HUNK  # not through the store: the apply itself must notice
    before = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(record, JobStore()))
    assert err.value.code == "PATCH_RESULT_MISMATCH" and "README.md" in err.value.message
    assert tree_hash(repo) == before


def test_a_result_hash_the_diff_does_not_give_writes_nothing(
    repo: Path, sandbox: HostSandbox
) -> None:
    record = reviewed(repo, sandbox)
    record.result_hashes["src/app.py"] = sha256(b"something else\n")
    before = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(record, JobStore()))
    assert err.value.code == "PATCH_RESULT_MISMATCH"
    assert tree_hash(repo) == before


def faulty_writer(
    monkeypatch: pytest.MonkeyPatch, after: Callable[[Path], None], *, times: int = 1
) -> None:
    """The tree writer, followed by ``after`` (a stray or concurrent write) ``times`` times:
    the restore that follows must not be disturbed."""
    real = apply_module.write_states
    left = [times]

    def writer(root: Path, states: Any, **kw: Any) -> None:
        real(root, states, **kw)
        if left[0] and root.name == "repo":
            left[0] -= 1
            after(root)

    monkeypatch.setattr(apply_module, "write_states", writer)


def test_a_path_outside_the_job_changed_rolls_back(
    repo: Path, sandbox: HostSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = reviewed(repo, sandbox, HI, call("apply_patch", "w2", patch=NEW_FILE))
    start = tree_hash(repo)
    faulty_writer(monkeypatch, lambda root: (root / "util.py").write_text("misplaced\n"))
    store = JobStore()
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(store.load(record.spec.job_id), store))
    assert err.value.code == "PATCH_APPLY_UNVERIFIED" and "util.py" in err.value.message
    (repo / "util.py").unlink()  # the stray write is not the job's to undo
    assert tree_hash(repo) == start  # src/app.py back, src/util.py gone again
    assert not (repo / "src" / "util.py").exists()
    assert store.load(record.spec.job_id).status == "review"


def test_a_file_rewritten_meanwhile_is_left_and_named(
    repo: Path, sandbox: HostSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = reviewed(repo, sandbox, HI, call("apply_patch", "w2", patch=NEW_FILE))
    formatted = "def greet():\n    return 'hi'  # formatted\n"
    faulty_writer(monkeypatch, lambda root: (root / "src" / "app.py").write_text(formatted))
    store = JobStore()
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(store.load(record.spec.job_id), store))
    assert err.value.code == "PATCH_ROLLBACK_FAILED" and "src/app.py" in err.value.message
    assert (repo / "src" / "app.py").read_text() == formatted  # someone else's: not clobbered
    assert not (repo / "src" / "util.py").exists()  # the job's own write was put back
    assert store.load(record.spec.job_id).status == "review"


def test_revert_is_verified_and_rolled_back(
    repo: Path, sandbox: HostSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = reviewed(repo, sandbox)
    store = JobStore()
    asyncio.run(apply_job(store.load(record.spec.job_id), store))
    applied = tree_hash(repo)
    faulty_writer(monkeypatch, lambda root: (root / "notes.txt").write_text("stray\n"))
    with pytest.raises(PatchError) as err:
        asyncio.run(revert_job(store.load(record.spec.job_id), store))
    assert err.value.code == "PATCH_APPLY_UNVERIFIED" and "notes.txt" in err.value.message
    (repo / "notes.txt").unlink()
    assert tree_hash(repo) == applied
    assert (repo / "src" / "app.py").read_text() == APP_AFTER
    assert store.load(record.spec.job_id).status == "applied"


def test_a_link_on_the_way_is_refused_before_writing(
    repo: Path, sandbox: HostSandbox, tmp_path: Path
) -> None:
    record = reviewed(repo, sandbox)
    elsewhere = tmp_path / "elsewhere"
    (repo / "src").rename(elsewhere)
    (repo / "src").symlink_to(elsewhere)  # same bytes behind it: the hashes alone match
    with (repo / ".gitignore").open("a") as fh:
        fh.write("/src\n")  # an ignored link: the health check alone would not block it
    with pytest.raises(PatchError) as err:
        asyncio.run(apply_job(JobStore().load(record.spec.job_id), JobStore()))
    assert err.value.code == "PATCH_PATH_UNSAFE"
    assert (elsewhere / "app.py").read_text() == APP_BEFORE


def test_apply_and_revert_keep_permission_bits(repo: Path, sandbox: HostSandbox) -> None:
    os.chmod(repo / "src" / "app.py", 0o600)
    record = reviewed(repo, sandbox)
    store = JobStore()
    asyncio.run(apply_job(store.load(record.spec.job_id), store))
    assert stat.S_IMODE(os.stat(repo / "src" / "app.py").st_mode) == 0o600
    asyncio.run(revert_job(store.load(record.spec.job_id), store))
    assert stat.S_IMODE(os.stat(repo / "src" / "app.py").st_mode) == 0o600
    assert (repo / "src" / "app.py").read_text() == APP_BEFORE
