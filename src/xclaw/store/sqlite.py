"""The embedded store: one SQLite file under the XDG data dir, WAL mode, one open connection.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves a whole batch or none of
it, and two processes on the same file (a running CLI and a ``resume``) queue for the write
lock instead of failing with ``database is locked``. Reads run in short deferred transactions
and see every commit made before they started, from any process.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn, cast

from pydantic_core import from_json
from sqlalchemy import (
    URL,
    Connection,
    Engine,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement

from xclaw import dirs
from xclaw.core.errors import ConfigError
from xclaw.store.base import (
    LEDGER_ORDER,
    Checkpoint,
    EventRecord,
    LedgerEntry,
    RollbackReport,
    SessionRecord,
    SessionState,
    StepRecord,
    Store,
    TranscriptItem,
    WriteBatch,
)
from xclaw.store.schema import (
    checkpoint_row,
    checkpoints,
    copy_latest_checkpoint,
    copy_rows_up_to,
    copy_session_for_fork,
    dumps,
    event_row,
    events,
    find_step,
    item_row,
    items,
    ledger,
    ledger_from_row,
    ledger_row,
    loads_opt,
    migrate,
    session_from_row,
    session_row,
    session_update_params,
    sessions,
    step_from_row,
    step_row,
    steps,
)

BUSY_TIMEOUT_MS = 10_000
_SIDE_EFFECT_RANK = LEDGER_ORDER["started"]
_NAMED = sqlite_dialect(paramstyle="named")


def _sql(stmt: ClauseElement, columns: list[str] | None = None) -> str:
    """Compile once to SQLite SQL with :name parameters, so rows bind straight from dicts."""
    return str(stmt.compile(dialect=_NAMED, column_keys=columns))


def _upsert(table: Any, key: tuple[str, str], **where: Any) -> str:
    stmt = sqlite_insert(table)
    return _sql(
        stmt.on_conflict_do_update(
            index_elements=[table.c[k] for k in key],
            set_={c.name: stmt.excluded[c.name] for c in table.c if c.name not in key},
            **where,
        )
    )


def _ledger_upsert() -> str:
    # An earlier phase arriving late (a replayed barrier) must not undo a later one.
    excluded = sqlite_insert(ledger).excluded
    return _upsert(ledger, ("session_id", "key"), where=ledger.c.phase_rank <= excluded.phase_rank)


# The commit path runs these compiled strings on the driver connection: SQLAlchemy's
# per-statement execution overhead (~40 µs here) is larger than SQLite's own work.
_SQL_INSERT_SESSION = _sql(insert(sessions))
_SQL_INSERT_ITEMS = _sql(insert(items))
_SQL_UPSERT_STEPS = _upsert(steps, ("session_id", "step_id"))
_SQL_UPSERT_LEDGER = _ledger_upsert()
_SQL_INSERT_EVENTS = _sql(insert(events))
_SQL_INSERT_CHECKPOINTS = _sql(insert(checkpoints), [c.name for c in checkpoints.c][1:])
_SQL_LOAD_ITEMS = _sql(
    select(items.c.seq, items.c.step_id, items.c.turn, items.c.payload, items.c.created_at)
    .where(items.c.session_id == bindparam("session_id"))
    .order_by(items.c.seq)
)
_SQL_GET_SESSION = _sql(select(sessions).where(sessions.c.id == bindparam("session_id")))
_SESSION_COLUMNS = tuple(c.name for c in sessions.c)


def _last(column: Any, table: Any) -> Any:
    return (
        select(func.coalesce(func.max(column), literal_column("0")))
        .where(table.c.session_id == bindparam("session_id"))
        .scalar_subquery()
    )


# Every gateway turn reads both: compiled once, run on the driver connection like the above.
_SQL_COUNTERS = _sql(
    select(_last(steps.c.number, steps), _last(items.c.seq, items), _last(events.c.seq, events))
)


@lru_cache(maxsize=64)
def _sql_session_update(keys: tuple[str, ...]) -> str:
    stmt = (
        update(sessions)
        .where(sessions.c.id == bindparam("b_id"))
        .values({k: bindparam(f"b_{k}") for k in keys})
    )
    return _sql(stmt)


def open_store(path: Path | None = None) -> SqliteStore:
    """The store at ``path``, by default ``xclaw.db`` in the XDG data dir."""
    if path is None:
        folder = dirs.data_dir()
        return SqliteStore(folder / "xclaw.db", data_dir=folder)
    return SqliteStore(path)


class SqliteStore(Store):
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

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
            number, turn = find_step(conn, session_id, step_id)
            # Step ids are never handed out twice: the next step continues after the highest.
            highest = conn.execute(
                select(func.max(steps.c.number)).where(steps.c.session_id == session_id)
            ).scalar_one()
            meta = (
                loads_opt(
                    conn.execute(
                        select(sessions.c.meta).where(sessions.c.id == session_id)
                    ).scalar()
                )
                or {}
            )
            meta["step_high_water"] = max(int(meta.get("step_high_water", 0)), int(highest or 0))
            doomed = conn.execute(
                select(ledger).where(ledger.c.session_id == session_id, ledger.c.step_no >= number)
            ).all()
            removed_steps = conn.execute(
                delete(steps).where(steps.c.session_id == session_id, steps.c.number >= number)
            ).rowcount
            removed_items = conn.execute(
                delete(items).where(items.c.session_id == session_id, items.c.step_no >= number)
            ).rowcount
            conn.execute(
                delete(ledger).where(ledger.c.session_id == session_id, ledger.c.step_no >= number)
            )
            # A checkpoint from a later turn describes work that no longer exists.
            conn.execute(
                delete(checkpoints).where(
                    checkpoints.c.session_id == session_id, checkpoints.c.turn > turn
                )
            )
            conn.execute(
                update(sessions)
                .where(sessions.c.id == session_id)
                .values(
                    state="paused",
                    phase="ROLLED_BACK",
                    pending=None,
                    meta=dumps(meta),
                    updated_at=time.time(),
                )
            )
        irreversible = [
            entry
            for entry in map(ledger_from_row, doomed)
            if not entry.read_only and LEDGER_ORDER[entry.phase] >= _SIDE_EFFECT_RANK
        ]
        return RollbackReport(session_id, step_id, removed_steps, removed_items, irreversible)

    def fork(self, session_id: str, step_id: str, new_session_id: str) -> SessionRecord:
        with self._write() as conn:
            number, turn = find_step(conn, session_id, step_id)
            copy_session_for_fork(conn, session_id, step_id, new_session_id, time.time())
            copy_rows_up_to(conn, steps, steps.c.number, session_id, number, new_session_id)
            copy_rows_up_to(conn, items, items.c.step_no, session_id, number, new_session_id)
            copy_rows_up_to(conn, ledger, ledger.c.step_no, session_id, number, new_session_id)
            copy_latest_checkpoint(conn, session_id, turn, new_session_id)
            row = conn.execute(select(sessions).where(sessions.c.id == new_session_id)).one()
        return session_from_row(row)

    # -- reads ------------------------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._lock:  # a lone statement is its own snapshot
            row = self._db.execute(_SQL_GET_SESSION, {"session_id": session_id}).fetchone()
        if row is None:
            return None
        named = SimpleNamespace(**dict(zip(_SESSION_COLUMNS, row, strict=True)))
        return session_from_row(cast(Any, named))

    def list_sessions(
        self,
        *,
        state: SessionState | None = None,
        root: str | None = None,
        text: str | None = None,
        limit: int = 50,
    ) -> list[SessionRecord]:
        query = select(sessions).order_by(sessions.c.created_at.desc(), sessions.c.id.desc())
        if state is not None:
            query = query.where(sessions.c.state == state)
        if root is not None:
            query = query.where(sessions.c.root == root)
        if text:
            pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"
            query = query.where(
                sessions.c.task.ilike(pattern, escape="\\")
                | sessions.c.title.ilike(pattern, escape="\\")
            )
        with self._read() as conn:
            rows = conn.execute(query.limit(limit)).all()
        return [session_from_row(r) for r in rows]

    def list_children(self, session_id: str) -> list[SessionRecord]:
        query = (
            select(sessions)
            .where(sessions.c.parent_session_id == session_id)
            .order_by(sessions.c.created_at, sessions.c.id)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [session_from_row(r) for r in rows]

    def load_items(self, session_id: str) -> list[TranscriptItem]:
        # The resume hot path: one SELECT on the driver connection (a lone statement is its
        # own snapshot); pydantic-core's JSON parser is 2-3x faster here than json.loads.
        with self._lock:
            rows = self._db.execute(_SQL_LOAD_ITEMS, {"session_id": session_id}).fetchall()
        return [
            TranscriptItem(seq, step_id, turn, from_json(payload, cache_strings="keys"), created_at)
            for seq, step_id, turn, payload, created_at in rows
        ]

    def list_steps(self, session_id: str) -> list[StepRecord]:
        query = select(steps).where(steps.c.session_id == session_id).order_by(steps.c.number)
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [step_from_row(r) for r in rows]

    def load_ledger(self, session_id: str) -> list[LedgerEntry]:
        query = (
            select(ledger)
            .where(ledger.c.session_id == session_id)
            .order_by(ledger.c.step_no, ledger.c.turn, ledger.c.key)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [ledger_from_row(r) for r in rows]

    def list_events(self, session_id: str, *, after_seq: int = 0) -> list[EventRecord]:
        c = events.c
        query = (
            select(c.seq, c.type, c.turn, c.payload, c.ts, c.call_id)
            .where(c.session_id == session_id, c.seq > after_seq)
            .order_by(c.seq)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [
            EventRecord(seq, type_, turn, json.loads(payload), ts, call_id)
            for seq, type_, turn, payload, ts, call_id in rows
        ]

    def latest_checkpoint(self, session_id: str) -> Checkpoint | None:
        c = checkpoints.c
        query = (
            select(c.turn, c.created_at, c.goal, c.modified_files, c.verification, c.open_items)
            .where(c.session_id == session_id)
            .order_by(c.turn.desc(), c.id.desc())
            .limit(1)
        )
        with self._read() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        turn, created_at, goal, files, verification, open_items = row
        return Checkpoint(
            turn,
            created_at,
            goal,
            json.loads(files),
            json.loads(verification),
            json.loads(open_items),
        )

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
