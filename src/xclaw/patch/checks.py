"""Trusted checks: a check id resolves to the user's configured argv, run in the worktree.

No shell, a minimal environment (the sandbox's allow-list), bounded and scrubbed output. A
timeout, a signal or a non-zero exit is a failure the model cannot talk its way out of.

A check's own writes are never the agent's: git's view of the worktree (status records and the
bytes of every path that differs from the index) is taken before and after each check, and
whatever the check changed is put back, so its edits never enter the job's diff. Such a check
fails (``wrote-files``, with the paths it wrote; the tool result's code is
``PATCH_CHECK_WROTE_FILES``); when its writes cannot be put back the job ends
(``PATCH_STATE_LOST``). Files the repository ignores (caches, build output) are left alone:
they never enter a diff and the read tools do not read them.

``require_checks_passed`` is apply's gate in every mode: each required check of the job must
have passed on the job's final change, named by ``changeset_digest`` of its result hashes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xclaw.config import CheckConfig
from xclaw.patch.job import JobRecord, sha256
from xclaw.redact import redact
from xclaw.sandbox.base import LocalSandbox
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.worktree.gitio import PatchError, git, run_program

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class CheckResult:
    check_id: str
    ok: bool
    status: str  # passed | failed | timed-out | wrote-files
    exit_code: int | None
    duration_ms: int
    output: str
    version: int  # the worktree change version it ran on
    wrote: tuple[str, ...] = ()  # what the check itself wrote (and was put back)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clean_output(raw: bytes, worktree: Path, cap: int) -> str:
    """Text without control sequences, secrets or the worktree's real path; head and tail."""
    text = _ANSI.sub("", raw.decode("utf-8", "replace")).replace(str(worktree), ".")
    text = redact(text)
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n[... {len(text) - cap} characters cut ...]\n{text[-half:]}"


def _find_program(program: str) -> str | None:
    found = program if "/" in program else shutil.which(program)
    return found if found is not None and Path(found).is_file() else None


async def run_check(
    check_id: str,
    config: CheckConfig,
    worktree: Path,
    sandbox: LocalSandbox,
    *,
    version: int,
    timeout_s: float,
    cap: int,
) -> CheckResult:
    executable = _find_program(config.command[0])
    if executable is None:
        raise PatchError(
            f"The program of check {check_id} is not installed.",
            code="PATCH_CHECK_UNAVAILABLE",
            hint="Fix the command of this check in your user config.",
        )
    before = await tree_state(worktree)
    started = time.monotonic()
    done = await run_program(
        sandbox, executable, tuple(config.command[1:]), worktree, timeout_s=timeout_s, cap=cap * 4
    )
    ms = int((time.monotonic() - started) * 1000)
    wrote = await undo_writes(worktree, before)
    status = "timed-out" if done.returncode is None else ("passed" if done.ok else "failed")
    output = clean_output(done.stdout + done.stderr, worktree, cap)
    if wrote:
        status = "wrote-files"
        output += f"\n[xclaw: this check wrote {', '.join(wrote[:10])}; that was put back]"
    ok = done.ok and not wrote
    return CheckResult(check_id, ok, status, done.returncode, ms, output, version, wrote)


def changeset_digest(result_hashes: Mapping[str, str | None]) -> str:
    """Names one final change: the job's result hashes, path by path."""
    return sha256(json.dumps(sorted(result_hashes.items())).encode())


def require_checks_passed(record: JobRecord) -> None:
    """Apply's gate, the same for the CLI, the web UI and auto modes: every required check of
    the job passed on its final change. There is no way to apply anyway."""
    final = changeset_digest(record.result_hashes)
    results = {c.get("check_id"): c for c in record.checks}
    problems = []
    for check_id in record.spec.check_ids:
        result = results.get(check_id)
        if result is None or result.get("changeset") != final:
            problems.append(f"{check_id} did not run on the final version of the change")
        elif not result.get("ok"):
            problems.append(f"{check_id} {str(result.get('status', 'failed')).replace('-', ' ')}")
    if problems:
        raise PatchError(
            "This job cannot be applied: required check " + "; ".join(problems) + ".",
            code="PATCH_CHECKS_FAILED",
            hint="See the check's output with `xclaw patch show JOB`; fix the instructions or "
            "the check, then run the job again.",
        )


# -- what a check wrote -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PathState:
    """One path git lists as differing from the worktree's index."""

    digest: str | None  # SHA-256 of a regular file; None when absent; a marker otherwise
    data: bytes | None  # a regular file's bytes, to put back
    mode: int  # its permission bits
    index: tuple[str, str] | None  # (mode, blob) of its index entry; None when untracked


