"""What only PostgreSQL has: the same schema and migrations as SQLite on a server, selection
by URL (environment or user config, never a project file), passwords kept out of messages,
per-session row locks, and reconnecting after the server dropped the connection.

The behaviour shared with SQLite (round trips, ledger, rollback, fork, processes) runs on both
in test_sqlite_store.py. Every test here gets a fresh database on a throwaway server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from sqlalchemy import Connection, create_engine, inspect, text

from xclaw import dirs
from xclaw.core.errors import ConfigError
from xclaw.redact import redact
from xclaw.store import schema
from xclaw.store.base import EventRecord, SessionRecord, TranscriptItem, WriteBatch
from xclaw.store.open import DATABASE_URL_ENV, open_store
from xclaw.store.postgres import PostgresStore, parse_database_url
from xclaw.store.sqlite import SqliteStore


def dsn(url: str) -> str:
    """The psycopg form of a test URL."""
    return parse_database_url(url).set(drivername="postgresql").render_as_string(False)


def versions(url: str) -> list[int]:
    with psycopg.connect(dsn(url)) as conn:
        rows = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    return [v for (v,) in rows]


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_url) as s:
        yield s


def new_session(sid: str = "S1") -> WriteBatch:
    return WriteBatch(sid, create=SessionRecord(sid, "/r", "t", "m"))


# -- schema and migrations ---------------------------------------------------------------------


def test_the_schema_is_the_one_sqlite_gets(pg_url: str, tmp_path: Path) -> None:
    PostgresStore(pg_url).close()
    SqliteStore(tmp_path / "x.db").close()

    def shape(url: str) -> dict[str, object]:
        engine = create_engine(url)
        try:
            found = inspect(engine)
            return {
                t: (
                    [(c["name"], c["nullable"]) for c in found.get_columns(t)],
                    found.get_pk_constraint(t)["constrained_columns"],
                    sorted(i["name"] for i in found.get_indexes(t)),
                )
                for t in sorted(found.get_table_names())
            }
        finally:
            engine.dispose()

    assert shape(pg_url) == shape(f"sqlite:///{tmp_path / 'x.db'}")
    assert versions(pg_url) == list(range(1, schema.CURRENT_VERSION + 1))


def test_a_version_1_database_is_upgraded_in_order(pg_url: str) -> None:
    """A database left at v1 (as the first release made it) gets v2 on open, data kept."""
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            schema.migrate(conn, known={1: schema.MIGRATIONS[1]})
            conn.execute(
                text(
                    "INSERT INTO sessions (id, root, task, model, state, phase, created_at,"
                    " updated_at, title, meta) VALUES ('old', '/r', 't', 'm', 'success', 'DONE',"
                    " 1, 1, '', '{}')"
                )
            )
    finally:
        engine.dispose()
    assert versions(pg_url) == [1]
    with PostgresStore(pg_url) as s:
        old = s.get_session("old")
        assert old is not None and old.parent_session_id is None
        s.commit(
            WriteBatch("kid", create=SessionRecord("kid", "/r", "t", "m", parent_session_id="old"))
        )
        assert [c.id for c in s.list_children("old")] == ["kid"]
    assert versions(pg_url) == list(range(1, schema.CURRENT_VERSION + 1))


def test_a_newer_database_is_refused_untouched(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(dsn(pg_url)) as conn:
        conn.execute("INSERT INTO schema_version VALUES (%s, 0)", (schema.CURRENT_VERSION + 1,))
    with pytest.raises(ConfigError) as err:
        PostgresStore(pg_url)
    assert err.value.code == "STORE_VERSION_TOO_NEW"
    assert versions(pg_url)[-1] == schema.CURRENT_VERSION + 1


def test_a_failing_migration_leaves_the_database_as_it_was(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresStore(pg_url).close()

    def broken(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE half_done (x INTEGER)"))
        conn.execute(text("ALTER TABLE sessions ADD COLUMN extra TEXT"))
        raise RuntimeError("migration bug")

    n = schema.CURRENT_VERSION
    monkeypatch.setitem(schema.MIGRATIONS, n + 1, broken)
    with pytest.raises(RuntimeError, match="migration bug"):
        PostgresStore(pg_url)
    assert versions(pg_url) == list(range(1, n + 1))
    with psycopg.connect(dsn(pg_url)) as conn:
        names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables").fetchall()]
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'sessions'"
        ).fetchall()
    assert "half_done" not in names and ("extra",) not in columns


# -- selection by URL --------------------------------------------------------------------------


def test_the_environment_url_selects_postgres(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store() as s:
        assert isinstance(s, SqliteStore)  # the default
    monkeypatch.setenv(DATABASE_URL_ENV, pg_url)
    with open_store() as s:
        assert isinstance(s, PostgresStore)
        s.commit(new_session())
    with PostgresStore(pg_url) as again:
        assert again.get_session("S1") is not None
    monkeypatch.delenv(DATABASE_URL_ENV)
    with open_store() as s:
        assert isinstance(s, SqliteStore) and s.get_session("S1") is None


def test_the_user_config_selects_postgres_and_a_project_file_may_not(
    pg_url: str, tmp_path: Path
) -> None:
    from xclaw.config import load_config

    user = dirs.config_dir()
    user.mkdir(parents=True)
    (user / "xclaw.yaml").write_text(yaml.safe_dump({"store": {"url": pg_url}}))
    with open_store() as s:
        assert isinstance(s, PostgresStore)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "xclaw.yaml").write_text(yaml.safe_dump({"store": {"url": pg_url}}))
    with pytest.raises(ConfigError) as err:
        load_config(project)
    assert err.value.code == "CONFIG_UNSAFE" and "store" in str(err.value)


def test_the_password_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://xclaw:Sw0rdfish-77@127.0.0.1:1/xclaw"  # port 1: nothing listens
    with pytest.raises(ConfigError) as err:
        PostgresStore(url)
    assert err.value.code == "STORE_UNAVAILABLE"
    text_ = f"{err.value} {err.value.hint} {err.value.__cause__}"
    assert "Sw0rdfish-77" not in str(err.value) and "127.0.0.1" in str(err.value)
    # Once seen, the password is a registered secret: masked wherever it is printed.
    assert "Sw0rdfish-77" not in redact(f"connecting with Sw0rdfish-77 failed; {text_}")


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "postgresql://u@h", "not a url", "sqlite:///x.db"]
)
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError) as err:
        PostgresStore(url)
    assert err.value.code == "STORE_URL_INVALID"


# -- concurrency and connections ---------------------------------------------------------------


def test_writes_to_a_session_wait_for_its_row_lock(pg: PostgresStore, pg_url: str) -> None:
    """Where SQLite has one writer, PostgreSQL locks the session's row: a commit to S1 waits
    for another transaction holding it, while other sessions go on."""
    pg.commit(new_session("S1"))
    pg.commit(new_session("S2"))
    done = threading.Event()

    def commit_s1() -> None:
        pg.commit(WriteBatch("S1", events=[EventRecord(1, "e", 1, {}, 0.0)]))
        done.set()

    with psycopg.connect(dsn(pg_url)) as other:
        other.execute("SELECT id FROM sessions WHERE id = 'S1' FOR UPDATE")
        writer = threading.Thread(target=commit_s1)
        writer.start()
        assert not done.wait(0.5), "the commit did not wait for the session's lock"
        pg.commit(WriteBatch("S2", events=[EventRecord(1, "e", 1, {}, 0.0)]))  # not blocked
        other.commit()
    writer.join(10)
    assert done.is_set() and len(pg.list_events("S1")) == 1


def test_a_dropped_connection_is_reopened(pg: PostgresStore, pg_url: str) -> None:
    pg.commit(new_session())
    for _ in range(2):  # every pooled connection the store holds is cut
        with psycopg.connect(dsn(pg_url), autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'xclaw' AND pid <> pg_backend_pid()"
            )
        item = TranscriptItem(len(pg.load_items("S1")) + 1, "s0001", 1, {"n": 1}, 0.0)
        pg.commit(WriteBatch("S1", items=[item]))
    assert [i.seq for i in pg.load_items("S1")] == [1, 2]


def test_an_unreachable_server_is_a_clear_error(pg_url: str) -> None:
    with PostgresStore(pg_url) as s:
        s.commit(new_session())
    gone = pg_url.replace("/t_", "/missing_")
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        PostgresStore(gone)
    assert err.value.code == "STORE_UNAVAILABLE"
    assert "does not exist" in str(err.value) and "PostgreSQL server" in err.value.hint
    assert time.monotonic() - started < 30
