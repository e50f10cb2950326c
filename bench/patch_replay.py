"""Replay of real release histories through change jobs, beside plain ``git apply``.

Three projects, each for what its files hold: ``hypothesis`` (PyPI sdists, many files and big
diffs), ``node-gyp`` (npm tarballs, executable scripts) and ``tslib`` (npm tarballs, CRLF
files). Their latest releases are downloaded from the registry, each checked against the
registry's own hash (PyPI's SHA-256, npm's SHA-512 integrity), and committed one after
another into a scratch repository. For each parent → child pair the child's diff
(``git diff --binary -M``) is applied twice, on the parent tree:

- by plain ``git apply`` (timed), which must give the child tree;
- by a change job: a scripted model sends the diff with ``apply_patch`` in the job's isolated
  worktree, then ``patch apply`` puts the job on a clone at the parent, whose tree (bytes
  and modes) must then equal the child's.

Printed per project: pairs, how many ``git apply`` took, identical trees, refusals by reason,
and the ``apply_patch`` tool's and the whole job's (health check, worktree, baseline commit,
validation, apply by hash) median times against ``git apply``'s, with their ratios. The exit
status is 1 when a job wrote a tree that differs, or refused a pair for a reason other than
the designed ones (a binary or protected file). Run: ``make bench`` or
``python bench/patch_replay.py [pairs per project, default 40] [project ...]``; downloads are
cached in ``${XDG_CACHE_HOME:-~/.cache}/xclaw-bench`` and re-checked on every run.
"""

from __future__ import annotations

import asyncio
import base64
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from packaging.version import InvalidVersion, Version

from xclaw.core.errors import ToolError
from xclaw.core.events import Event, EventBus
from xclaw.models.scripted import ScriptedModel
from xclaw.patch.diffparse import parse_patch
from xclaw.patch.engine import PatchJob
from xclaw.patch.hunks import plan_patch, write_all
from xclaw.patch.job import JobStore, PatchLimits, Target
from xclaw.patch.paths import editable_lockfiles, is_protected
from xclaw.sandbox.host import HostSandbox

