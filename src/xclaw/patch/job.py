"""A change job: its frozen input, its durable record, and the one-writer-per-project lock.

Records are JSON files under ``<data>/patch/jobs`` written atomically with mode 0600, so a
finished job can still be applied or reverted after a restart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from xclaw.dirs import data_dir
from xclaw.patch.gitio import PatchError
from xclaw.tools.atomic import atomic_write_bytes

Mode = Literal["review", "auto", "trusted-auto"]
Health = Literal["require-clean", "include-local-changes"]
Status = Literal["running", "review", "applied", "reverted", "failed"]
MODES: tuple[Mode, ...] = ("review", "auto", "trusted-auto")
_JOB_ID_CHARS = frozenset("0123456789abcdef-")


@dataclass(frozen=True, slots=True)
class Target:
    """One numbered target: where, and what the user wants changed there."""

    number: int
    file: str
    instruction: str
    line: int | None = None
    column: int | None = None
    selector: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class PatchLimits:
    max_targets: int = 20
    max_instruction_chars: int = 4_000
    max_turns: int = 40
    max_tool_calls: int = 120
    max_files_changed: int = 50
    max_diff_bytes: int = 1_000_000
    max_file_bytes: int = 1_000_000
    max_tool_input_bytes: int = 512_000
    max_snapshot_files: int = 200
    max_snapshot_bytes: int = 20_000_000
    check_timeout_s: float = 600.0
    check_output_chars: int = 20_000
    editable_lockfiles: tuple[str, ...] = ()  # lockfiles the user config lets jobs edit


@dataclass(frozen=True, slots=True)
class JobSpec:
    """Everything a job runs from, frozen when it is created; a new input means a new job."""

    job_id: str
    session_id: str
    targets: tuple[Target, ...]
    model: str
    git_root: str
    head: str
    health_digest: str
    mode: Mode
    health: Health
    consent: bool
    check_ids: tuple[str, ...]
    limits: PatchLimits = field(default_factory=PatchLimits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> JobSpec:
        data = dict(raw)
        data["targets"] = tuple(Target(**t) for t in data["targets"])
        data["check_ids"] = tuple(data["check_ids"])
        limits = dict(data["limits"])
        limits["editable_lockfiles"] = tuple(limits.get("editable_lockfiles", ()))
        data["limits"] = PatchLimits(**limits)
        return cls(**data)


def new_job_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(4)


@dataclass(slots=True)
class JobRecord:
    """The durable state of one job: what it produced and what apply/revert did."""

    spec: JobSpec
    status: Status = "running"
    reason: str = ""
    diff: str = ""
    baseline_hashes: dict[str, str | None] = field(default_factory=dict)
    result_hashes: dict[str, str | None] = field(default_factory=dict)
    applied_hashes: dict[str, str | None] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    deletes: bool = False
    manifests: bool = False  # a dependency manifest changed: never applied unattended
    events: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["spec"] = self.spec.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> JobRecord:
        data = dict(raw)
        data["spec"] = JobSpec.from_dict(data["spec"])
        return cls(**data)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class JobStore:
    """Job records as owner-only JSON files, one per job."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = base or data_dir() / "patch"
        self.jobs = self.base / "jobs"
        self.jobs.mkdir(parents=True, exist_ok=True, mode=0o700)

    def save(self, record: JobRecord) -> None:
        record.updated = time.time()
        data = json.dumps(record.to_dict(), indent=1, sort_keys=True).encode()
        atomic_write_bytes(self.jobs / f"{record.spec.job_id}.json", data, mode=0o600)

    def load(self, job_id: str) -> JobRecord:
        if not job_id or not set(job_id) <= _JOB_ID_CHARS:
            raise _unknown(job_id)
        try:
            raw = json.loads((self.jobs / f"{job_id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise _unknown(job_id) from None
        return JobRecord.from_dict(raw)

    def list(self) -> list[JobRecord]:
        out = []
        for path in sorted(self.jobs.glob("*.json")):
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                out.append(JobRecord.from_dict(json.loads(path.read_text(encoding="utf-8"))))
        return out

    def lock_path(self, git_root: str) -> Path:
        digest = sha256(os.path.realpath(git_root).encode())[:16]
        return self.base / f"{digest}.lock"

    @contextlib.contextmanager
    def project_lock(self, git_root: str, job_id: str) -> Iterator[None]:
        """One write job per project: a second request is refused, never queued."""
        path = self.lock_path(git_root)
        _drop_stale(path)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise PatchError(
                "Another change job is running for this project.",
                code="PATCH_JOB_RUNNING",
                hint="Wait for it to finish (`xclaw patch list`), then start again.",
            ) from None
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {job_id}\n")
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _drop_stale(path: Path) -> None:
    """A lock whose process is gone was left by a crash; it must not block forever."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    except PermissionError:
        pass


def _unknown(job_id: str) -> PatchError:
    return PatchError(
        f"There is no change job {job_id!r}.",
        code="PATCH_JOB_NOT_FOUND",
        hint="List jobs with `xclaw patch list`.",
    )
