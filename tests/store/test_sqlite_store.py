"""The store on real databases: round trips, atomic batches, the ledger's one-way phases,
rollback/fork and several processes on one database — on SQLite and on a throwaway
PostgreSQL server (the ``store`` fixture runs each test on both) — and, SQLite only,
owner-only files and refused links."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc

from pg_support import raw_rows
from xclaw import dirs
from xclaw.core.errors import ConfigError
from xclaw.store.base import (
    Checkpoint,
    EventRecord,
    LedgerEntry,
    LedgerPhase,
    SessionRecord,
    StepRecord,
    TranscriptItem,
    WriteBatch,
)
from xclaw.store.open import DATABASE_URL_ENV
from xclaw.store.open import open_store as open_configured
from xclaw.store.postgres import PostgresStore
from xclaw.store.sqlite import SqliteStore, open_store

NOW = 1_700_000_000.25
TABLES = ("sessions", "items", "steps", "ledger", "events", "checkpoints")


AnyStore = SqliteStore | PostgresStore
# A constraint violation: sqlite3's own error on SQLite, SQLAlchemy's on PostgreSQL.
INTEGRITY_ERRORS = (sqlite3.IntegrityError, sqlalchemy.exc.IntegrityError)


@pytest.fixture
def store(backend: str) -> Iterator[AnyStore]:
    """The configured store: SQLite in the data dir, or PostgreSQL (``backend``)."""
    with open_configured() as s:
        assert isinstance(s, PostgresStore) == (backend == "postgres")
        yield s


@pytest.fixture
def sqlite_store() -> Iterator[SqliteStore]:
    with open_store() as s:
        yield s


def session(sid: str = "S1", **kw: Any) -> SessionRecord:
    base: dict[str, Any] = {"root": "/proj", "task": "fix the bug", "model": "scripted"}
    base.update({"created_at": NOW, "updated_at": NOW, **kw})
    return SessionRecord(sid, **base)


def step(n: int, turn: int = 1, **kw: Any) -> StepRecord:
    base: dict[str, Any] = {"kind": "tool_call", "name": "fs.read", "status": "completed"}
    base.update(kw)
    return StepRecord(f"s{n:04d}", turn=turn, started_at=NOW + n, **base)


def item(seq: int, step_no: int, turn: int = 1) -> TranscriptItem:
    payload = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": f"m{seq}"}],
    }
    return TranscriptItem(seq, f"s{step_no:04d}", turn, payload, NOW + seq)


def entry(
    key: str, step_no: int, phase: LedgerPhase, *, read_only: bool = False, **kw: Any
) -> LedgerEntry:
    return LedgerEntry(
        key=key,
        turn=1,
        call_id=key.split(":")[-1],
        name="fs.write",
        arguments={"path": "a.txt"},
        read_only=read_only,
        phase=phase,
        step_id=f"s{step_no:04d}",
        risk="read" if read_only else "write",
        updated_at=NOW,
        **kw,
    )


def event(seq: int, type_: str = "tool.started") -> EventRecord:
    return EventRecord(seq, type_, 1, {"n": seq}, NOW + seq, call_id=f"c{seq}")


def checkpoint(turn: int, goal: str = "goal") -> Checkpoint:
    return Checkpoint(turn, NOW + turn, goal, ["a.py"], [{"cmd": "pytest", "ok": True}], ["x"])


def dump_session(store: AnyStore, sid: str) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every row of one session, read with the plain driver."""
    out = [("sessions", raw_rows(store, "SELECT * FROM sessions WHERE id=?", sid))]
    for table in TABLES[1:]:
        sql = f"SELECT * FROM {table} WHERE session_id=? ORDER BY 1,2,3"
        out.append((table, raw_rows(store, sql, sid)))
    return out


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


# -- round trips -------------------------------------------------------------------------------


