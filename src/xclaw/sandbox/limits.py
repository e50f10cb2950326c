"""Resource bounds of a sandboxed command: private tmpfs sizes, processes, file sizes.

Processes are bounded by ``RLIMIT_NPROC`` (``prlimit``), which the kernel counts per user
namespace, so it bounds one command's tree. The kernel never applies it to the host's
uid 0, so when xclaw runs as root each command also gets its own ``pids`` cgroup (v1 or
v2, whichever this machine delegates to root) with ``pids.max``. A file-size limit
(``RLIMIT_FSIZE``) ends a writer with SIGXFSZ; core dumps are off.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")
_GROUP_PREFIX = "xclaw-"
_SWEEP_AGE_S = 30.0


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    tmp_bytes: int = 1 << 30  # /tmp
    var_tmp_bytes: int = 256 << 20
    home_bytes: int = 512 << 20  # the private home folder
    max_processes: int = 512  # per command tree
    max_file_bytes: int = 8 << 30  # any one file written

    def prefix(self, cgroup_procs: str | None = None) -> tuple[str, ...]:
        """Words that apply the per-process limits (and join ``cgroup_procs`` first): one
        fixed script of ours run by dash (the command is only its arguments), else
        ``prlimit``. Joining from the parent after the spawn would race bwrap's first fork."""
        n, f = self.max_processes, self.max_file_bytes
        if _dash():  # dash counts file sizes in 512-byte blocks
            blocks = max(1, f // 512)
            script = f'ulimit -p {n} && ulimit -f {blocks} && ulimit -c 0 && exec "$@"'
            if cgroup_procs is not None:
                script = f'echo $$ > "$0" && {script}'
            return ("/bin/sh", "-c", script, cgroup_procs or "sh")
        joined: tuple[str, ...] = ()
        if cgroup_procs is not None:
            joined = ("/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup_procs)
        prlimit = _prlimit()
        if prlimit is None:
            return joined
        return (*joined, prlimit, f"--nproc={n}:{n}", f"--fsize={f}:{f}", "--core=0:0", "--")


@functools.cache
def _dash() -> bool:
    return os.path.basename(os.path.realpath("/bin/sh")) == "dash"


@functools.cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")


@functools.cache
def pids_base() -> Path | None:
    """The folder under which root makes one ``pids`` cgroup per command, or None when the
    limit cannot be held this way (not root, no writable pids controller)."""
    if os.geteuid() != 0:
        return None
    for parent in _candidates():
        _remove_dead_bases(parent)
        group = parent / f"{_GROUP_PREFIX}{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            if not (group / "pids.max").exists():
                _enable_pids(group)
        except OSError:
            continue
        atexit.register(_remove_tree, group)
        return group
    return None


def _remove_dead_bases(parent: Path) -> None:
    """The folders of xclaw processes that are gone (a crash skips their exit handler)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            pid = name.removeprefix(_GROUP_PREFIX)
            if name.startswith(_GROUP_PREFIX) and pid.isdigit() and not _alive(int(pid)):
                _remove_tree(parent / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_tree(group: Path) -> None:
    with contextlib.suppress(OSError):
        for child in os.listdir(group):
            if (group / child).is_dir():
                with contextlib.suppress(OSError):
                    (group / child).rmdir()
        group.rmdir()


def _candidates() -> list[Path]:
    out: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if "pids" in controllers.split(","):
            out.append(_CGROUP / "pids" / rel)
        elif controllers == "" and (_CGROUP / "cgroup.controllers").exists():
            v2 = _CGROUP / rel
            if "pids" in (v2 / "cgroup.subtree_control").read_text(errors="replace"):
                out.append(v2)
    return [p for p in out if p.is_dir() and os.access(p, os.W_OK)]


def _enable_pids(group: Path) -> None:
    (group / "cgroup.subtree_control").write_text("+pids")
    if not (group / "pids.max").exists():
        raise OSError("no pids controller")


@dataclass(frozen=True, slots=True)
class PidsGroup:
    """One command's cgroup; ``enter`` moves the launcher in before it starts children."""

    path: Path

    @classmethod
    def create(cls, tag: str, max_processes: int) -> PidsGroup | None:
        base = pids_base()
        if base is None:
            return None
        _sweep(base)
        path = base / tag
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            return None
        return cls(path)

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def hit(self) -> bool:
        """Whether a fork was refused because the limit was reached."""
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and count.strip() not in ("", "0"):
                    return True
        except OSError:
            pass
        return False


def _sweep(base: Path) -> None:
    """Remove the groups of commands that ended (an empty cgroup can be removed)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    now = time.time()
    for name in names:
        child = base / name
        with contextlib.suppress(OSError):
            # a young one may belong to a command being started right now
            if len(name) == 16 and now - child.stat().st_mtime > _SWEEP_AGE_S:
                child.rmdir()
