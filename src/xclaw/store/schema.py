"""The store's tables in SQLAlchemy Core, and the versioned migrations that create them.

Portable types only (String, Text, Integer, Float, Boolean) and JSON kept as TEXT, so the same
schema runs on SQLite now and PostgreSQL later. Step numbers (``s0042`` → 42) are stored next
to the ids so rollback and fork are plain range queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    insert,
    select,
)

from xclaw.core.errors import ConfigError

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
    Index("ix_sessions_created", "created_at"),
    Index("ix_sessions_state_created", "state", "created_at"),
    Index("ix_sessions_root_created", "root", "created_at"),
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
    sqlite_with_rowid=False,
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
    sqlite_with_rowid=False,
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
    sqlite_with_rowid=False,
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
    sqlite_with_rowid=False,
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


def _v1_create_tables(conn: Connection) -> None:
    # Version 1 is the tables above. When a later version changes a table, freeze this
    # function's DDL first (copy the v1 definitions here) so old databases replay exactly.
    metadata.create_all(conn, tables=list(DATA_TABLES))


Migration = Callable[[Connection], None]

# Applied in key order; never edit a released entry, add the next version instead.
MIGRATIONS: dict[int, Migration] = {
    1: _v1_create_tables,
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