def test_every_record_round_trips(store: AnyStore) -> None:
    rec = session(
        title="Titre — 标题",
        meta={"system_prompt": "你好", "settings": {"t": 0.2}},
        pending={"call": "c1", "question": "allow?"},
        parent_id=None,
    )
    steps = [
        step(1, kind="user_input", name="user", input={"text": "héllo"}),
        step(
            2,
            kind="llm_call",
            name="m",
            parent_step_id="s0001",
            output={"a": [1, 2]},
            ended_at=NOW + 9,
            tokens_in=10,
            tokens_out=3,
        ),
        step(3, status="failed", error="boom", input=None, output=None),
    ]
    items = [item(1, 1), item(2, 2), item(3, 3)]
    ledger = [entry("1:c1", 3, "completed", result={"ok": True, "text": "ß"})]
    events = [event(1), EventRecord(2, "run.started", 0, {}, NOW, None)]
    cps = [checkpoint(1)]
    store.commit(
        WriteBatch(
            "S1",
            create=rec,
            items=items,
            steps=steps,
            ledger=ledger,
            events=events,
            checkpoints=cps,
        )
    )
    assert store.get_session("S1") == rec
    assert store.load_items("S1") == items
    assert store.list_steps("S1") == steps
    assert store.load_ledger("S1") == ledger
    assert store.list_events("S1") == events
    assert store.latest_checkpoint("S1") == cps[0]
    assert store.get_session("nope") is None
    assert store.latest_checkpoint("nope") is None
    assert store.load_items("nope") == []


def test_json_is_text_without_escapes(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(meta={"note": "中文"})))
    ((meta,),) = raw_rows(store, "SELECT meta FROM sessions")
    assert meta == '{"note": "中文"}'


def test_steps_are_upserted_and_listed_in_number_order(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(), steps=[step(10), step(9, status="running")]))
    store.commit(WriteBatch("S1", steps=[step(9, status="completed", output={"r": 1})]))
    got = store.list_steps("S1")
    assert [s.step_id for s in got] == ["s0009", "s0010"]
    assert got[0].status == "completed" and got[0].output == {"r": 1}


def test_session_updates_apply_and_bump_updated_at(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session()))
    store.commit(
        WriteBatch(
            "S1",
            session_updates={
                "state": "paused",
                "phase": "AWAITING",
                "pending": {"k": "v"},
                "meta": {"m": 1},
                "title": "t",
            },
        )
    )
    got = store.get_session("S1")
    assert got is not None
    assert (got.state, got.phase, got.title) == ("paused", "AWAITING", "t")
    assert (got.pending, got.meta) == ({"k": "v"}, {"m": 1})
    assert got.updated_at > NOW and got.created_at == NOW
    store.commit(WriteBatch("S1", session_updates={"pending": None}))
    again = store.get_session("S1")
    assert again is not None and again.pending is None


def test_session_updates_reject_unknown_fields_and_sessions(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session()))
    with pytest.raises(ValueError, match="bogus"):
        store.commit(WriteBatch("S1", session_updates={"bogus": 1}))
    with pytest.raises(KeyError):
        store.commit(WriteBatch("ghost", session_updates={"phase": "X"}, events=[event(1)]))
    assert store.list_events("ghost") == []


def test_new_session_timestamps_default_to_now(store: AnyStore) -> None:
    before = time.time()
    store.commit(WriteBatch("S1", create=SessionRecord("S1", "/r", "t", "m")))
    got = store.get_session("S1")
    assert got is not None and got.created_at >= before and got.updated_at == got.created_at


# -- the ledger --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("later", "earlier"),
    [("started", "prepared"), ("completed", "started"), ("result_sent", "completed")]
    + [("result_sent", "prepared")],
)
def test_ledger_phase_never_goes_backwards(
    store: AnyStore, later: LedgerPhase, earlier: LedgerPhase
) -> None:
    store.commit(WriteBatch("S1", create=session(), steps=[step(1)]))
    store.commit(WriteBatch("S1", ledger=[entry("1:c1", 1, later, result={"ok": True})]))
    store.commit(WriteBatch("S1", ledger=[entry("1:c1", 1, earlier, result=None)]))
    (got,) = store.load_ledger("S1")
    assert got.phase == later and got.result == {"ok": True}


def test_ledger_moves_forward_and_same_phase_updates(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(), ledger=[entry("1:c1", 1, "prepared")]))
    store.commit(WriteBatch("S1", ledger=[entry("1:c1", 1, "completed", result={"v": 1})]))
    store.commit(WriteBatch("S1", ledger=[entry("1:c1", 1, "completed", result={"v": 2})]))
    (got,) = store.load_ledger("S1")
    assert (got.phase, got.result) == ("completed", {"v": 2})
    store.commit(WriteBatch("S1", ledger=[entry("1:c1", 1, "result_sent", result={"v": 2})]))
    assert store.load_ledger("S1")[0].phase == "result_sent"


