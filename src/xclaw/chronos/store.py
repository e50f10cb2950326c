"""Chronos bookkeeping in SQLite: the last fire per job, every fire's run, paused jobs and
remembered webhook deliveries.

A fire is written (``begin_fire``: last fire moved and a ``started`` row, one transaction)
before its run starts, so a restart never fires the same instant twice; a row still
``started`` or ``interrupted`` after a restart is resumed through its durable session.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir
from xclaw.store.locks import release_lock, try_lock

__all__ = ["ChronosStore", "FireRecord", "FireStatus", "open_chronos_store"]

FireStatus = Literal[
    "started",  # persisted before the run; still so after a crash
    "interrupted",  # checkpointed by a stop: resumed at the next start
    "completed",
    "limited",  # a run limit (steps, turns, time) ended it
    "failed",
    "skipped",  # the job was still running (or paused) at this fire
    "missed",  # the scheduler was down at this fire and the policy is skip
]
OPEN_STATUSES: tuple[FireStatus, ...] = ("started", "interrupted")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS job_state (
    job_id TEXT PRIMARY KEY,
    last_fire REAL,
    paused INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fires (
    id INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL,
    source TEXT NOT NULL,
    fire_at REAL NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    reply TEXT NOT NULL DEFAULT '',
    request TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    ended_at REAL
);
CREATE INDEX IF NOT EXISTS fires_job ON fires (job_id, fire_at);
CREATE UNIQUE INDEX IF NOT EXISTS fires_session ON fires (session_id);
CREATE TABLE IF NOT EXISTS deliveries (
    hook TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (hook, delivery_id)
);
"""


@dataclass(frozen=True, slots=True)
class FireRecord:
    id: int
    job_id: str
    source: str  # cron, catch-up, manual, hook:NAME, event
    fire_at: float
    session_id: str | None
    status: FireStatus
    reason: str
    reply: str
    request: str  # the RunRequest as JSON, to resume it
    created_at: float
    ended_at: float | None


def open_chronos_store(path: Path | None = None) -> ChronosStore:
    return ChronosStore(path or data_dir() / "chronos.db")


