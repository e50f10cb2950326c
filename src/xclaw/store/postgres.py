"""The store on PostgreSQL: the schema and migrations of ``schema.py``, several processes and
gateway instances on one database.

Driver: psycopg 3 (``postgresql+psycopg``), not asyncpg — the ``Store`` interface is
synchronous, and a sync driver avoids running an event loop inside every store call.

Concurrency: every write transaction first locks its session's row (``SELECT … FOR UPDATE``,
or the ``UPDATE`` of that row), so the batches and rollbacks of one session are serialised as
SQLite's single writer serialised them (a fork holds the source's row in share mode: commits
wait for the copy), while different sessions write in parallel. Statements run at READ
COMMITTED: after the lock, each one sees every earlier commit. A batch is one multi-row
statement per table, pipelined: a few round trips per commit whatever its size.
Migrations run under a transaction-level advisory lock, so processes opening a fresh database
together apply each version once.

A dropped connection (server restart, network cut) is retried once on a new connection when
the transaction had not reached COMMIT (the server rolled it back, so nothing landed); if
the database cannot be reached, or COMMIT itself was cut off, the caller gets a
``STORE_UNAVAILABLE`` error that says so. The password of the URL never appears in messages.
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from typing import Any, TypeVar, cast

import psycopg
from sqlalchemy import (
    URL,
    Connection,
    Select,
    bindparam,
    create_engine,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import dialect as pg_dialect
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, ProgrammingError
from sqlalchemy.sql import ClauseElement

from xclaw.core.errors import ConfigError
from xclaw.redact import register_secret
from xclaw.store import queries
from xclaw.store.base import RollbackReport, SessionRecord, TranscriptItem, WriteBatch
from xclaw.store.schema import (
    MIGRATIONS,
    checkpoint_row,
    checkpoints,
    event_row,
    events,
    item_row,
    items,
    ledger_row,
    migrate,
    schema_version,
    session_from_row,
    session_row,
    session_update_params,
    sessions,
    step_row,
    steps,
)

T = TypeVar("T")

_DIALECT = pg_dialect(paramstyle="pyformat")  # type: ignore[no-untyped-call]  # %(name)s
_MIGRATION_LOCK = 0x78636C6177  # "xclaw": the advisory lock key held while migrating
CONNECT_TIMEOUT_S = 10
_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def _sql(stmt: ClauseElement, columns: list[str] | None = None) -> str:
    """Compile once to PostgreSQL SQL with %(name)s parameters, bound straight from dicts."""
    return str(stmt.compile(dialect=_DIALECT, column_keys=columns))


# The commit path runs these on the psycopg connection, like SqliteStore does on sqlite3:
# SQLAlchemy's per-statement overhead is comparable to a round trip on a local socket.
_SQL_INSERT_SESSION = _sql(insert(sessions))
_SQL_LOCK_SESSION = _sql(
    select(sessions.c.id).where(sessions.c.id == bindparam("session_id")).with_for_update()
)
_SQL_INSERT_ITEMS = _sql(insert(items))
_SQL_UPSERT_STEPS = _sql(queries.upsert(pg_insert, steps, ("session_id", "step_id")))
_SQL_UPSERT_LEDGER = _sql(queries.ledger_upsert(pg_insert))
_SQL_INSERT_EVENTS = _sql(insert(events))
_SQL_INSERT_CHECKPOINTS = _sql(insert(checkpoints), [c.name for c in checkpoints.c][1:])
_SQL_LOAD_ITEMS = _sql(queries.LOAD_ITEMS)
_SQL_GET_SESSION = _sql(queries.GET_SESSION)
_SQL_COUNTERS = _sql(queries.COUNTERS)


_PARAM = re.compile(r"%\((\w+)\)s")
_ROW = re.compile(r"\((?:%\(\w+\)s(?:::\w+)?(?:, )?)+\)")  # (%(a)s::VARCHAR, %(b)s)
_CHUNK_ROWS = 500  # rows per statement: well under PostgreSQL's 65,535 parameters


@lru_cache(maxsize=256)
def _multirow(sql: str, n: int) -> str:
    """``sql`` (one ``VALUES (...)`` row) for ``n`` rows: one statement instead of ``n``,
    parameters suffixed ``_0``, ``_1`` …; a RETURNING clause is dropped (nothing reads it)."""
    head, _, rest = sql.partition(" VALUES ")
    found = _ROW.match(rest)
    if found is None:
        raise ValueError(f"not a one-row INSERT: {sql[:60]}")
    row, tail = found.group(0), rest[found.end() :].partition(" RETURNING ")[0]
    rows = ", ".join(_PARAM.sub(rf"%(\1_{i})s", row) for i in range(n))
    return f"{head} VALUES {rows}{tail}"


def _multirow_params(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"{k}_{i}": v for i, row in enumerate(rows) for k, v in row.items()}


def _last_per_key(rows: list[dict[str, Any]], key: str, rank: str | None) -> list[dict[str, Any]]:
    """What applying the upserts one by one leaves: per key the last row (with ``rank``: the
    last among the highest ranks). One multi-row upsert may not touch a row twice."""
    kept: dict[Any, dict[str, Any]] = {}
    for row in rows:
        old = kept.get(row[key])
        if old is None or rank is None or old[rank] <= row[rank]:
            kept[row[key]] = row
    return list(kept.values())


@lru_cache(maxsize=64)
def _sql_session_update(keys: tuple[str, ...]) -> str:
    return _sql(queries.session_update(keys))


def parse_database_url(url: str) -> URL:
    """A ``postgresql://`` URL as SQLAlchemy's psycopg URL; the password becomes a secret
    that ``redact`` masks everywhere. Refuses other schemes and drivers."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(
            "The database URL is not a URL.",
            code="STORE_URL_INVALID",
            hint="Use postgresql://user:password@host:5432/dbname.",
        ) from None
    if parsed.password:
        register_secret(str(parsed.password))
    if parsed.drivername not in _SCHEMES:
        raise ConfigError(
            f"The database URL {redacted_url(parsed)} is not a PostgreSQL URL.",
            code="STORE_URL_INVALID",
            hint="Use postgresql://user:password@host:5432/dbname (or unset it for SQLite).",
        )
    if not parsed.database:
        raise ConfigError(
            f"The database URL {redacted_url(parsed)} names no database.",
            code="STORE_URL_INVALID",
            hint="Add the database name: postgresql://user@host:5432/dbname.",
        )
    return parsed.set(drivername="postgresql+psycopg")


