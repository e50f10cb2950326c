"""What both SQL stores share: the statements they run and how their rows become records.

Backend-neutral SQLAlchemy Core only. Each store compiles the statements for its own driver
(``SqliteStore`` on sqlite3, ``PostgresStore`` on psycopg) and keeps its own transactions,
locks and fast paths; ``SqlStore`` gives both the same reads over their own ``_all``.
"""

from __future__ import annotations

import json
import re
import time
from abc import abstractmethod
from types import SimpleNamespace
from typing import Any, Self, cast

from sqlalchemy import (
    Connection,
    Row,
    Select,
    Update,
    bindparam,
    delete,
    func,
    literal_column,
    select,
    update,
)

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
)
from xclaw.store.schema import (
    checkpoints,
    copy_latest_checkpoint,
    copy_rows_up_to,
    copy_session_for_fork,
    dumps,
    events,
    find_step,
    items,
    ledger,
    ledger_from_row,
    loads_opt,
    session_from_row,
    sessions,
    step_from_row,
    steps,
)

_SIDE_EFFECT_RANK = LEDGER_ORDER["started"]
SESSION_COLUMNS = tuple(c.name for c in sessions.c)

# -- statements the stores compile once for their driver connection ----------------------------

LOAD_ITEMS = (
    select(items.c.seq, items.c.step_id, items.c.turn, items.c.payload, items.c.created_at)
    .where(items.c.session_id == bindparam("session_id"))
    .order_by(items.c.seq)
)
GET_SESSION = select(sessions).where(sessions.c.id == bindparam("session_id"))


def _last(column: Any, table: Any) -> Any:
    return (
        select(func.coalesce(func.max(column), literal_column("0")))
        .where(table.c.session_id == bindparam("session_id"))
        .scalar_subquery()
    )


# The highest step number, item seq and event seq of one session (0 where there is none).
COUNTERS = select(
    _last(steps.c.number, steps), _last(items.c.seq, items), _last(events.c.seq, events)
)


def upsert(dialect_insert: Any, table: Any, key: tuple[str, str], **where: Any) -> Any:
    """``INSERT … ON CONFLICT (key) DO UPDATE`` every other column, with the dialect's
    ``insert`` (SQLite's and PostgreSQL's spell the same statement)."""
    stmt = dialect_insert(table)
    return stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in key],
        set_={c.name: stmt.excluded[c.name] for c in table.c if c.name not in key},
        **where,
    )


def ledger_upsert(dialect_insert: Any) -> Any:
    # An earlier phase arriving late (a replayed barrier) must not undo a later one.
    later = ledger.c.phase_rank <= dialect_insert(ledger).excluded.phase_rank
    return upsert(dialect_insert, ledger, ("session_id", "key"), where=later)


def session_update(keys: tuple[str, ...]) -> Update:
    """The UPDATE for ``session_update_params``: ``b_id`` and one ``b_<key>`` per column
    (each store caches it compiled)."""
    return (
        update(sessions)
        .where(sessions.c.id == bindparam("b_id"))
        .values({k: bindparam(f"b_{k}") for k in keys})
    )


def session_from_tuple(row: tuple[Any, ...]) -> SessionRecord:
    """A ``sessions`` row fetched on a driver connection (a plain tuple) as a record."""
    named = SimpleNamespace(**dict(zip(SESSION_COLUMNS, row, strict=True)))
    return session_from_row(cast(Any, named))


# -- rollback and fork, inside the caller's write transaction ----------------------------------


def delete_from_step(
    conn: Connection, session_id: str, step_id: str, *, lock: bool = False
) -> tuple[int, int, list[Row[Any]]]:
    """Remove step ``step_id`` and everything after it; the session is left paused in
    ``ROLLED_BACK``. ``lock``: read the session row ``FOR UPDATE`` first. Returns the steps
    and items removed and the removed ledger rows."""
    meta_query = select(sessions.c.meta).where(sessions.c.id == session_id)
    meta_text = conn.execute(meta_query.with_for_update() if lock else meta_query).scalar()
    number, turn = find_step(conn, session_id, step_id)
    # Step ids are never handed out twice: the next step continues after the highest.
    highest = conn.execute(
        select(func.max(steps.c.number)).where(steps.c.session_id == session_id)
    ).scalar_one()
    meta = loads_opt(meta_text) or {}
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
        delete(checkpoints).where(checkpoints.c.session_id == session_id, checkpoints.c.turn > turn)
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
    return removed_steps, removed_items, list(doomed)


