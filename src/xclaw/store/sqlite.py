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
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import (
    URL,
    Connection,
    Engine,
    Row,
    Update,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

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
from xclaw.store.schema import checkpoints, events, items, ledger, migrate, sessions, steps

BUSY_TIMEOUT_MS = 10_000
_STEP_ID = re.compile(r"s(\d+)")
_SESSION_FIELDS = frozenset(f.name for f in fields(SessionRecord)) - {"id"}
_JSON_SESSION_FIELDS = frozenset({"meta", "pending"})
_SIDE_EFFECT_RANK = LEDGER_ORDER["started"]

# Statements are immutable: built once, SQLAlchemy caches their compiled form.
_INSERT_SESSION = insert(sessions)
_INSERT_ITEMS = insert(items)
_INSERT_EVENTS = insert(events)
_INSERT_CHECKPOINTS = insert(checkpoints)


def _upsert_steps() -> Any:
    stmt = sqlite_insert(steps)
    keep = {"session_id", "step_id"}
    return stmt.on_conflict_do_update(
        index_elements=[steps.c.session_id, steps.c.step_id],
        set_={c.name: stmt.excluded[c.name] for c in steps.c if c.name not in keep},
    )


def _upsert_ledger() -> Any:
    stmt = sqlite_insert(ledger)
    keep = {"session_id", "key"}
    # An earlier phase arriving late (a replayed barrier) must not undo a later one.
    return stmt.on_conflict_do_update(
        index_elements=[ledger.c.session_id, ledger.c.key],
        set_={c.name: stmt.excluded[c.name] for c in ledger.c if c.name not in keep},
        where=ledger.c.phase_rank <= stmt.excluded.phase_rank,
    )


_UPSERT_STEPS = _upsert_steps()
_UPSERT_LEDGER = _upsert_ledger()


@lru_cache(maxsize=64)
def _session_update(keys: tuple[str, ...]) -> Update:
    return (
        update(sessions)
        .where(sessions.c.id == bindparam("b_id"))
        .values({k: bindparam(f"b_{k}") for k in keys})
    )


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
        self._check_location()
        _make_private_dirs(self.path.parent)
        _create_private_file(self.path)
        self._lock = threading.RLock()  # one connection, so one transaction at a time
        self._begin_sql = "BEGIN"
        self._engine = _make_engine(self.path, self)
        self._conn = self._engine.connect()
        try:
            with self._write() as conn:
                migrate(conn)
        except BaseException:
            self.close()
            raise
        _tighten_sidecars(self.path)

    # -- transactions -----------------------------------------------------------------------

    def begin_sql(self) -> str:
        return self._begin_sql

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self._lock:
            self._check_location()
            self._begin_sql = "BEGIN IMMEDIATE"  # take the write lock now, not mid-way
            try:
                with self._conn.begin():
                    yield self._conn
            finally:
                self._begin_sql = "BEGIN"

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        # A short deferred transaction: one consistent snapshot, released right after.
        with self._lock, self._conn.begin():
            yield self._conn

    def _check_location(self) -> None:
        unsafe = ""
        if self.data_dir.is_symlink():
            unsafe = f"the data folder {self.data_dir} is a symbolic link"
        elif self.path.is_symlink():
            unsafe = f"the database {self.path} is a symbolic link"
        elif not self.path.resolve().is_relative_to(self.data_dir.resolve()):
            unsafe = f"the database {self.path} resolves outside {self.data_dir}"
        if unsafe:
            raise ConfigError(
                f"Refusing to write sessions: {unsafe}.",
                code="STORE_LOCATION_UNSAFE",
                hint="Replace the link with a real folder or file owned by you.",
            )

    def close(self) -> None:
        self._conn.close()
        self._engine.dispose()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -----------------------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        if batch.empty():
            return
        now = time.time()
        sid = batch.session_id
        # Encode everything before taking the write lock: the transaction stays short.
        created = _session_row(batch.create, now) if batch.create else None
        updates = _session_update_params(sid, batch.session_updates, now)
        item_rows = [_item_row(sid, it) for it in batch.items]
        step_rows = [_step_row(sid, st) for st in batch.steps]
        ledger_rows = [_ledger_row(sid, le, now) for le in batch.ledger]
        event_rows = [_event_row(sid, ev) for ev in batch.events]
        checkpoint_rows = [_checkpoint_row(sid, cp) for cp in batch.checkpoints]
        with self._write() as conn:
            if created is not None:
                conn.execute(_INSERT_SESSION, created)
            keys = tuple(k[2:] for k in updates if k != "b_id")
            if conn.execute(_session_update(keys), updates).rowcount != 1:
                raise KeyError(sid)
            for stmt, rows in (
                (_INSERT_ITEMS, item_rows),
                (_UPSERT_STEPS, step_rows),
                (_UPSERT_LEDGER, ledger_rows),
                (_INSERT_EVENTS, event_rows),
                (_INSERT_CHECKPOINTS, checkpoint_rows),
            ):
                if rows:
                    conn.execute(stmt, rows)

    def rollback(self, session_id: str, step_id: str) -> RollbackReport:
        with self._write() as conn:
            number, turn = _find_step(conn, session_id, step_id)
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
                .values(state="paused", phase="ROLLED_BACK", pending=None, updated_at=time.time())
            )
        irreversible = [
            entry
            for entry in map(_ledger_from_row, doomed)
            if not entry.read_only and LEDGER_ORDER[entry.phase] >= _SIDE_EFFECT_RANK
        ]
        return RollbackReport(session_id, step_id, removed_steps, removed_items, irreversible)

    def fork(self, session_id: str, step_id: str, new_session_id: str) -> SessionRecord:
        with self._write() as conn:
            number, turn = _find_step(conn, session_id, step_id)
            now = time.time()
            src = sessions.c
            head = select(
                bindparam("new_id", new_session_id),
                src.root,
                src.task,
                src.model,
                bindparam("f_state", "init"),
                bindparam("f_phase", "FORKED"),
                bindparam("f_created", now),
                bindparam("f_updated", now),
                src.id,
                bindparam("f_step", step_id),
                src.title,
                src.meta,
            ).where(src.id == session_id)
            names = [c.name for c in sessions.c if c.name != "pending"]
            conn.execute(insert(sessions).from_select(names, head))
            _copy_rows(conn, steps, steps.c.number, session_id, number, new_session_id)
            _copy_rows(conn, items, items.c.step_no, session_id, number, new_session_id)
            _copy_rows(conn, ledger, ledger.c.step_no, session_id, number, new_session_id)
            _copy_latest_checkpoint(conn, session_id, turn, new_session_id)
            row = conn.execute(select(sessions).where(sessions.c.id == new_session_id)).one()
        return _session_from_row(row)

    # -- reads ------------------------------------------------------------------------------

    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._read() as conn:
            row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
        return None if row is None else _session_from_row(row)

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
        return [_session_from_row(r) for r in rows]

    def load_items(self, session_id: str) -> list[TranscriptItem]:
        c = items.c
        query = (
            select(c.seq, c.step_id, c.turn, c.payload, c.created_at)
            .where(c.session_id == session_id)
            .order_by(c.seq)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        loads = json.loads
        return [
            TranscriptItem(seq, step_id, turn, loads(payload), created_at)
            for seq, step_id, turn, payload, created_at in rows
        ]

    def list_steps(self, session_id: str) -> list[StepRecord]:
        query = select(steps).where(steps.c.session_id == session_id).order_by(steps.c.number)
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [_step_from_row(r) for r in rows]

    def load_ledger(self, session_id: str) -> list[LedgerEntry]:
        query = (
            select(ledger)
            .where(ledger.c.session_id == session_id)
            .order_by(ledger.c.step_no, ledger.c.turn, ledger.c.key)
        )
        with self._read() as conn:
            rows = conn.execute(query).all()
        return [_ledger_from_row(r) for r in rows]

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
        def last(column: Any, table: Any) -> Any:
            return (
                select(func.coalesce(func.max(column), 0))
                .where(table.c.session_id == session_id)
                .scalar_subquery()
            )

        query = select(
            last(steps.c.number, steps), last(items.c.seq, items), last(events.c.seq, events)
        )
        with self._read() as conn:
            step_no, item_seq, event_seq = conn.execute(query).one()
        return int(step_no), int(item_seq), int(event_seq)


# -- engine and files --------------------------------------------------------------------------


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
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql(store.begin_sql())

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


# -- rollback / fork helpers -------------------------------------------------------------------


def _find_step(conn: Connection, session_id: str, step_id: str) -> tuple[int, int]:
    row = conn.execute(
        select(steps.c.number, steps.c.turn).where(
            steps.c.session_id == session_id, steps.c.step_id == step_id
        )
    ).first()
    if row is None:
        raise KeyError(f"{session_id}/{step_id}")
    return int(row.number), int(row.turn)


def _copy_rows(
    conn: Connection, table: Any, step_col: Any, session_id: str, number: int, new_id: str
) -> None:
    """Copy a session's rows up to step ``number`` as-is (JSON text included) to ``new_id``."""
    rest = [c for c in table.c if c.name != "session_id"]
    source = select(bindparam("new_id", new_id), *rest).where(
        table.c.session_id == session_id, step_col <= number
    )
    conn.execute(insert(table).from_select(["session_id", *(c.name for c in rest)], source))


def _copy_latest_checkpoint(conn: Connection, session_id: str, turn: int, new_id: str) -> None:
    c = checkpoints.c
    rest = [c.turn, c.created_at, c.goal, c.modified_files, c.verification, c.open_items]
    source = (
        select(bindparam("new_id", new_id), *rest)
        .where(c.session_id == session_id, c.turn <= turn)
        .order_by(c.turn.desc(), c.id.desc())
        .limit(1)
    )
    names = ["session_id", *(col.name for col in rest)]
    conn.execute(insert(checkpoints).from_select(names, source))