def redacted_url(url: URL | str) -> str:
    """The URL for messages: the password masked."""
    parsed = make_url(url) if isinstance(url, str) else url
    return parsed.render_as_string(hide_password=True)


class PostgresStore(queries.SqlStore):
    """``Store`` on a PostgreSQL database named by ``url`` (``postgresql://…``)."""

    def __init__(self, url: str | URL, *, pool_size: int = 2) -> None:
        raw = url if isinstance(url, str) else url.render_as_string(hide_password=False)
        self.url = parse_database_url(raw)
        self.shown_url = redacted_url(self.url)
        self._engine = create_engine(
            self.url,
            pool_size=pool_size,
            max_overflow=8,
            pool_reset_on_return="rollback",
            connect_args={"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "xclaw"},
            hide_parameters=True,  # statement parameters hold transcripts: keep them out of errors
        )
        # Lone statements need no transaction: one round trip, no BEGIN/ROLLBACK around it.
        self._autocommit = self._engine.execution_options(isolation_level="AUTOCOMMIT")
        self._local = threading.local()
        # A store dropped without close() (some commands open one per call) still closes its
        # connections instead of leaving them to the garbage collector.
        self._finalizer = weakref.finalize(self, self._engine.dispose)
        try:
            self._retrying(self._migrate)
        except BaseException:
            self._engine.dispose()
            raise

    # -- connections and transactions -------------------------------------------------------

    def _migrate(self) -> None:
        # Usually the database is current: one lone SELECT, no lock, no catalog queries.
        with self._autocommit.connect() as conn:
            try:
                found = conn.execute(select(func.max(schema_version.c.version))).scalar()
            except ProgrammingError:  # no schema_version table yet: a fresh database
                found = None
        if found is not None and found == max(MIGRATIONS):
            return
        with self._engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            migrate(conn)

    def _retrying(self, work: Callable[[], T]) -> T:
        """Run ``work`` (one whole transaction); once more on a fresh connection if the
        connection dropped before COMMIT was sent."""
        for attempt in (1, 2):
            self._local.committing = False
            try:
                return work()
            except DBAPIError as err:
                if not err.connection_invalidated and not _is_connection_error(err):
                    raise
                if attempt == 2 or self._local.committing:
                    raise self._unavailable(err, committing=self._local.committing) from err
                # The pool dropped the dead connection; the next checkout reconnects.
                self._engine.dispose(close=False)
        raise AssertionError("unreachable")

    def _unavailable(self, err: DBAPIError, *, committing: bool) -> ConfigError:
        reason = str(err.orig).strip().splitlines()[0] if err.orig else str(err)
        if committing:
            return ConfigError(
                f"The connection to the session database {self.shown_url} dropped during "
                f"COMMIT ({reason}); the last batch may or may not have been saved.",
                code="STORE_UNAVAILABLE",
                hint="Check the database server, then `xclaw resume` the session: the "
                "ledger settles whatever was recorded.",
            )
        return ConfigError(
            f"Cannot reach the session database {self.shown_url}: {reason}.",
            code="STORE_UNAVAILABLE",
            hint="Check that the PostgreSQL server is running and the URL "
            "(XCLAW_DATABASE_URL or store.url in your user config) is right.",
        )

    @contextmanager
    def _transaction(self, *, write: bool, lone: bool = False) -> Iterator[Connection]:
        """A transaction (``lone``: a connection in autocommit, for one statement)."""
        with (self._autocommit if lone else self._engine).connect() as conn:
            try:
                with conn.begin() as tx:
                    yield conn
                    if write:
                        self._local.committing = True
                        tx.commit()
            except psycopg.Error as err:  # from the fast paths on the driver connection
                driver = conn.connection.driver_connection
                dead = driver is None or bool(driver.closed)
                if dead:
                    conn.invalidate()
                raise DBAPIError.instance(
                    None,
                    None,
                    err,
                    psycopg.Error,
                    hide_parameters=True,
                    dialect=_DIALECT,
                    connection_invalidated=dead,
                ) from err

    def _write(self) -> AbstractContextManager[Connection]:
        return self._transaction(write=True)

    def _read(self) -> AbstractContextManager[Connection]:
        return self._transaction(write=False)

    def close(self) -> None:
        self._finalizer()

    # -- writes -----------------------------------------------------------------------------

    def commit(self, batch: WriteBatch) -> None:
        """One transaction holding the session's row lock; on any error nothing lands.

        Raises ``sqlalchemy.exc.IntegrityError`` (a duplicate item/event seq, rows for a
        session that does not exist), ``KeyError`` (``session_updates`` for a missing
        session), ``ValueError`` (a malformed step id, unknown field or phase) and
        ``ConfigError`` (``STORE_UNAVAILABLE``).
        """
        if batch.empty():
            return
        now = time.time()
        sid = batch.session_id
        created = session_row(batch.create, now) if batch.create is not None else None
        session_change: tuple[str, dict[str, Any]] | None = None
        if batch.session_updates:
            params = session_update_params(sid, batch.session_updates, now)
            keys = tuple(k[2:] for k in params if k != "b_id")
            session_change = (_sql_session_update(keys), params)
        steps_rows = [step_row(sid, st) for st in batch.steps]
        ledger_rows = [ledger_row(sid, le, now) for le in batch.ledger]
        writes = [
            (_multirow(sql, len(chunk)), _multirow_params(chunk))
            for sql, rows in (
                (_SQL_INSERT_ITEMS, [item_row(sid, it) for it in batch.items]),
                (_SQL_UPSERT_STEPS, _last_per_key(steps_rows, "step_id", None)),
                (_SQL_UPSERT_LEDGER, _last_per_key(ledger_rows, "key", "phase_rank")),
                (_SQL_INSERT_EVENTS, [event_row(sid, ev) for ev in batch.events]),
                (_SQL_INSERT_CHECKPOINTS, [checkpoint_row(sid, cp) for cp in batch.checkpoints]),
            )
            for chunk in (rows[i : i + _CHUNK_ROWS] for i in range(0, len(rows), _CHUNK_ROWS))
        ]

        def work() -> None:
            with self._write() as conn:
                driver = _driver(conn)
                with driver.cursor() as cur:
                    if created is not None:
                        cur.execute(_SQL_INSERT_SESSION, created)
                    if session_change is not None:
                        # The UPDATE takes the row lock (and says whether the session exists).
                        cur.execute(*session_change)
                        if cur.rowcount != 1:
                            raise KeyError(sid)
                    elif created is None:
                        cur.execute(_SQL_LOCK_SESSION, {"session_id": sid})
                    # One multi-row statement per table, all sent together in one pipeline.
                    with driver.pipeline():
                        for sql, params in writes:
                            cur.execute(sql, params)

        self._retrying(work)

    def rollback(self, session_id: str, step_id: str) -> RollbackReport:
        def work() -> tuple[int, int, list[Any]]:
            with self._write() as conn:
                return queries.delete_from_step(conn, session_id, step_id, lock=True)

        return queries.rollback_report(session_id, step_id, self._retrying(work))

    def fork(self, session_id: str, step_id: str, new_session_id: str) -> SessionRecord:
        def work() -> SessionRecord:
            with self._write() as conn:
                # Commits to the source wait until the copy is taken (other forks need not).
                conn.execute(
                    select(sessions.c.id)
                    .where(sessions.c.id == session_id)
                    .with_for_update(read=True)
                )
                row = queries.copy_for_fork(conn, session_id, step_id, new_session_id)
            return session_from_row(row)

        return self._retrying(work)

    # -- reads ------------------------------------------------------------------------------

    def _fetch(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """One statement on the driver connection (a lone statement is its own snapshot)."""

        def work() -> list[tuple[Any, ...]]:
            with self._transaction(write=False, lone=True) as conn:
                cur = _driver(conn).cursor()
                try:
                    cur.execute(sql, params)
                    return list(cur.fetchall())
                finally:
                    cur.close()

        return self._retrying(work)

    def _all(self, query: Select[Any]) -> list[Any]:
        def work() -> list[Any]:
            with self._transaction(write=False, lone=True) as conn:
                return list(conn.execute(query).all())

        return self._retrying(work)

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._fetch(_SQL_GET_SESSION, {"session_id": session_id})
        return queries.session_from_tuple(rows[0]) if rows else None

    def load_items(self, session_id: str) -> list[TranscriptItem]:
        rows = self._fetch(_SQL_LOAD_ITEMS, {"session_id": session_id})
        return [
            TranscriptItem(seq, step_id, turn, json.loads(payload), created_at)
            for seq, step_id, turn, payload, created_at in rows
        ]

    def counters(self, session_id: str) -> tuple[int, int, int]:
        step_no, item_seq, event_seq = self._fetch(_SQL_COUNTERS, {"session_id": session_id})[0]
        return int(step_no), int(item_seq), int(event_seq)


def _driver(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under a checked-out SQLAlchemy one."""
    driver = conn.connection.driver_connection
    if driver is None:  # only after invalidate(), never inside a live transaction
        raise RuntimeError("the database connection was invalidated")
    return cast("psycopg.Connection[Any]", driver)


def _is_connection_error(err: DBAPIError) -> bool:
    orig = err.orig
    return isinstance(orig, psycopg.OperationalError) and (
        getattr(orig, "sqlstate", None) is None or str(orig.sqlstate).startswith(("08", "57P"))
    )
