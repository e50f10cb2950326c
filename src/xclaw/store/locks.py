"""Which process runs a session: an exclusive lock on a file per session, held for the run.

Two runs of one session at once (``xclaw resume`` in two terminals, a gateway reopening a
session a terminal still runs) would interleave their transcripts and redo each other's
calls. Each run of a session holds ``flock`` on its lock file; a second one fails with
``SESSION_BUSY``. The kernel drops the lock when the process dies, however it dies, so
"no one holds it" reliably means "the process that ran it is gone": the gateway resumes a
turn a crash cut off only then. ``flock`` locks belong to the open file, so two runs in one
process exclude each other too. (Hosts sharing a PostgreSQL store are told apart by the
gateway's leases, not by this.)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir, made_dir

__all__ = ["release_lock", "session_busy", "session_lock", "try_lock"]


def try_lock(path: Path) -> int | None:
    """The descriptor holding an exclusive lock on ``path`` (created owner-only), or None
    when another open file holds it."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def release_lock(fd: int) -> None:
    os.close(fd)  # closing drops the flock


def _lock_path(session_id: str) -> Path:
    return made_dir(_locks(data_dir())) / _lock_name(session_id)


@lru_cache(maxsize=16)
def _locks(data: Path) -> Path:
    return data / "locks"


@lru_cache(maxsize=1024)
def _lock_name(session_id: str) -> str:
    # a digest: any session id is a safe file name, and ids never collide with each other
    return hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".lock"


@contextlib.contextmanager
def session_lock(session_id: str) -> Iterator[None]:
    """Hold the run of ``session_id``; ``SESSION_BUSY`` when another run holds it."""
    fd = try_lock(_lock_path(session_id))
    if fd is None:
        raise ConfigError(
            f"Session {session_id} is being run by another process (or another turn).",
            code="SESSION_BUSY",
            hint="Wait for that run to finish, or stop it first.",
        )
    try:
        yield
    finally:
        release_lock(fd)


def session_busy(session_id: str) -> bool:
    """A run of ``session_id`` is going on now (in this process or another)."""
    fd = try_lock(_lock_path(session_id))
    if fd is None:
        return True
    release_lock(fd)
    return False
