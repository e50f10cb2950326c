"""The store's tables in SQLAlchemy Core, the versioned migrations that create them, how
records map to rows, and the portable queries behind fork — shared by every SQL backend.

Portable types only (String, Text, Integer, Float, Boolean) and JSON kept as TEXT, so the same
schema runs on SQLite now and PostgreSQL later. Step numbers (``s0042`` → 42) are stored next
to the ids so rollback and fork are plain range queries.

The hot tables have no secondary indexes: every index is one more page written per commit,
and the reads that would use one (rollback, fork, step order) scan a single session's rows
through the primary key prefix anyway.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Row,
    String,
    Table,
    Text,
    bindparam,
    func,
    insert,
    select,
)

from xclaw.core.errors import ConfigError
from xclaw.store.base import (
    LEDGER_ORDER,
    Checkpoint,
    EventRecord,
    LedgerEntry,
    SessionRecord,
    StepRecord,
    TranscriptItem,
)

metadata = MetaData()


def _session_fk() -> Column[str]:
    return Column(
        "session_id", String, ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )


sessions = Table(
    "sessions",
    metadata,
    Column("id", String, primary_key=True),
    Column("root", Text, nullable=False),
    Column("task", Text, nullable=False),
    Column("model", String, nullable=False),
    Column("state", String, nullable=False),
    Column("phase", String, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("parent_id", String, ForeignKey("sessions.id", ondelete="SET NULL")),
    Column("fork_step", String),
    Column("title", Text, nullable=False),
    Column("meta", Text, nullable=False),  # JSON object
    Column("pending", Text),  # JSON object or NULL
    # Version 2: multi-agent child sessions (the parent's id, and "user" or "agent").
    Column("parent_session_id", String),
    Column("caller", String),
    Index("ix_sessions_created", "created_at"),
    Index("ix_sessions_state_created", "state", "created_at"),
    Index("ix_sessions_root_created", "root", "created_at"),
    Index("ix_sessions_parent_session", "parent_session_id"),
)

items = Table(
    "items",
    metadata,
    _session_fk(),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("step_id", String, nullable=False),
    Column("step_no", Integer, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("payload", Text, nullable=False),  # JSON: one Responses item
    Column("created_at", Float, nullable=False),
)

steps = Table(
    "steps",
    metadata,
    _session_fk(),
    Column("step_id", String, primary_key=True),
    Column("number", Integer, nullable=False),
    Column("kind", String, nullable=False),
    Column("name", String, nullable=False),
    Column("status", String, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("parent_step_id", String),
    Column("ended_at", Float),
    Column("input", Text),  # JSON or NULL
    Column("output", Text),  # JSON or NULL
    Column("error", Text),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
)

ledger = Table(
    "ledger",
    metadata,
    _session_fk(),
    Column("key", String, primary_key=True),
    Column("turn", Integer, nullable=False),
    Column("call_id", String, nullable=False),
    Column("name", String, nullable=False),
    Column("arguments", Text, nullable=False),  # JSON object
    Column("read_only", Boolean, nullable=False),
    Column("phase", String, nullable=False),
    Column("phase_rank", Integer, nullable=False),  # LEDGER_ORDER[phase]: upserts never go back
    Column("step_id", String, nullable=False),
    Column("step_no", Integer, nullable=False),
    Column("risk", String, nullable=False),
    Column("result", Text),  # JSON or NULL
    Column("updated_at", Float, nullable=False),
)

events = Table(
    "events",
    metadata,
    _session_fk(),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("type", String, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("call_id", String),
    Column("payload", Text, nullable=False),  # JSON object
    Column("ts", Float, nullable=False),
    sqlite_with_rowid=False,  # small append-only rows: one b-tree, one page per commit
)

checkpoints = Table(
    "checkpoints",
    metadata,
    # A surrogate key: several checkpoints may share a turn; the newest row wins.
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String, ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("goal", Text, nullable=False),
    Column("modified_files", Text, nullable=False),  # JSON list
    Column("verification", Text, nullable=False),  # JSON list
    Column("open_items", Text, nullable=False),  # JSON list
    Index("ix_checkpoints_session_turn", "session_id", "turn", "id"),
)

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", Float, nullable=False),
)

DATA_TABLES = (sessions, items, steps, ledger, events, checkpoints)


# Version 1's sessions table, frozen: a fresh database replays v1 and then every later step.
_v1_metadata = MetaData()
_v1_sessions = Table(
    "sessions",
    _v1_metadata,
    Column("id", String, primary_key=True),
    Column("root", Text, nullable=False),
    Column("task", Text, nullable=False),
    Column("model", String, nullable=False),
    Column("state", String, nullable=False),
    Column("phase", String, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("parent_id", String, ForeignKey("sessions.id", ondelete="SET NULL")),
    Column("fork_step", String),
    Column("title", Text, nullable=False),
    Column("meta", Text, nullable=False),
    Column("pending", Text),
    Index("ix_sessions_created", "created_at"),
    Index("ix_sessions_state_created", "state", "created_at"),
    Index("ix_sessions_root_created", "root", "created_at"),
)


def _v1_create_tables(conn: Connection) -> None:
    # The v1 sessions table is frozen above; the other tables have not changed since v1.
    # When a later version changes one of them, freeze its v1 definition the same way.
    _v1_sessions.create(conn)
    metadata.create_all(conn, tables=[t for t in DATA_TABLES if t is not sessions])


def _v2_child_sessions(conn: Connection) -> None:
    """Multi-agent children: ``parent_session_id`` and ``caller`` on sessions, indexed by
    parent (``ALTER TABLE ... ADD COLUMN`` is the same on SQLite and PostgreSQL)."""
    conn.exec_driver_sql("ALTER TABLE sessions ADD COLUMN parent_session_id VARCHAR")
    conn.exec_driver_sql("ALTER TABLE sessions ADD COLUMN caller VARCHAR")
    index = next(i for i in sessions.indexes if i.name == "ix_sessions_parent_session")
    index.create(conn)


def _v3_steps_by_number(conn: Connection) -> None:
    """Each gateway turn reads a session's highest step number (``queries.COUNTERS``): with
    this index one seek, instead of a visit to every step of the session, a cost that grew
    with every turn. Not in the table's metadata, so v1 stays as it was released;
    the statement is the same on SQLite and PostgreSQL."""
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS ix_steps_session_number ON steps (session_id, number)"
    )


Migration = Callable[[Connection], None]

# Applied in key order; never edit a released entry, add the next version instead.
MIGRATIONS: dict[int, Migration] = {
    1: _v1_create_tables,
    2: _v2_child_sessions,
    3: _v3_steps_by_number,
}

CURRENT_VERSION = max(MIGRATIONS)


def current_version(conn: Connection) -> int:
    """The version recorded in the database, 0 for a fresh one."""
    schema_version.create(conn, checkfirst=True)
    found = conn.execute(select(func.max(schema_version.c.version))).scalar()
    return int(found or 0)


def migrate(conn: Connection, *, known: dict[int, Migration] | None = None) -> int:
    """Bring the database to the newest known version inside the caller's transaction.

    Returns the version now recorded. A database written by a newer xclaw is refused rather
    than guessed at.
    """
    steps_by_version = MIGRATIONS if known is None else known
    newest = max(steps_by_version)
    found = current_version(conn)
    if found > newest:
        raise ConfigError(
            f"The session database is at schema version {found}, newer than this xclaw "
            f"understands ({newest}).",
            code="STORE_VERSION_TOO_NEW",
            hint="Upgrade xclaw, or point XDG_DATA_HOME at another folder.",
        )
    for version in sorted(v for v in steps_by_version if v > found):
        steps_by_version[version](conn)
        conn.execute(insert(schema_version).values(version=version, applied_at=time.time()))
    return max(found, newest)


# -- records ↔ rows: JSON columns are TEXT (json.dumps, ensure_ascii=False) -----------------


_STEP_ID = re.compile(r"s(\d+)")
_SESSION_FIELDS = frozenset(f.name for f in fields(SessionRecord)) - {"id"}
_JSON_SESSION_FIELDS = frozenset({"meta", "pending"})


# json.dumps builds a new encoder per call when given any option; reuse one instead.
dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False).encode


def dumps_opt(value: Any) -> str | None:
    return None if value is None else dumps(value)


def loads_opt(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def step_number(step_id: str) -> int:
    match = _STEP_ID.fullmatch(step_id)
    if match is None:
        raise ValueError(f"step id {step_id!r} is not of the form s0001")
    return int(match.group(1))


def session_row(rec: SessionRecord, now: float) -> dict[str, Any]:
    return {
        "id": rec.id,
        "root": rec.root,
        "task": rec.task,
        "model": rec.model,
        "state": rec.state,
        "phase": rec.phase,
        "created_at": rec.created_at or now,
        "updated_at": rec.updated_at or rec.created_at or now,
        "parent_id": rec.parent_id,
        "fork_step": rec.fork_step,
        "title": rec.title,
        "meta": dumps(rec.meta),
        "pending": dumps_opt(rec.pending),
        "parent_session_id": rec.parent_session_id,
        "caller": rec.caller,
    }


def session_update_params(sid: str, changes: dict[str, Any], now: float) -> dict[str, Any]:
    unknown = set(changes) - _SESSION_FIELDS
    if unknown:
        raise ValueError(f"not session fields: {sorted(unknown)}")
    params: dict[str, Any] = {"b_id": sid}
    for key, value in changes.items():
        if key in _JSON_SESSION_FIELDS:
            value = dumps(value) if key == "meta" else dumps_opt(value)
        params[f"b_{key}"] = value
    params.setdefault("b_updated_at", now)
    return params


def session_from_row(row: Row[Any]) -> SessionRecord:
    return SessionRecord(
        id=row.id,
        root=row.root,
        task=row.task,
        model=row.model,
        state=row.state,
        phase=row.phase,
        created_at=row.created_at,
        updated_at=row.updated_at,
        parent_id=row.parent_id,
        fork_step=row.fork_step,
        title=row.title,
        meta=json.loads(row.meta),
        pending=loads_opt(row.pending),
        parent_session_id=row.parent_session_id,
        caller=row.caller,
    )


def item_row(sid: str, it: TranscriptItem) -> dict[str, Any]:
    return {
        "session_id": sid,
        "seq": it.seq,
        "step_id": it.step_id,
        "step_no": step_number(it.step_id),
        "turn": it.turn,
        "payload": dumps(it.payload),
        "created_at": it.created_at,
    }


def step_row(sid: str, st: StepRecord) -> dict[str, Any]:
    return {
        "session_id": sid,
        "step_id": st.step_id,
        "number": step_number(st.step_id),
        "kind": st.kind,
        "name": st.name,
        "status": st.status,
        "turn": st.turn,
        "started_at": st.started_at,
        "parent_step_id": st.parent_step_id,
        "ended_at": st.ended_at,
        "input": dumps_opt(st.input),
        "output": dumps_opt(st.output),
        "error": st.error,
        "tokens_in": st.tokens_in,
        "tokens_out": st.tokens_out,
    }


def step_from_row(row: Row[Any]) -> StepRecord:
    return StepRecord(
        step_id=row.step_id,
        kind=row.kind,
        name=row.name,
        status=row.status,
        turn=row.turn,
        started_at=row.started_at,
        parent_step_id=row.parent_step_id,
        ended_at=row.ended_at,
        input=loads_opt(row.input),
        output=loads_opt(row.output),
        error=row.error,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
    )


def ledger_row(sid: str, le: LedgerEntry, now: float) -> dict[str, Any]:
    rank = LEDGER_ORDER.get(le.phase)
    if rank is None:
        raise ValueError(f"unknown ledger phase {le.phase!r}")
    return {
        "session_id": sid,
        "key": le.key,
        "turn": le.turn,
        "call_id": le.call_id,
        "name": le.name,
        "arguments": dumps(le.arguments),
        "read_only": le.read_only,
        "phase": le.phase,
        "phase_rank": rank,
        "step_id": le.step_id,
        "step_no": step_number(le.step_id),
        "risk": le.risk,
        "result": dumps_opt(le.result),
        "updated_at": le.updated_at or now,
    }


def ledger_from_row(row: Row[Any]) -> LedgerEntry:
    return LedgerEntry(
        key=row.key,
        turn=row.turn,
        call_id=row.call_id,
        name=row.name,
        arguments=json.loads(row.arguments),
        read_only=bool(row.read_only),
        phase=row.phase,
        step_id=row.step_id,
        risk=row.risk,
        result=loads_opt(row.result),
        updated_at=row.updated_at,
    )


def event_row(sid: str, ev: EventRecord) -> dict[str, Any]:
    return {
        "session_id": sid,
        "seq": ev.seq,
        "type": ev.type,
        "turn": ev.turn,
        "call_id": ev.call_id,
        "payload": dumps(ev.payload),
        "ts": ev.ts,
    }


def checkpoint_row(sid: str, cp: Checkpoint) -> dict[str, Any]:
    return {
        "session_id": sid,
        "turn": cp.turn,
        "created_at": cp.created_at,
        "goal": cp.goal,
        "modified_files": dumps(cp.modified_files),
        "verification": dumps(cp.verification),
        "open_items": dumps(cp.open_items),
    }


# -- rollback / fork: portable queries on one session ---------------------------------------


def find_step(conn: Connection, session_id: str, step_id: str) -> tuple[int, int]:
    row = conn.execute(
        select(steps.c.number, steps.c.turn).where(
            steps.c.session_id == session_id, steps.c.step_id == step_id
        )
    ).first()
    if row is None:
        raise KeyError(f"{session_id}/{step_id}")
    return int(row.number), int(row.turn)


def copy_rows_up_to(
    conn: Connection, table: Any, step_col: Any, session_id: str, number: int, new_id: str
) -> None:
    """Copy a session's rows up to step ``number`` as-is (JSON text included) to ``new_id``."""
    rest = [c for c in table.c if c.name != "session_id"]
    source = select(bindparam("new_id", new_id), *rest).where(
        table.c.session_id == session_id, step_col <= number
    )
    conn.execute(insert(table).from_select(["session_id", *(c.name for c in rest)], source))


def copy_latest_checkpoint(conn: Connection, session_id: str, turn: int, new_id: str) -> None:
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


def copy_session_for_fork(
    conn: Connection, session_id: str, step_id: str, new_id: str, now: float
) -> None:
    """A new ``init`` session row carrying the parent's root, task, model, title and meta."""
    src = sessions.c
    head = select(
        bindparam("new_id", new_id),
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
    # A fork is a new top-level session: no pending decision, no multi-agent parent.
    names = [c.name for c in sessions.c if c.name not in ("pending", "parent_session_id", "caller")]
    conn.execute(insert(sessions).from_select(names, head))
