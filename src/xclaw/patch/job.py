"""A change job: its frozen input, its durable record, and the one-writer-per-project lock.

Records are JSON files under ``<data>/patch/jobs`` written atomically with mode 0600, so a
finished job can still be applied or reverted after a restart. Each carries an HMAC-SHA256
made with a key of its own in ``<data>/patch/record.key`` (0600, created on first use): a
record changed outside xclaw (a hash edited, a hunk added) is refused, never applied.

A record names the process that runs the job (``ProcessMark``: pid, start time, boot); a
``running`` job whose process is gone (Ctrl+C, SIGKILL, a crash) reads as ``interrupted``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from xclaw.core.errors import XclawError
from xclaw.dirs import data_dir
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.worktree.gitio import PatchError

Mode = Literal["review", "auto", "trusted-auto"]
Health = Literal["require-clean", "include-local-changes"]
Status = Literal["running", "review", "applied", "reverted", "failed", "interrupted"]
MODES: tuple[Mode, ...] = ("review", "auto", "trusted-auto")
UNATTENDED_MODES: tuple[Mode, ...] = ("auto", "trusted-auto")  # need patch.allow_modes
_JOB_ID_CHARS = frozenset("0123456789abcdef-")
_KEY_NAME = "record.key"
_KEY_BYTES = 32
_MAC_CONTEXT = b"xclaw patch job record v1\0"  # a MAC made for anything else never verifies


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


def require_mode_allowed(mode: Mode, allowed: Collection[str]) -> None:
    """auto and trusted-auto write the user's tree unattended: only their config turns them on."""
    if mode in UNATTENDED_MODES and mode not in allowed:
        raise PatchError(
            f"Mode {mode} is not enabled in your configuration.",
            code="PATCH_MODE_NOT_ALLOWED",
            hint=f"Add `patch: {{allow_modes: [{mode}]}}` to your user config "
            "(~/.config/xclaw/xclaw.yaml; a project file cannot), or run with --mode review.",
        )


