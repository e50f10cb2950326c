"""Replay of real history through change jobs, beside plain ``git apply``.

The history: consecutive releases of ``hypothesis`` downloaded from PyPI (sdists, checked
against PyPI's SHA-256), committed one after another into a scratch repository — a real
project's real changes. For each parent → child pair, the child's diff (``git diff --binary``)
goes through a change job: a scripted model sends it with ``apply_patch`` on the parent tree
in an isolated worktree, then ``patch apply`` puts it on the (scratch) working tree, which must
then equal the child tree exactly. Beside it, plain ``git apply`` of the same diff on the same
parent. Both times are printed with their ratio, per commit: the job's whole lifecycle (health
check, worktree, baseline commit, validation, apply by hash) and the ``apply_patch`` tool alone.
Run: ``make bench`` (or ``python bench/patch_replay.py 200``); downloads are cached in
``${XDG_CACHE_HOME:-~/.cache}/xclaw-bench``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from packaging.version import Version

from xclaw.core.events import Event, EventBus
from xclaw.models.scripted import ScriptedModel
from xclaw.patch.engine import PatchJob
from xclaw.patch.job import JobStore, PatchLimits, Target
from xclaw.patch.paths import editable_lockfiles
from xclaw.sandbox.host import HostSandbox

PACKAGE = "hypothesis"
INDEX = f"https://pypi.org/pypi/{PACKAGE}/json"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xclaw-bench"
# As a user may configure (`patch: {editable_lockfiles: [...]}`): the releases bump lockfiles.
EDITABLE = editable_lockfiles(["Cargo.lock", "uv.lock", "poetry.lock", "package-lock.json"])
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        check=True,
        env=GIT_ENV,
    ).stdout


def sdists(count: int) -> list[Path]:
    """The latest ``count`` sdists, oldest first, downloaded once and checked by SHA-256."""
    folder = CACHE / PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(INDEX, timeout=60) as response:
        index = json.load(response)
    files = sorted(
        (
            (Version(v), f)
            for v, fs in index["releases"].items()
            for f in fs
            if f["packagetype"] == "sdist" and not Version(v).is_prerelease
        ),
        key=lambda pair: pair[0],
    )[-count:]
    paths = []
    for _, f in files:
        path = folder / f["filename"]
        if not path.exists():
            data = urllib.request.urlopen(urljoin(INDEX, f["url"]), timeout=120).read()
            if hashlib.sha256(data).hexdigest() != f["digests"]["sha256"]:
                raise SystemExit(f"{f['filename']}: SHA-256 does not match PyPI's")
            path.write_bytes(data)
        paths.append(path)
    return paths


def history(archives: list[Path], repo: Path) -> list[str]:
    """One commit per release; returns the commit ids, oldest first."""
    git(repo, "init", "-q")
    commits = []
    for archive in archives:
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/", 1)
                if len(parts) < 2 or not (member.isfile() or member.isdir()):
                    continue
                member.name = parts[1]
                tar.extract(member, repo, filter="data")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", archive.name)
        commits.append(git(repo, "rev-parse", "HEAD").decode().strip())
    return commits


def tree_of(repo: Path, commit: str) -> dict[str, str]:
    out = {}
    for line in git(repo, "ls-tree", "-r", commit).decode().splitlines():
        meta, path = line.split("\t", 1)
        out[path] = meta.split()[2]
    return out


def worktree_blobs(repo: Path) -> dict[str, str]:
    """The working tree as git would store it (blob ids), .git excluded."""
    files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts]
    rels = [p.relative_to(repo).as_posix() for p in files]
    ids = git(repo, "hash-object", "--stdin-paths", "--no-filters", stdin="\n".join(rels).encode())
    return dict(zip(rels, ids.decode().split(), strict=True))


async def replay_one(
    user: Path, parent: str, child: str, diff: str, jobs: JobStore
) -> dict[str, Any]:
    git(user, "checkout", "-q", "-f", "--detach", parent)
    git(user, "clean", "-q", "-fdx")
    turns: list[Any] = [
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "arguments": {"patch": diff}}]},
        "Applied the release's changes.",
    ]
    tool_ms: list[float] = []
    bus = EventBus()
    bus.subscribe(
        lambda ev: (
            tool_ms.append(float(ev.payload.get("duration_ms") or 0))
            if isinstance(ev, Event) and ev.type == "tool.completed"
            else None
        )
    )
    limits = PatchLimits(
        editable_lockfiles=EDITABLE,
        max_files_changed=10_000,
        max_diff_bytes=50_000_000,
        max_tool_input_bytes=50_000_000,
        max_file_bytes=50_000_000,
    )
    job = PatchJob(
        ScriptedModel(turns),
        user,
        (Target(1, "README.rst", "apply the next release"),),
        limits=limits,
        store=jobs,
        sandbox=HostSandbox(),
        bus=bus,
    )
    started = time.perf_counter()
    record = await job.run()
    if record.status == "review":
        record = await job.apply(record)
    job_ms = (time.perf_counter() - started) * 1000
    return {
        "status": record.status,
        "reason": record.reason,
        "job_ms": job_ms,
        "tool_ms": sum(tool_ms),
    }


def git_apply_ms(plain: Path, parent: str, diff: str) -> float:
    git(plain, "checkout", "-q", "-f", "--detach", parent)
    git(plain, "clean", "-q", "-fdx")
    started = time.perf_counter()
    git(plain, "apply", "--binary", "-", stdin=diff.encode())
    return (time.perf_counter() - started) * 1000


def prepare(count: int, tmp: Path) -> tuple[Path, list[str], Path, Path]:
    """The history repository and two clones of it: the user's and plain git's."""
    archives = sdists(count + 1)
    source = tmp / "history"
    source.mkdir()
    commits = history(archives, source)
    user, plain = tmp / "user", tmp / "plain"
    for clone in (user, plain):
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True, env=GIT_ENV)
    return source, commits, user, plain


async def replay_all(
    source: Path, commits: list[str], user: Path, plain: Path, jobs: JobStore
) -> tuple[int, list[dict[str, Any]], list[float]]:
    same, results, git_ms = 0, [], []
    for parent, child in zip(commits, commits[1:], strict=False):
        raw = git(source, "diff", "--binary", parent, child)
        if not raw:
            results.append({"status": "skipped", "reason": "the release changed no file"})
            continue
        try:  # a tool argument is JSON text: a diff that is not UTF-8 cannot be sent at all
            diff = raw.decode("utf-8")
        except UnicodeDecodeError:
            results.append({"status": "skipped", "reason": "diff is not UTF-8 text"})
            continue
        git_ms.append(git_apply_ms(plain, parent, diff))
        result = await replay_one(user, parent, child, diff, jobs)
        results.append(result)
        if result["status"] == "applied" and worktree_blobs(user) == tree_of(source, child):
            same += 1
    return same, results, git_ms


def main(count: int) -> int:
    """Replays ``count`` + a margin of releases: a release touching a protected path (one
    not made editable above) is refused whole by design and does not count towards ``count``."""
    with tempfile.TemporaryDirectory() as tmp:
        source, commits, user, plain = prepare(count + count // 4, Path(tmp))
        jobs = JobStore(Path(tmp) / "jobs")
        same, results, git_ms = asyncio.run(replay_all(source, commits, user, plain, jobs))
    skipped = [r for r in results if r["status"] == "skipped"]
    results = [r for r in results if r["status"] != "skipped"]
    refused = [r for r in results if "TOOL_PATH_DENIED" in str(r["reason"])]
    other = [r for r in results if r["status"] != "applied" and r not in refused]
    jm = statistics.median(r["job_ms"] for r in results)
    tm = statistics.median(r["tool_ms"] for r in results)
    gm = statistics.median(git_ms)
    print(f"{PACKAGE}: {len(results)} consecutive releases replayed through change jobs")
    print(f"  child tree reproduced exactly : {same}")
    print(f"  lockfiles made editable (as configured): {', '.join(EDITABLE)}")
    print(f"  refused whole (protected path, by design): {len(refused)}")
    print(f"  skipped (empty or not UTF-8)  : {len(skipped)}")
    print(f"  other failures                : {len(other)}")
    for r in other[:5]:
        print(f"    {r['status']}: {r['reason']}")
    print(f"  git apply (plain)             : {gm:8.1f} ms median")
    print(f"  apply_patch tool              : {tm:8.1f} ms median  ratio {tm / gm:5.2f}x")
    print(f"  whole job + patch apply       : {jm:8.1f} ms median  ratio {jm / gm:5.2f}x")
    return 0 if not other and same >= count else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