def rollback_report(
    session_id: str,
    step_id: str,
    removed: tuple[int, int, list[Row[Any]]],
) -> RollbackReport:
    """The report of ``delete_from_step``: the side effects that had started cannot be undone."""
    removed_steps, removed_items, doomed = removed
    irreversible = [
        entry
        for entry in map(ledger_from_row, doomed)
        if not entry.read_only and LEDGER_ORDER[entry.phase] >= _SIDE_EFFECT_RANK
    ]
    return RollbackReport(session_id, step_id, removed_steps, removed_items, irreversible)


def copy_for_fork(conn: Connection, session_id: str, step_id: str, new_session_id: str) -> Row[Any]:
    """A new session ``new_session_id`` holding ``session_id`` up to and including
    ``step_id`` (and its latest checkpoint up to that turn); returns the new session row."""
    number, turn = find_step(conn, session_id, step_id)
    copy_session_for_fork(conn, session_id, step_id, new_session_id, time.time())
    copy_rows_up_to(conn, steps, steps.c.number, session_id, number, new_session_id)
    copy_rows_up_to(conn, items, items.c.step_no, session_id, number, new_session_id)
    copy_rows_up_to(conn, ledger, ledger.c.step_no, session_id, number, new_session_id)
    copy_latest_checkpoint(conn, session_id, turn, new_session_id)
    return conn.execute(select(sessions).where(sessions.c.id == new_session_id)).one()


# -- the methods both stores share -------------------------------------------------------------


class SqlStore(Store):
    """What both SQL stores do the same way: the reads (a store supplies ``_all``) and
    ``with store:`` closing it."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def _all(self, query: Select[Any]) -> list[Any]:
        """The rows of ``query``, read in one consistent snapshot."""

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
        return [session_from_row(r) for r in self._all(query.limit(limit))]

    def list_children(self, session_id: str) -> list[SessionRecord]:
        query = (
            select(sessions)
            .where(sessions.c.parent_session_id == session_id)
            .order_by(sessions.c.created_at, sessions.c.id)
        )
        return [session_from_row(r) for r in self._all(query)]

    def list_steps(self, session_id: str) -> list[StepRecord]:
        query = select(steps).where(steps.c.session_id == session_id).order_by(steps.c.number)
        return [step_from_row(r) for r in self._all(query)]

    def load_ledger(self, session_id: str) -> list[LedgerEntry]:
        query = (
            select(ledger)
            .where(ledger.c.session_id == session_id)
            .order_by(ledger.c.step_no, ledger.c.turn, ledger.c.key)
        )
        return [ledger_from_row(r) for r in self._all(query)]

    def list_events(self, session_id: str, *, after_seq: int = 0) -> list[EventRecord]:
        c = events.c
        query = (
            select(c.seq, c.type, c.turn, c.payload, c.ts, c.call_id)
            .where(c.session_id == session_id, c.seq > after_seq)
            .order_by(c.seq)
        )
        return [
            EventRecord(seq, type_, turn, json.loads(payload), ts, call_id)
            for seq, type_, turn, payload, ts, call_id in self._all(query)
        ]

    def latest_checkpoint(self, session_id: str) -> Checkpoint | None:
        c = checkpoints.c
        query = (
            select(c.turn, c.created_at, c.goal, c.modified_files, c.verification, c.open_items)
            .where(c.session_id == session_id)
            .order_by(c.turn.desc(), c.id.desc())
            .limit(1)
        )
        rows = self._all(query)
        if not rows:
            return None
        turn, created_at, goal, files, verification, open_items = rows[0]
        return Checkpoint(
            turn,
            created_at,
            goal,
            json.loads(files),
            json.loads(verification),
            json.loads(open_items),
        )