@dataclass(frozen=True, slots=True)
class ProcessMark:
    """One process, told apart from a later one that reuses its pid: the start time (clock
    ticks since boot, from /proc) and the boot id. Empty where /proc is not there."""

    pid: int
    started: str = ""
    boot: str = ""

    @classmethod
    def current(cls) -> ProcessMark:
        pid = os.getpid()
        return cls(pid, _start_time(pid) or "", _boot_id())

    def alive(self) -> bool:
        if self.boot and self.boot != _boot_id():
            return False  # the machine restarted since
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # someone else's process holds the pid: the start time decides
        if not self.started:
            return True  # no /proc: a live pid is all there is to go on
        return _start_time(self.pid) == self.started


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat; None when unreadable or the process is a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces and ")"
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


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
    made_executable: bool = False  # a file became executable: never applied unattended
    events: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    owner: ProcessMark = field(default_factory=ProcessMark.current)  # runs the job

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["spec"] = self.spec.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> JobRecord:
        data = dict(raw)
        data["spec"] = JobSpec.from_dict(data["spec"])
        data["owner"] = ProcessMark(**data["owner"])
        return cls(**data)

    @property
    def touched(self) -> list[str]:
        """The paths the job changes, sorted: the keys apply and revert compare."""
        return sorted(self.baseline_hashes)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class JobStore:
    """Job records as owner-only JSON files, one per job, each signed with the store's key."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = base or data_dir() / "patch"
        self.jobs = self.base / "jobs"
        self.jobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._signing_key = b""  # read (or made) on first use

    def save(self, record: JobRecord) -> None:
        record.updated = time.time()
        body = record.to_dict()
        signed = {"hmac": self._mac(_canonical(body)), "record": body}
        data = json.dumps(signed, indent=1, sort_keys=True).encode()
        atomic_write_bytes(self.jobs / f"{record.spec.job_id}.json", data, mode=0o600)

    def load(self, job_id: str) -> JobRecord:
        """The verified record; ``interrupted`` when it says running and its process is gone."""
        if not job_id or not set(job_id) <= _JOB_ID_CHARS:
            raise _unknown(job_id)
        try:
            raw = (self.jobs / f"{job_id}.json").read_bytes()
        except OSError:
            raise _unknown(job_id) from None
        return settle(self._verified(raw, job_id))

    def list(self) -> list[JobRecord]:
        """Every record that verifies (``refused`` names the others)."""
        out = []
        for path in sorted(self.jobs.glob("*.json")):
            with contextlib.suppress(PatchError):
                out.append(self.load(path.stem))
        return out

    def refused(self) -> tuple[str, ...]:
        """Job ids whose stored record does not verify."""
        out: tuple[str, ...] = ()
        for path in sorted(self.jobs.glob("*.json")):
            try:
                self.load(path.stem)
            except PatchError as err:
                if err.code == "PATCH_RECORD_TAMPERED":
                    out += (path.stem,)
        return out

    @contextlib.contextmanager
    def settled_on_escape(self, record: JobRecord) -> Iterator[None]:
        """A job left by an exception is saved as failed, or as interrupted when it was
        stopped (Ctrl+C, cancellation), so it never reads ``running`` after its process."""
        try:
            yield
        except Exception as err:
            sentence = err.message if isinstance(err, XclawError) else type(err).__name__
            record.status = "failed"
            record.reason = f"{getattr(err, 'code', 'PATCH_FAILED')}: {sentence}"
            self.save(record)
            raise
        except BaseException:
            record.status, record.reason = "interrupted", _INTERRUPTED
            self.save(record)
            raise

    def _verified(self, raw: bytes, job_id: str) -> JobRecord:
        try:
            signed = json.loads(raw)
            body = signed["record"]
            given = signed["hmac"]
            if not isinstance(body, dict) or not isinstance(given, str):
                raise TypeError("not a signed record")
            if not hmac.compare_digest(self._mac(_canonical(body)), given):
                raise _tampered(job_id)
            record = JobRecord.from_dict(body)
        except (ValueError, TypeError, KeyError, AttributeError):
            raise _tampered(job_id) from None
        if record.spec.job_id != job_id:  # a valid record of another job, renamed
            raise _tampered(job_id)
        return record

    def _mac(self, body: bytes) -> str:
        return hmac.new(self._key(), _MAC_CONTEXT + body, hashlib.sha256).hexdigest()

    def _key(self) -> bytes:
        if self._signing_key:
            return self._signing_key
        path = self.base / _KEY_NAME
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = _create_key(path)
        if len(key) != _KEY_BYTES:
            raise PatchError(
                "The key that signs change-job records is damaged.",
                code="PATCH_RECORD_KEY_INVALID",
                hint=f"Delete {path}: a new key is made, and the existing job records are "
                "then refused (start new jobs).",
            )
        self._signing_key = key
        return key

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
        me = ProcessMark.current()
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{me.pid} {job_id} {me.started or '-'} {me.boot or '-'}\n")
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


_INTERRUPTED = "PATCH_INTERRUPTED: the job was stopped before it finished; nothing was applied"


def settle(record: JobRecord) -> JobRecord:
    """A ``running`` record whose process is gone is ``interrupted`` (in memory: saving it is
    ``xclaw patch clean``'s business)."""
    if record.status == "running" and not record.owner.alive():
        record.status = "interrupted"
        record.reason = record.reason or (
            f"PATCH_INTERRUPTED: the process that ran the job (pid {record.owner.pid}) is "
            "gone; nothing was applied"
        )
    return record


def _canonical(body: dict[str, Any]) -> bytes:
    """The bytes the MAC covers: one spelling of a record, whatever the file's layout."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def _create_key(path: Path) -> bytes:
    """A new random key, published whole or not at all: written to a private temporary
    file, then linked into place (``link`` never replaces a key another process made)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(_KEY_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_bytes()


def _drop_stale(path: Path) -> None:
    """A lock whose process is gone was left by a crash; it must not block forever. The
    start time tells a live owner from a later process that got the same pid."""
    try:
        fields = path.read_text().split()
        owner = ProcessMark(int(fields[0]), *(f if f != "-" else "" for f in fields[2:4]))
    except (OSError, ValueError, IndexError, TypeError):
        return
    if not owner.alive():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _unknown(job_id: str) -> PatchError:
    return PatchError(
        f"There is no change job {job_id!r}.",
        code="PATCH_JOB_NOT_FOUND",
        hint="List jobs with `xclaw patch list`.",
    )


def _tampered(job_id: str) -> PatchError:
    return PatchError(
        f"The stored record of job {job_id} does not verify: it was changed outside xclaw.",
        code="PATCH_RECORD_TAMPERED",
        hint="Nothing was applied or reverted. Start a new job; delete the record "
        "(`xclaw patch list` names it) to drop this one.",
    )