@dataclass(frozen=True, slots=True)
class TreeState:
    """git's view of the worktree (HEAD, index and worktree, as status records) and the bytes
    of every path that differs from the index: equal states mean nothing was written."""

    status: bytes
    paths: dict[str, PathState]


async def tree_state(worktree: Path) -> TreeState:
    done = await git(
        worktree,
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=none",
    )
    if not done.ok:
        raise _state_lost("git could not read the worktree's state")
    try:
        paths = {rel: _path_state(worktree / rel, i) for rel, i in _status_paths(done.stdout)}
    except OSError as err:
        raise _state_lost(f"a changed file could not be read ({err.strerror})") from None
    return TreeState(done.stdout, paths)


def _status_paths(raw: bytes) -> list[tuple[str, tuple[str, str] | None]]:
    """(path, index entry) of each record of ``status --porcelain=v2 -z``."""
    fields = raw.decode("utf-8", "surrogateescape").split("\0")
    out: list[tuple[str, tuple[str, str] | None]] = []
    i = 0
    while i < len(fields):
        record, i = fields[i], i + 1
        kind = record[:2]
        if kind == "1 ":
            parts = record.split(" ", 8)
            out.append((parts[8], (parts[4], parts[7])))
        elif kind == "2 ":  # a rename names its source in the next field: neither is restorable
            out.append((record.split(" ", 9)[9], None))
            out.append((fields[i], None))
            i += 1
        elif kind == "u ":
            out.append((record.split(" ", 10)[10], None))
        elif kind in ("? ", "! "):
            out.append((record[2:], None))
    return out


def _path_state(path: Path, index: tuple[str, str] | None) -> PathState:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return PathState(None, None, 0, index)
    if not stat.S_ISREG(st.st_mode):
        return PathState(f"not-a-regular-file:{stat.S_IFMT(st.st_mode)}", None, 0, index)
    data = path.read_bytes()
    return PathState(sha256(data), data, stat.S_IMODE(st.st_mode), index)


async def undo_writes(worktree: Path, before: TreeState) -> tuple[str, ...]:
    """Put back every path that changed since ``before``; the paths, or ``PATCH_STATE_LOST``
    when the worktree cannot be made exactly as it was (HEAD or the index moved, a folder
    became a link...)."""
    after = await tree_state(worktree)
    if after == before:
        return ()
    wrote = sorted(
        rel
        for rel in before.paths.keys() | after.paths.keys()
        if before.paths.get(rel) != after.paths.get(rel)
    )
    try:
        for rel in wrote:
            await _put_back(worktree, rel, before.paths.get(rel), after.paths.get(rel))
    except OSError as err:
        raise _state_lost(f"a file a check wrote could not be put back ({err.strerror})") from None
    if await tree_state(worktree) != before:
        raise _state_lost("a check changed the worktree in a way that cannot be put back")
    return tuple(wrote)


async def _put_back(worktree: Path, rel: str, was: PathState | None, now: PathState | None) -> None:
    """``rel`` as ``before`` had it: its bytes then, or its index entry when it was clean."""
    target = _inside(worktree, rel)
    if was is not None and was.digest is None:
        _remove(target)
    elif was is not None:
        if was.data is None:
            raise _state_lost(f"{rel} was not a regular file")
        atomic_write_bytes(target, was.data, mode=was.mode, durable=False)
    elif now is not None and now.index is not None:
        mode, blob = now.index
        if mode not in ("100644", "100755"):
            raise _state_lost(f"{rel} is not a regular file in the index")
        done = await git(worktree, "cat-file", "blob", blob)
        if not done.ok:
            raise _state_lost(f"git could not read {rel} from the index")
        atomic_write_bytes(target, done.stdout, mode=int(mode[-3:], 8), durable=False)
    else:
        _remove(target)


def _inside(worktree: Path, rel: str) -> Path:
    """``worktree/rel`` with every folder on the way a real one (made when a check removed
    it): putting a file back never follows a link a check left out of the worktree."""
    current = worktree
    for part in rel.split("/")[:-1]:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise _state_lost(f"a folder on the way to {rel} is no longer a folder")
    return current / rel.split("/")[-1]


def _remove(target: Path) -> None:
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise _state_lost(f"a check left a folder at {target.name}")
    target.unlink()


def _state_lost(reason: str) -> PatchError:
    return PatchError(
        f"The worktree is no longer in a known state: {reason}.",
        code="PATCH_STATE_LOST",
        hint="Nothing of yours changed. Make the check leave files alone (a --check flag, no "
        "git commands), then run the job again.",
    )