def test_one_batch_may_carry_a_row_twice(store: AnyStore) -> None:
    """As if applied one by one: the last step row wins, a ledger phase never goes back."""
    store.commit(
        WriteBatch(
            "S1",
            create=session(),
            steps=[step(1, status="running"), step(1, status="completed"), step(2)],
            ledger=[
                entry("1:a", 1, "started"),
                entry("1:a", 1, "prepared"),
                entry("1:b", 1, "prepared"),
                entry("1:b", 1, "completed", result={"v": 1}),
            ],
        )
    )
    assert [(s.step_id, s.status) for s in store.list_steps("S1")] == [
        ("s0001", "completed"),
        ("s0002", "completed"),
    ]
    assert [(e.key, e.phase) for e in store.load_ledger("S1")] == [
        ("1:a", "started"),
        ("1:b", "completed"),
    ]


# -- atomicity ---------------------------------------------------------------------------------


def test_a_failing_batch_leaves_nothing(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(), items=[item(1, 1), item(2, 1)]))
    before = dump_session(store, "S1")
    bad = WriteBatch(
        "S1",
        session_updates={"phase": "SHOULD_NOT_LAND"},
        steps=[step(2)],
        ledger=[entry("2:c2", 2, "started")],
        items=[item(3, 2), item(2, 2)],  # seq 2 exists: the whole batch must go
        events=[event(1)],
        checkpoints=[checkpoint(2)],
    )
    with pytest.raises(INTEGRITY_ERRORS):
        store.commit(bad)
    assert dump_session(store, "S1") == before
    # The connection is usable afterwards.
    store.commit(WriteBatch("S1", items=[item(3, 2)]))
    assert [i.seq for i in store.load_items("S1")] == [1, 2, 3]


def test_rows_for_a_missing_session_are_refused(store: AnyStore) -> None:
    with pytest.raises(INTEGRITY_ERRORS):
        store.commit(WriteBatch("ghost", items=[item(1, 1)]))
    assert store.load_items("ghost") == []


def test_empty_batch_is_a_no_op(store: AnyStore) -> None:
    store.commit(WriteBatch("nobody"))
    assert store.list_sessions() == []


def test_malformed_step_id_is_refused_before_writing(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session()))
    bad = TranscriptItem(1, "step-one", 1, {}, NOW)
    with pytest.raises(ValueError, match="s0001"):
        store.commit(WriteBatch("S1", items=[bad], events=[event(1)]))
    assert store.list_events("S1") == []


# -- files, permissions, links -----------------------------------------------------------------


def test_database_lives_in_the_data_dir_owner_only(sqlite_store: SqliteStore) -> None:
    assert sqlite_store.path == dirs.data_dir() / "xclaw.db"
    sqlite_store.commit(WriteBatch("S1", create=session()))
    assert mode(sqlite_store.path) == 0o600
    for suffix in ("-wal", "-shm"):
        side = sqlite_store.path.with_name(sqlite_store.path.name + suffix)
        assert side.exists() and mode(side) == 0o600
    assert mode(sqlite_store.path.parent) == 0o700


def test_created_folders_and_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o277)  # would leave the owner without write access
    try:
        with open_store(tmp_path / "a" / "b" / "x.db") as s:
            s.commit(WriteBatch("S1", create=session()))
            sides = [s.path.with_name(s.path.name + x) for x in ("-wal", "-shm")]
            assert [mode(p) for p in [s.path, *sides]] == [0o600] * 3
    finally:
        os.umask(old)
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700


def test_an_existing_loose_database_is_tightened() -> None:
    path = dirs.data_dir() / "xclaw.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    with open_store() as s:
        s.commit(WriteBatch("S1", create=session()))
        assert mode(path) == 0o600
        assert mode(path.with_name("xclaw.db-wal")) == 0o600


def test_pragmas_wal_normal_foreign_keys(sqlite_store: SqliteStore) -> None:
    db = sqlite_store._db
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert db.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_symlinked_data_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    link = Path(os.environ["XDG_DATA_HOME"]) / "xclaw"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real)
    with pytest.raises(ConfigError) as err:
        open_store()
    assert err.value.code == "STORE_LOCATION_UNSAFE"
    assert not (real / "xclaw.db").exists()


