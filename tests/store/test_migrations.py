"""Schema versions: a fresh database gets the newest one, later versions apply in order inside
one transaction, and a database from a newer xclaw is refused untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from xclaw.core.errors import ConfigError
from xclaw.store import schema
from xclaw.store.base import SessionRecord, WriteBatch
from xclaw.store.sqlite import SqliteStore, open_store


def versions(path: Path) -> list[int]:
    db = sqlite3.connect(path)
    try:
        return [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")]
    finally:
        db.close()


def tables(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        db.close()


def test_fresh_database_gets_the_current_version() -> None:
    with open_store() as s:
        path = s.path
    assert versions(path) == list(range(1, schema.CURRENT_VERSION + 1))
    assert tables(path) >= {t.name for t in schema.metadata.sorted_tables}


def test_reopening_applies_nothing_again() -> None:
    with open_store() as s:
        s.commit(WriteBatch("S1", create=SessionRecord("S1", "/r", "t", "m")))
        path = s.path
    with open_store() as s:
        assert s.get_session("S1") is not None
    assert versions(path) == list(range(1, schema.CURRENT_VERSION + 1))


def test_a_newer_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version VALUES (?, 0)", (schema.CURRENT_VERSION + 1,))
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(ConfigError) as err:
        SqliteStore(path)
    assert err.value.code == "STORE_VERSION_TOO_NEW"
    assert "Upgrade xclaw" in err.value.hint
    assert path.read_bytes() == before


def test_later_versions_apply_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with SqliteStore(path) as s:
        s.commit(WriteBatch("S1", create=SessionRecord("S1", "/r", "t", "m")))
    applied: list[int] = []
    n = schema.CURRENT_VERSION

    def v2(conn: Connection) -> None:
        applied.append(n + 1)
        conn.execute(text("CREATE TABLE notes (session_id TEXT, body TEXT)"))

    def v3(conn: Connection) -> None:
        applied.append(n + 2)
        conn.execute(text("ALTER TABLE notes ADD COLUMN at REAL"))

    monkeypatch.setitem(schema.MIGRATIONS, n + 2, v3)
    monkeypatch.setitem(schema.MIGRATIONS, n + 1, v2)  # registered out of order on purpose
    with SqliteStore(path) as s:
        assert s.get_session("S1") is not None  # data kept across the upgrade
    assert applied == [n + 1, n + 2]
    assert versions(path) == list(range(1, n + 3))
    assert "notes" in tables(path)


def test_a_failing_migration_leaves_the_database_as_it_was(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "x.db"
    SqliteStore(path).close()

    def v2(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE half_done (x INTEGER)"))
        conn.execute(text("ALTER TABLE sessions ADD COLUMN extra TEXT"))
        raise RuntimeError("migration bug")

    n = schema.CURRENT_VERSION
    monkeypatch.setitem(schema.MIGRATIONS, n + 1, v2)
    with pytest.raises(RuntimeError, match="migration bug"):
        SqliteStore(path)
    # The DDL was inside the transaction too: nothing of the new version remains.
    assert versions(path) == list(range(1, n + 1))
    assert "half_done" not in tables(path)
    db = sqlite3.connect(path)
    assert "extra" not in [row[1] for row in db.execute("PRAGMA table_info(sessions)")]
    db.close()
    monkeypatch.delitem(schema.MIGRATIONS, n + 1)
    with SqliteStore(path) as s:
        assert s.list_sessions() == []


def test_a_file_that_is_not_a_database_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError) as err:
        SqliteStore(path)
    assert err.value.code == "STORE_UNAVAILABLE"


def test_a_version_2_database_gains_the_step_number_index(tmp_path: Path) -> None:
    """The counters of a long session read its highest step by the v3 index, one seek."""
    from sqlalchemy import create_engine

    from xclaw.store.sqlite import _SQL_COUNTERS

    path = tmp_path / "v2.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        schema.migrate(conn, known={v: schema.MIGRATIONS[v] for v in (1, 2)})
    engine.dispose()
    db = sqlite3.connect(path)
    plan = " ".join(str(r) for r in db.execute("EXPLAIN QUERY PLAN " + _SQL_COUNTERS, ("S",)))
    db.close()
    assert "ix_steps_session_number" not in plan
    with SqliteStore(path) as store:
        assert store.counters("S") == (0, 0, 0)
    assert versions(path) == [1, 2, 3]
    db = sqlite3.connect(path)
    plan = " ".join(str(r) for r in db.execute("EXPLAIN QUERY PLAN " + _SQL_COUNTERS, ("S",)))
    db.close()
    assert "ix_steps_session_number" in plan
