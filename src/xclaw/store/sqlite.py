"""The embedded store: one SQLite file under the XDG data dir, WAL mode, one open connection.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves a whole batch or none of
it, and two processes on the same file (a running CLI and a ``resume``) queue for the write
lock instead of failing with ``database is locked``. Reads run in short deferred transactions
and see every commit made before they started, from any process.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn, cast

from pydantic_core import from_json
from sqlalchemy import URL, Connection, Engine, Select, create_engine, event, insert
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement

from xclaw import dirs
from xclaw.core.errors import ConfigError
from xclaw.store import queries
from xclaw.store.base import RollbackReport, SessionRecord, TranscriptItem, WriteBatch
from xclaw.store.schema import (
    checkpoint_row,
    checkpoints,
    event_row,
    events,
    item_row,
    items,
    ledger_row,
    migrate,
    session_from_row,
    session_row,
    session_update_params,
    sessions,
    step_row,
    steps,
)

BUSY_TIMEOUT_MS = 10_000
_NAMED = sqlite_dialect(paramstyle="named")


def _sql(stmt: ClauseElement, columns: list[str] | None = None) -> str:
    """Compile once to SQLite SQL with :name parameters, so rows bind straight from dicts."""
    return str(stmt.compile(dialect=_NAMED, column_keys=columns))


# The commit path runs these compiled strings on the driver connection: SQLAlchemy's
# per-statement execution overhead (~40 µs here) is larger than SQLite's own work.
_SQL_INSERT_SESSION = _sql(insert(sessions))
_SQL_INSERT_ITEMS = _sql(insert(items))
_SQL_UPSERT_STEPS = _sql(queries.upsert(sqlite_insert, steps, ("session_id", "step_id")))
_SQL_UPSERT_LEDGER = _sql(queries.ledger_upsert(sqlite_insert))
_SQL_INSERT_EVENTS = _sql(insert(events))
_SQL_INSERT_CHECKPOINTS = _sql(insert(checkpoints), [c.name for c in checkpoints.c][1:])
_SQL_LOAD_ITEMS = _sql(queries.LOAD_ITEMS)
# Every gateway turn reads both: compiled once, run on the driver connection like the above.
_SQL_GET_SESSION = _sql(queries.GET_SESSION)
_SQL_COUNTERS = _sql(queries.COUNTERS)


@lru_cache(maxsize=64)
def _sql_session_update(keys: tuple[str, ...]) -> str:
    return _sql(queries.session_update(keys))


def open_store(path: Path | None = None) -> SqliteStore:
    """The store at ``path``, by default ``xclaw.db`` in the XDG data dir."""
    if path is None:
        folder = dirs.data_dir()
        return SqliteStore(folder / "xclaw.db", data_dir=folder)
    return SqliteStore(path)


class SqliteStore(queries.SqlStore):
    """``Store`` on one SQLite file. ``data_dir`` (default: the file's folder) is the folder
    the database must stay inside; it is checked again before every write."""

    def __init__(self, path: Path, *, data_dir: Path | None = None) -> None:
        self.path = Path(path)
        self.data_dir = Path(data_dir) if data_dir is not None else self.path.parent
        _make_private_dirs(self.data_dir)
        self._check_location()
        _make_private_dirs(self.path.parent)
        _create_private_file(self.path)
        self._check_location()
        st = os.lstat(self.path)
        self._identity = (st.st_dev, st.st_ino)
        self._lock = threading.RLock()  # one connection, so one transaction at a time
        self._begin_sql = "BEGIN"
        self._engine = _make_engine(self.path, self)
        try:
            self._conn = self._engine.connect()
            self._db = cast(sqlite3.Connection, self._conn.connection.driver_connection)
            with self._write() as conn:
                migrate(conn)
        except DBAPIError as err:
            self.close()
            raise ConfigError(
                f"Cannot open the session database {self.path}: {err.orig}.",
                code="STORE_UNAVAILABLE",
                hint="Check that the file is an xclaw database and not held by a stuck process.",
            ) from err
        except BaseException:
            self.close()
            raise
        _tighten_sidecars(self.path)

    # -- transactions -----------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A SQLAlchemy transaction holding the write lock from its first statement."""
        with self._lock:
            self._check_unchanged()
            self._begin_sql = "BEGIN IMMEDIATE"  # take the write lock now, not mid-way
            try:
                with self._conn.begin():
                    yield self._conn
            finally:
                self._begin_sql = "BEGIN"

    @contextmanager
    def _driver_write(self) -> Iterator[sqlite3.Connection]:
        """The same transaction on the driver connection, for the hot commit path."""
        with self._lock:
            self._check_unchanged()
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        # A short deferred transaction: one consistent snapshot, released right after.
        with self._lock, self._conn.begin():
            yield self._conn

    def _check_location(self) -> None:
        """Full check on open: no links, and the file resolves inside the data dir."""
        if self.data_dir.is_symlink():
            _unsafe(f"the data folder {self.data_dir} is a symbolic link")
        if self.path.is_symlink():
            _unsafe(f"the database {self.path} is a symbolic link")
        if not self.path.resolve().is_relative_to(self.data_dir.resolve()):
            _unsafe(f"the database {self.path} resolves outside {self.data_dir}")

    def _check_unchanged(self) -> None:
        """Before each write: still no links, and the path still names the file we opened
        (checked inside the data dir then) — three syscalls instead of a full resolve."""
        try:
            folder, db = os.lstat(self.data_dir), os.lstat(self.path)
        except FileNotFoundError:
            _unsafe(f"the database {self.path} or its folder is gone")
        if stat.S_ISLNK(folder.st_mode):
            _unsafe(f"the data folder {self.data_dir} is a symbolic link")
        if stat.S_ISLNK(db.st_mode):
            _unsafe(f"the database {self.path} is a symbolic link")
        if (db.st_dev, db.st_ino) != self._identity:
            _unsafe(f"the database {self.path} was replaced by another file")

    def close(self) -> None:
        if hasattr(self, "_conn"):
            self._conn.close()
        self._engine.dispose()

    # -- writes -----------------------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        """One ``BEGIN IMMEDIATE`` transaction; on any error nothing of the batch lands.

        Raises ``sqlite3.IntegrityError`` (a duplicate item/event seq, rows for a session
        that does not exist), ``KeyError`` (``session_updates`` for a missing session),
        ``ValueError`` (a malformed step id, unknown field or phase) and ``ConfigError``
        (``STORE_LOCATION_UNSAFE``).
        """
        if batch.empty():
            return
        now = time.time()
        sid = batch.session_id
        # Encode everything before taking the write lock: the transaction stays short.
        created = session_row(batch.create, now) if batch.create is not None else None
        session_change: tuple[str, dict[str, Any]] | None = None
        if batch.session_updates:
            params = session_update_params(sid, batch.session_updates, now)
            session_change = (
                _sql_session_update(tuple(k[2:] for k in params if k != "b_id")),
                params,
            )
        writes = [
            (sql, rows)
            for sql, rows in (
                (_SQL_INSERT_ITEMS, [item_row(sid, it) for it in batch.items]),
                (_SQL_UPSERT_STEPS, [step_row(sid, st) for st in batch.steps]),
                (_SQL_UPSERT_LEDGER, [ledger_row(sid, le, now) for le in batch.ledger]),
                (_SQL_INSERT_EVENTS, [event_row(sid, ev) for ev in batch.events]),
                (_SQL_INSERT_CHECKPOINTS, [checkpoint_row(sid, cp) for cp in batch.checkpoints]),
            )
            if rows
        ]
        with self._driver_write() as db:
            if created is not None:
                db.execute(_SQL_INSERT_SESSION, created)
            if session_change is not None and db.execute(*session_change).rowcount != 1:
                raise KeyError(sid)
            for sql, rows in writes:
                db.executemany(sql, rows)

    def rollback(self, session_id: str, step_id: str) -> RollbackReport:
        with self._write() as conn:
            removed = queries.delete_from_step(conn, session_id, step_id)
        return queries.rollback_report(session_id, step_id, removed)

    def fork(self, session_id: str, step_id: str, new_session_id: str) -> SessionRecord:
        with self._write() as conn:
            row = queries.copy_for_fork(conn, session_id, step_id, new_session_id)
        return session_from_row(row)

    # -- reads ------------------------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._lock:  # a lone statement is its own snapshot
            row = self._db.execute(_SQL_GET_SESSION, {"session_id": session_id}).fetchone()
        return None if row is None else queries.session_from_tuple(row)

    def _all(self, query: Select[Any]) -> list[Any]:
        with self._read() as conn:
            return list(conn.execute(query).all())

    def load_items(self, session_id: str) -> list[TranscriptItem]:
        # The resume hot path: one SELECT on the driver connection (a lone statement is its
        # own snapshot); pydantic-core's JSON parser is 2-3x faster here than json.loads.
        with self._lock:
            rows = self._db.execute(_SQL_LOAD_ITEMS, {"session_id": session_id}).fetchall()
        return [
            TranscriptItem(seq, step_id, turn, from_json(payload, cache_strings="keys"), created_at)
            for seq, step_id, turn, payload, created_at in rows
        ]

    def counters(self, session_id: str) -> tuple[int, int, int]:
        with self._lock:
            step_no, item_seq, event_seq = self._db.execute(
                _SQL_COUNTERS, {"session_id": session_id}
            ).fetchone()
        return int(step_no), int(item_seq), int(event_seq)


# -- engine and files --------------------------------------------------------------------------


def _unsafe(reason: str) -> NoReturn:
    raise ConfigError(
        f"Refusing to use the session database: {reason}.",
        code="STORE_LOCATION_UNSAFE",
        hint="Replace the link with a real folder or file owned by you, then run again.",
    )


def _make_engine(path: Path, store: SqliteStore) -> Engine:
    url = URL.create("sqlite", database=str(path))
    engine = create_engine(url, connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        # SQLAlchemy's documented pysqlite recipe: the driver must not emit BEGIN itself
        # (it would skip it for DDL and ignore IMMEDIATE); we emit it in the "begin" hook.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives the process crashing or being killed (the
        # case we test); only an OS crash or power loss may drop the last commits.
        cur.execute("PRAGMA synchronous = NORMAL")
        # A checkpoint every 4,000 WAL pages (16 MB) instead of 1,000: a turn rewrites the
        # same few pages (its session's rows, the index edges), and a checkpoint copies each
        # page once however often it changed since the last one, so fewer of them cost less
        # CPU per commit. The WAL file keeps its largest size on disk: about 16 MB in steady
        # use.
        cur.execute("PRAGMA wal_autocheckpoint = 4000")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA mmap_size = 268435456")  # reads of long transcripts skip copies
        cur.execute("PRAGMA cache_size = -32768")  # 32 MB page cache
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql(store._begin_sql)

    return engine


def _make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and missing parents owner-only, whatever the umask."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)


def _create_private_file(path: Path) -> None:
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _tighten_sidecars(path: Path) -> None:
    # SQLite gives -wal/-shm the database's mode; this covers files left by older runs.
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists() and not side.is_symlink():
            os.chmod(side, 0o600)