class ChronosStore:
    """One SQLite file (WAL); every method is one transaction, safe across processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._scheduler_fd: int | None = None

    def close(self) -> None:
        self.release_scheduler()
        with self._lock:
            self._db.close()

    def claim_scheduler(self) -> None:
        """One scheduler per data file: two would resume the same cut-off runs."""
        if self._scheduler_fd is not None:
            return
        fd = try_lock(self.path.with_name(self.path.name + ".lock"))
        if fd is None:
            raise ConfigError(
                "Another chronos scheduler is running on this data (xclaw serve or xclaw "
                "chronos run).",
                code="CHRONOS_ALREADY_RUNNING",
                hint="Stop the other one first; one process schedules the jobs.",
            )
        self._scheduler_fd = fd

    def release_scheduler(self) -> None:
        if self._scheduler_fd is not None:
            release_lock(self._scheduler_fd)
            self._scheduler_fd = None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # writers queue here, across processes too
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- schedule state ----------------------------------------------------------------------
    def _one(self, sql: str, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        with self._lock:  # one connection: a read never lands inside another thread's write
            row: tuple[Any, ...] | None = self._db.execute(sql, args).fetchone()
            return row

    def last_fire(self, job_id: str) -> float | None:
        row = self._one("SELECT last_fire FROM job_state WHERE job_id = ?", (job_id,))
        return None if row is None or row[0] is None else float(row[0])

    def mark_seen(self, job_id: str, at: float) -> None:
        """Start the schedule of a job never fired before from ``at`` (nothing is missed)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO job_state (job_id, last_fire) VALUES (?, ?) "
                "ON CONFLICT (job_id) DO UPDATE SET last_fire = COALESCE(last_fire, ?)",
                (job_id, at, at),
            )

    def begin_fire(
        self,
        job_id: str,
        fire_at: float,
        session_id: str,
        source: str = "cron",
        request: str = "{}",
    ) -> int | None:
        """Record the fire as started and move the job's last fire to it, or None when that
        instant (or a later one) was already fired: a cron instant fires once."""
        with self._tx() as db:
            if source in ("cron", "catch-up") and not _advance(db, job_id, fire_at):
                return None
            cur = db.execute(
                "INSERT INTO fires (job_id, source, fire_at, session_id, status, request, "
                "created_at) VALUES (?, ?, ?, ?, 'started', ?, ?)",
                (job_id, source, fire_at, session_id, request, time.time()),
            )
            return int(cur.lastrowid or 0)

    def record_skip(
        self, job_id: str, fire_at: float, status: FireStatus, reason: str, source: str = "cron"
    ) -> bool:
        """A fire that did not run (overlap, paused, missed); moves the last fire too."""
        with self._tx() as db:
            if source in ("cron", "catch-up") and not _advance(db, job_id, fire_at):
                return False
            now = time.time()
            db.execute(
                "INSERT INTO fires (job_id, source, fire_at, status, reason, created_at, "
                "ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job_id, source, fire_at, status, reason, now, now),
            )
            return True

    def finish(self, fire_id: int, status: FireStatus, reason: str = "", reply: str = "") -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE fires SET status = ?, reason = ?, reply = ?, ended_at = ? WHERE id = ?",
                (status, reason, reply, time.time(), fire_id),
            )

    def open_fires(self) -> list[FireRecord]:
        """Fires whose run never finished (a crash or a stop): to resume, oldest first."""
        return self._select("WHERE status IN ('started', 'interrupted') ORDER BY id", ())

    def history(self, job_id: str | None = None, limit: int = 50) -> list[FireRecord]:
        if job_id is None:
            return self._select("ORDER BY id DESC LIMIT ?", (limit,))
        return self._select("WHERE job_id = ? ORDER BY id DESC LIMIT ?", (job_id, limit))

    def _select(self, where: str, args: tuple[object, ...]) -> list[FireRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, job_id, source, fire_at, session_id, status, reason, reply, request, "
                f"created_at, ended_at FROM fires {where}",
                args,
            ).fetchall()
        return [FireRecord(*row) for row in rows]

    # -- pause -------------------------------------------------------------------------------
    def set_paused(self, job_id: str, paused: bool) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO job_state (job_id, paused) VALUES (?, ?) "
                "ON CONFLICT (job_id) DO UPDATE SET paused = excluded.paused",
                (job_id, int(paused)),
            )

    def is_paused(self, job_id: str) -> bool:
        found = self._one("SELECT paused FROM job_state WHERE job_id = ?", (job_id,))
        return bool(found and found[0])

    # -- webhook deliveries ------------------------------------------------------------------
    def remember_delivery(self, hook: str, delivery_id: str, now: float, window_s: float) -> bool:
        """True the first time ``delivery_id`` is seen for ``hook`` within the window."""
        with self._tx() as db:
            db.execute("DELETE FROM deliveries WHERE seen_at < ?", (now - window_s,))
            cur = db.execute(
                "INSERT OR IGNORE INTO deliveries (hook, delivery_id, seen_at) VALUES (?, ?, ?)",
                (hook, delivery_id, now),
            )
            return cur.rowcount == 1


def _advance(db: sqlite3.Connection, job_id: str, fire_at: float) -> bool:
    row = db.execute("SELECT last_fire FROM job_state WHERE job_id = ?", (job_id,)).fetchone()
    if row is not None and row[0] is not None and float(row[0]) >= fire_at:
        return False
    db.execute(
        "INSERT INTO job_state (job_id, last_fire) VALUES (?, ?) "
        "ON CONFLICT (job_id) DO UPDATE SET last_fire = excluded.last_fire",
        (job_id, fire_at),
    )
    return True