def test_symlinked_database_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "real.db"
    target.touch()
    (dirs.data_dir() / "xclaw.db").symlink_to(target)
    with pytest.raises(ConfigError) as err:
        open_store()
    assert err.value.code == "STORE_LOCATION_UNSAFE"


def test_database_outside_its_data_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with pytest.raises(ConfigError) as err:
        SqliteStore(tmp_path / "other" / "x.db", data_dir=tmp_path / "data")
    assert err.value.code == "STORE_LOCATION_UNSAFE"


def test_links_swapped_in_after_open_stop_every_write(
    sqlite_store: SqliteStore, tmp_path: Path
) -> None:
    sqlite_store.commit(WriteBatch("S1", create=session(), steps=[step(1)]))
    moved = tmp_path / "moved.db"
    os.rename(sqlite_store.path, moved)
    sqlite_store.path.symlink_to(moved)
    for write in (
        lambda: sqlite_store.commit(WriteBatch("S1", events=[event(1)])),
        lambda: sqlite_store.rollback("S1", "s0001"),
        lambda: sqlite_store.fork("S1", "s0001", "S2"),
    ):
        with pytest.raises(ConfigError) as err:
            write()
        assert err.value.code == "STORE_LOCATION_UNSAFE"
    sqlite_store.path.unlink()
    os.rename(moved, sqlite_store.path)
    sqlite_store.commit(WriteBatch("S1", events=[event(1)]))  # back in place: writes resume
    assert len(sqlite_store.list_events("S1")) == 1


def test_data_dir_swapped_for_a_link_stops_writes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = SqliteStore(data / "x.db")
    try:
        s.commit(WriteBatch("S1", create=session()))
        data.rename(tmp_path / "real")
        data.symlink_to(tmp_path / "real")
        with pytest.raises(ConfigError, match="symbolic link"):
            s.commit(WriteBatch("S1", events=[event(1)]))
    finally:
        s.close()


def test_replaced_database_file_stops_writes(sqlite_store: SqliteStore) -> None:
    sqlite_store.commit(WriteBatch("S1", create=session()))
    os.rename(sqlite_store.path, sqlite_store.path.with_name("old.db"))
    sqlite_store.path.touch()
    with pytest.raises(ConfigError, match="replaced"):
        sqlite_store.commit(WriteBatch("S1", events=[event(1)]))


# -- several stores on one file ----------------------------------------------------------------


def test_two_stores_on_one_file_see_each_other(store: AnyStore) -> None:
    with open_configured() as other:
        store.commit(WriteBatch("S1", create=session(), items=[item(1, 1)]))
        assert [i.seq for i in other.load_items("S1")] == [1]
        other.commit(WriteBatch("S1", items=[item(2, 1)], session_updates={"phase": "B"}))
        assert [i.seq for i in store.load_items("S1")] == [1, 2]
        got = store.get_session("S1")
        assert got is not None and got.phase == "B"