PROJECTS = {"hypothesis": "pypi", "node-gyp": "npm", "tslib": "npm"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xclaw-bench"
# As a user may configure (`patch: {editable_lockfiles: [...]}`): the releases bump lockfiles.
EDITABLE = editable_lockfiles(["Cargo.lock", "uv.lock", "poetry.lock", "package-lock.json"])
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
# Refused whole by design: a binary file, or a path no job may touch.
DESIGNED = {"PATCH_BINARY_UNSUPPORTED", "TOOL_PATH_DENIED", "PATCH_CHANGESET_INVALID"}
LIMITS = PatchLimits(
    editable_lockfiles=EDITABLE,
    max_files_changed=10_000,
    max_diff_bytes=50_000_000,
    max_tool_input_bytes=50_000_000,
    max_file_bytes=50_000_000,
)


def git(root: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        check=check,
        env=GIT_ENV,
    )
    return done.stdout if done.returncode == 0 else b""


@dataclass(frozen=True, slots=True)
class Release:
    version: Version
    url: str
    filename: str
    algorithm: str  # a hashlib name
    digest: bytes  # what the registry says the file's hash is


def fetch_json(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def stable(text: str) -> Version | None:
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    return None if version.is_prerelease or version.is_devrelease else version


def pypi_releases(name: str) -> list[Release]:
    index = f"https://pypi.org/pypi/{name}/json"
    out = []
    for text, files in fetch_json(index)["releases"].items():
        version = stable(text)
        for f in files if version else ():
            if f["packagetype"] == "sdist":
                digest = bytes.fromhex(f["digests"]["sha256"])
                out.append(
                    Release(version, urljoin(index, f["url"]), f["filename"], "sha256", digest)
                )
    return out


def npm_releases(name: str) -> list[Release]:
    out = []
    for text, meta in fetch_json(f"https://registry.npmjs.org/{quote(name)}")["versions"].items():
        version, dist = stable(text), meta.get("dist", {})
        if version is None or "-" in text:
            continue
        integrity = str(dist.get("integrity", ""))
        if integrity.startswith("sha512-"):
            algorithm, digest = "sha512", base64.b64decode(integrity[len("sha512-") :])
        else:  # old releases carry only the SHA-1 npm computed when they were published
            algorithm, digest = "sha1", bytes.fromhex(dist["shasum"])
        filename = f"{name}-{text}.tgz"
        out.append(Release(version, dist["tarball"], filename, algorithm, digest))
    return out


def download(project: str, count: int) -> list[Path]:
    """The latest ``count`` stable releases, oldest first, each checked by the registry's hash
    (the cached copy too: a file that no longer matches is fetched again)."""
    finder = pypi_releases if PROJECTS[project] == "pypi" else npm_releases
    releases = sorted(finder(project), key=lambda r: r.version)[-count:]
    folder = CACHE / project
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for release in releases:
        path = folder / release.filename
        if not path.exists() or not matches(path.read_bytes(), release):
            with urllib.request.urlopen(release.url, timeout=120) as response:
                data = response.read()
            if not matches(data, release):
                raise SystemExit(f"{release.filename}: its hash does not match the registry's")
            path.write_bytes(data)
        paths.append(path)
    return paths


def matches(data: bytes, release: Release) -> bool:
    return hashlib.new(release.algorithm, data).digest() == release.digest


def history(archives: list[Path], repo: Path) -> list[str]:
    """One commit per release (its files as the tarball holds them, modes included)."""
    git(repo, "init", "-q")
    commits = []
    for archive in archives:
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/", 1)  # "package/..." or "name-1.2.3/..."
                if len(parts) < 2 or not parts[1] or not (member.isfile() or member.isdir()):
                    continue
                member.name = parts[1]
                tar.extract(member, repo, filter="data")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", archive.name)
        commits.append(git(repo, "rev-parse", "HEAD").decode().strip())
    return commits


def tree_of(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """path → (mode, blob id) of a commit."""
    out = {}
    for line in git(repo, "ls-tree", "-r", commit).decode().splitlines():
        meta, path = line.split("\t", 1)
        mode, _, blob = meta.split()
        out[path] = (mode, blob)
    return out


def worktree_state(repo: Path) -> dict[str, tuple[str, str]]:
    """The working tree as git would record it (mode, blob id), .git excluded."""
    files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts]
    rels = [p.relative_to(repo).as_posix() for p in files]
    ids = git(repo, "hash-object", "--stdin-paths", "--no-filters", stdin="\n".join(rels).encode())
    modes = ["100755" if os.stat(p).st_mode & 0o100 else "100644" for p in files]
    return {
        rel: pair
        for rel, pair in zip(rels, zip(modes, ids.decode().split(), strict=True), strict=True)
    }


def reset(clone: Path, commit: str) -> None:
    git(clone, "checkout", "-q", "-f", "--detach", commit)
    git(clone, "clean", "-q", "-fdx")


def engine_apply(plain: Path, parent: str, diff: str) -> tuple[bool, float]:
    """The tool's engine alone (parse, place every hunk in memory, write), no job around it."""
    reset(plain, parent)
    started = time.perf_counter()
    try:
        changes = plan_patch(plain, parse_patch(diff))
    except ToolError:
        return False, 0.0
    if isinstance(changes, str):
        return False, 0.0
    write_all(plain, changes)
    return True, (time.perf_counter() - started) * 1000


def git_apply(plain: Path, parent: str, diff: bytes) -> tuple[bool, float]:
    reset(plain, parent)
    started = time.perf_counter()
    done = subprocess.run(
        ["git", "apply", "--binary", "-"], cwd=plain, input=diff, capture_output=True, env=GIT_ENV
    )
    return done.returncode == 0, (time.perf_counter() - started) * 1000


@dataclass(slots=True)
class Outcome:
    status: str  # applied | refused | wrong
    reason: str = ""
    job_ms: float = 0.0
    tool_ms: float = 0.0


async def replay_one(user: Path, parent: str, diff: str, jobs: JobStore) -> Outcome:
    reset(user, parent)
    turns: list[Any] = [
        {"tool_calls": [{"id": "p1", "name": "apply_patch", "arguments": {"patch": diff}}]},
        "Applied the release's changes.",
    ]
    tool: list[dict[str, Any]] = []
    bus = EventBus()
    bus.subscribe(
        lambda ev: (
            tool.append(ev.payload)
            if isinstance(ev, Event) and ev.type == "tool.completed"
            else None
        )
    )
    target = (Target(1, "README.md", "apply the next release"),)
    job = PatchJob(
        ScriptedModel(turns),
        user,
        target,
        limits=LIMITS,
        store=jobs,
        sandbox=HostSandbox(),
        bus=bus,
    )
    started = time.perf_counter()
    try:
        record = await job.run()
        if record.status == "review":
            record = await job.apply(record)
    except Exception as err:  # a refusal of apply is an outcome to list, not a crash
        code = getattr(err, "code", type(err).__name__)
        return Outcome("refused", f"{code}: {err}")
    job_ms = (time.perf_counter() - started) * 1000
    tool_ms = sum(float(p.get("duration_ms") or 0) for p in tool)
    if record.status == "applied":
        return Outcome("applied", "", job_ms, tool_ms)
    failed = [p for p in tool if not p.get("ok")]
    reason = f"{failed[0]['error_code']}: {failed[0]['message']}" if failed else record.reason
    return Outcome("refused", reason, job_ms, tool_ms)


@dataclass(slots=True)
class Report:
    project: str
    pairs: int = 0
    git_took: int = 0
    identical: int = 0
    wrong: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    git_ms: list[float] = field(default_factory=list)
    engine_ms: list[float] = field(default_factory=list)
    engine_same: int = 0
    tool_ms: list[float] = field(default_factory=list)
    job_ms: list[float] = field(default_factory=list)

    def unexpected(self) -> int:
        return len(self.wrong) + sum(n for code, n in self.refused.items() if code not in DESIGNED)


def prepare(project: str, count: int, tmp: Path) -> tuple[tuple[Path, Path, Path], list[str]]:
    """The history repository and two clones of it: the user's and plain git's."""
    source, user, plain = tmp / project / "history", tmp / project / "user", tmp / project / "plain"
    source.mkdir(parents=True)
    commits = history(download(project, count + 1), source)
    for clone in (user, plain):
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True, env=GIT_ENV)
    return (source, user, plain), commits


async def replay_project(
    project: str, repos: tuple[Path, Path, Path], commits: list[str], jobs: JobStore
) -> Report:
    report = Report(project)
    for parent, child in zip(commits, commits[1:], strict=False):
        await replay_pair(report, repos, parent, child, jobs)
    return report


async def replay_pair(
    report: Report, repos: tuple[Path, Path, Path], parent: str, child: str, jobs: JobStore
) -> None:
    source, user, plain = repos
    raw = git(source, "diff", "--binary", "-M", parent, child)
    report.pairs += 1
    if not raw:
        report.skipped["the release changed no file"] += 1
        return
    try:  # a tool argument is JSON text: a diff that is not UTF-8 cannot be sent at all
        diff = raw.decode("utf-8")
    except UnicodeDecodeError:
        report.skipped["diff is not UTF-8 text"] += 1
        return
    took, ms = git_apply(plain, parent, raw)
    child_tree = tree_of(source, child)
    if not took or worktree_state(plain) != child_tree:
        report.skipped["plain git apply does not give the child tree"] += 1
        return
    report.git_took += 1
    report.git_ms.append(ms)
    took, ms = engine_apply(plain, parent, diff)
    if took:
        report.engine_ms.append(ms)
        report.engine_same += worktree_state(plain) == child_tree
    outcome = await replay_one(user, parent, diff, jobs)
    if outcome.status == "applied":
        report.job_ms.append(outcome.job_ms)
        report.tool_ms.append(outcome.tool_ms)
        if worktree_state(user) == child_tree:
            report.identical += 1
        else:
            report.wrong.append(f"{parent[:8]}..{child[:8]}")
        return
    code = outcome.reason.split(":", 1)[0]
    report.refused[code] += 1
    reason = outcome.reason
    if code == "TOOL_PATH_DENIED":  # the tool never says why; the bench may
        names = sorted({fp.path for fp in parse_patch(diff) if is_protected(fp.path, EDITABLE)})
        reason = f"{code}: protected path {', '.join(names[:3]) or '(none: see the diff)'}"
    report.examples.setdefault(code, reason[:160])


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def show(report: Report) -> None:
    gm, em = median(report.git_ms), median(report.engine_ms)
    tm, jm = median(report.tool_ms), median(report.job_ms)
    print(
        f"{report.project} ({PROJECTS[report.project]}): {report.pairs} consecutive release pairs"
    )
    print(f"  plain git apply took             : {report.git_took}")
    print(f"  apply_patch engine alone, same   : {report.engine_same} (bytes and modes)")
    print(f"  change job, child tree identical : {report.identical} (bytes and modes)")
    print(f"  change job, tree differs         : {len(report.wrong)} {' '.join(report.wrong[:5])}")
    for code, n in report.refused.most_common():
        kind = "by design" if code in DESIGNED else "UNEXPECTED"
        print(f"  refused ({kind}) {n:3d} x {report.examples[code]}")
    for reason, n in report.skipped.items():
        print(f"  skipped {n:3d} x {reason}")
    print(f"  git apply (plain)                : {gm:8.1f} ms median")
    print(f"  apply_patch engine alone         : {em:8.1f} ms median  ratio {em / gm:5.2f}x")
    print(f"  apply_patch tool (in the job)    : {tm:8.1f} ms median  ratio {tm / gm:5.2f}x")
    print(f"  whole job + patch apply          : {jm:8.1f} ms median  ratio {jm / gm:5.2f}x")


def main(count: int, projects: list[str]) -> int:
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        for project in projects:
            repos, commits = prepare(project, count, Path(tmp))
            jobs = JobStore(Path(tmp) / project / "jobs")
            reports.append(asyncio.run(replay_project(project, repos, commits, jobs)))
            show(reports[-1])
    print(f"lockfiles made editable (as a user may configure): {', '.join(EDITABLE)}")
    return 1 if any(r.unexpected() for r in reports) else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    pairs = int(args.pop(0)) if args and args[0].isdigit() else 40
    sys.exit(main(pairs, args or list(PROJECTS)))