def test_writes_take_the_lock_at_begin(sqlite_store: SqliteStore) -> None:
    """BEGIN IMMEDIATE is honoured: another writer is locked out before any statement runs."""
    other = sqlite3.connect(sqlite_store.path, timeout=0, isolation_level=None)
    try:
        with sqlite_store._write():
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from xclaw.store.base import EventRecord, SessionRecord, TranscriptItem, WriteBatch
    from xclaw.store.postgres import PostgresStore
    from xclaw.store.sqlite import SqliteStore

    where, sid, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = PostgresStore(where) if "://" in where else SqliteStore(Path(where))
    store.commit(WriteBatch(sid, create=SessionRecord(sid, "/r", "t", "m")))
    for n in range(1, count + 1):
        payload = {"type": "message", "n": n}
        store.commit(WriteBatch(
            sid,
            session_updates={"phase": f"P{n}"},
            items=[TranscriptItem(n, f"s{n:04d}", n, payload, 0.0)],
            events=[EventRecord(n, "e", n, {}, 0.0)],
        ))
        print(n, flush=True)
    if len(sys.argv) > 4:  # crash without closing anything
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    store.close()
    """
)


def run_writer(where: Path | str, sid: str, count: int, *extra: str) -> subprocess.Popen[str]:
    """A process committing ``count`` batches to the SQLite file or PostgreSQL URL ``where``."""
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(where), sid, str(count), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def where_for(backend: str, tmp_path: Path, name: str) -> Path | str:
    """A database no process has opened yet: a new file, or the fresh PostgreSQL database."""
    return os.environ[DATABASE_URL_ENV] if backend == "postgres" else tmp_path / "shared" / name


def open_where(where: Path | str) -> AnyStore:
    return SqliteStore(where) if isinstance(where, Path) else PostgresStore(where)


def test_two_processes_commit_to_one_file(backend: str, tmp_path: Path) -> None:
    where = where_for(backend, tmp_path, "x.db")  # neither has created it: migrations race too
    procs = [run_writer(where, sid, 150) for sid in ("A", "B")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err
    with open_where(where) as s:
        for sid in ("A", "B"):
            assert [i.seq for i in s.load_items(sid)] == list(range(1, 151))
            assert s.counters(sid) == (0, 150, 150)
            got = s.get_session(sid)
            assert got is not None and got.phase == "P150"


def test_commits_survive_a_killed_process(backend: str, tmp_path: Path) -> None:
    where = where_for(backend, tmp_path, "x.db")
    proc = run_writer(where, "K", 40, "crash")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    assert out.split()[-1] == "40"  # every commit returned before the kill
    with open_where(where) as s:
        assert len(s.load_items("K")) == 40


# -- rollback ----------------------------------------------------------------------------------


def six_steps(store: AnyStore) -> None:
    """s0001..s0006, two items per step, a checkpoint per turn, tool calls at s0003..s0006."""
    steps = [step(n, turn=(n + 1) // 2) for n in range(1, 7)]
    items = [item(2 * n - k, n, turn=(n + 1) // 2) for n in range(1, 7) for k in (1, 0)]
    ledger = [
        entry("2:c3", 3, "result_sent"),  # kept by a rollback to s0004
        entry("2:c4", 4, "started"),  # a write that began: irreversible
        entry("3:c5", 5, "completed", read_only=True),  # read-only: harmless
        entry("3:c6", 6, "prepared"),  # never started: nothing happened
        entry("3:c7", 6, "completed", result={"ok": True}),  # irreversible
    ]
    store.commit(
        WriteBatch(
            "S1",
            create=session(pending={"waiting": True}),
            steps=steps,
            items=items,
            ledger=ledger,
            events=[event(n) for n in range(1, 5)],
            checkpoints=[checkpoint(1), checkpoint(2), checkpoint(3)],
        )
    )


def test_rollback_removes_the_step_and_everything_after(store: AnyStore) -> None:
    six_steps(store)
    report = store.rollback("S1", "s0004")
    assert (report.session_id, report.step_id) == ("S1", "s0004")
    assert (report.removed_steps, report.removed_items) == (3, 6)
    assert sorted(e.key for e in report.irreversible) == ["2:c4", "3:c7"]
    assert [s.step_id for s in store.list_steps("S1")] == ["s0001", "s0002", "s0003"]
    assert [i.seq for i in store.load_items("S1")] == list(range(1, 7))
    assert [e.key for e in store.load_ledger("S1")] == ["2:c3"]
    assert len(store.list_events("S1")) == 4  # the audit log stays
    cp = store.latest_checkpoint("S1")
    assert cp is not None and cp.turn == 2  # s0004 is in turn 2; turn 3's checkpoint is gone
    got = store.get_session("S1")
    assert got is not None
    assert (got.state, got.phase, got.pending) == ("paused", "ROLLED_BACK", None)
    assert store.counters("S1") == (3, 6, 4)


def test_rollback_of_an_unknown_step_changes_nothing(store: AnyStore) -> None:
    six_steps(store)
    before = dump_session(store, "S1")
    with pytest.raises(KeyError):
        store.rollback("S1", "s0099")
    with pytest.raises(KeyError):
        store.rollback("nobody", "s0001")
    assert dump_session(store, "S1") == before


# -- fork --------------------------------------------------------------------------------------


def test_fork_copies_up_to_the_step_and_leaves_the_original_byte_identical(
    store: AnyStore,
) -> None:
    six_steps(store)
    store.commit(WriteBatch("S1", checkpoints=[checkpoint(2, goal="newer at turn 2")]))
    before = dump_session(store, "S1")
    new = store.fork("S1", "s0004", "F1")
    assert dump_session(store, "S1") == before

    assert (new.id, new.parent_id, new.fork_step) == ("F1", "S1", "s0004")
    assert (new.state, new.phase) == ("init", "FORKED")
    orig = store.get_session("S1")
    assert orig is not None
    for name in ("root", "task", "model", "meta", "title"):
        assert getattr(new, name) == getattr(orig, name)
    assert new.pending is None and new.created_at >= orig.created_at
    assert store.get_session("F1") == new
    assert store.list_steps("F1") == store.list_steps("S1")[:4]
    assert store.load_items("F1") == store.load_items("S1")[:8]
    assert [e.key for e in store.load_ledger("F1")] == ["2:c3", "2:c4"]
    assert store.load_ledger("F1") == store.load_ledger("S1")[:2]
    assert store.list_events("F1") == []
    cp = store.latest_checkpoint("F1")
    assert cp is not None and (cp.turn, cp.goal) == (2, "newer at turn 2")
    assert store.counters("F1") == (4, 8, 0)


def test_fork_of_an_unknown_step_creates_nothing(store: AnyStore) -> None:
    six_steps(store)
    with pytest.raises(KeyError):
        store.fork("S1", "s0042", "F1")
    assert store.get_session("F1") is None


def test_fork_continues_independently(store: AnyStore) -> None:
    six_steps(store)
    store.fork("S1", "s0002", "F1")
    store.commit(WriteBatch("F1", steps=[step(3, name="other")], items=[item(5, 3)]))
    assert store.list_steps("S1")[2].name == "fs.read"
    assert [s.name for s in store.list_steps("F1")][-1] == "other"
    assert len(store.load_items("S1")) == 12


# -- reads -------------------------------------------------------------------------------------


def test_counters(store: AnyStore) -> None:
    assert store.counters("S1") == (0, 0, 0)
    store.commit(
        WriteBatch(
            "S1",
            create=session(),
            steps=[step(1), step(12)],
            items=[item(7, 12)],
            events=[event(3), event(9)],
        )
    )
    assert store.counters("S1") == (12, 7, 9)


def test_list_events_after_seq(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(), events=[event(n) for n in range(1, 6)]))
    assert [e.seq for e in store.list_events("S1", after_seq=3)] == [4, 5]
    assert store.list_events("S1", after_seq=5) == []


def test_latest_checkpoint_is_the_newest_turn_then_the_newest_row(store: AnyStore) -> None:
    store.commit(WriteBatch("S1", create=session(), checkpoints=[checkpoint(3, "a")]))
    store.commit(WriteBatch("S1", checkpoints=[checkpoint(2, "older turn")]))
    store.commit(WriteBatch("S1", checkpoints=[checkpoint(3, "b")]))
    cp = store.latest_checkpoint("S1")
    assert cp is not None and cp.goal == "b"


def test_list_sessions_filters_and_orders(store: AnyStore) -> None:
    rows = [
        session("a", created_at=NOW + 1, root="/one", task="Fix the parser", state="success"),
        session("b", created_at=NOW + 2, root="/two", task="write docs", title="100% done"),
        session("c", created_at=NOW + 3, root="/one", task="add tests", state="paused"),
    ]
    for rec in rows:
        store.commit(WriteBatch(rec.id, create=rec))

    def ids(found: list[SessionRecord]) -> list[str]:
        return [s.id for s in found]

    assert ids(store.list_sessions()) == ["c", "b", "a"]
    assert ids(store.list_sessions(limit=2)) == ["c", "b"]
    assert ids(store.list_sessions(root="/one")) == ["c", "a"]
    assert ids(store.list_sessions(state="paused")) == ["c"]
    assert ids(store.list_sessions(text="PARSER")) == ["a"]
    assert ids(store.list_sessions(text="100%")) == ["b"]
    assert ids(store.list_sessions(text="0%")) == ["b"]
    assert ids(store.list_sessions(text="%")) == ["b"]  # a literal percent, not a wildcard
    assert ids(store.list_sessions(text="_")) == []
    assert ids(store.list_sessions(root="/one", state="success", text="fix")) == ["a"]


def test_large_transcript_loads_in_order(store: AnyStore) -> None:
    n = 5000
    store.commit(WriteBatch("S1", create=session()))
    for start in range(1, n + 1, 1000):
        store.commit(
            WriteBatch("S1", items=[item(i, i // 4 + 1) for i in range(start, start + 1000)])
        )
    got = store.load_items("S1")
    assert [i.seq for i in got] == list(range(1, n + 1))
    assert got[-1].payload["content"][0]["text"] == f"m{n}"
