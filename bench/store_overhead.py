"""Durable loop overhead per step: the store on PostgreSQL against the store on SQLite.

The scenario of ``durable_loop.py``: an N-step scripted run (one ``fs.read`` per turn, real
loop, policy and tool) with every barrier committed to the store. Run once on the embedded
SQLite store (WAL, ``synchronous = NORMAL``) and, in the same process, on a throwaway
PostgreSQL server started here (Debian's binaries, temp dir, free port, unix socket): with
``fsync = off`` — the same durability as SQLite's NORMAL, a commit survives the process (and
the server process) dying, an OS crash may drop the last ones — and with ``fsync = on``, every
commit flushed to disk. Best of three runs per size; ratio = PostgreSQL / SQLite time.
Run: ``make bench`` (or ``python bench/store_overhead.py 200 1000``).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from loop_overhead import SMALL_FILE  # noqa: E402
from pg_support import PgServer, start_server  # noqa: E402
from xclaw import Agent, Limits, ScriptedModel  # noqa: E402
from xclaw.store.postgres import PostgresStore  # noqa: E402
from xclaw.store.sqlite import SqliteStore  # noqa: E402

REPEATS = 3
AnyStore = SqliteStore | PostgresStore


def ms_per_step(root: Path, open_store: Callable[[], AnyStore], steps: int) -> float:
    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"name": "fs.read", "arguments": {"path": "small.txt"}}]}
        for _ in range(steps)
    ]
    turns.append("done")
    limits = Limits(max_turns=steps + 10, max_identical_calls=steps + 10)
    with open_store() as store:
        agent = Agent(
            ScriptedModel(turns), root, limits=limits, evidence_gate_enabled=False, store=store
        )
        gc.collect()
        start = time.perf_counter()
        result = asyncio.run(agent.run("read small.txt many times"))
        elapsed = time.perf_counter() - start
        assert result.ok and result.metrics.tool_calls == steps, result.reason
        # user input + (model call + tool call) per step + the final answer
        assert len(store.list_steps(result.session_id)) == 2 * steps + 2
        session = store.get_session(result.session_id)
        assert session is not None and session.state == "success"
    return elapsed * 1000 / steps


def best(root: Path, open_store: Callable[[], AnyStore], steps: int) -> float:
    return min(ms_per_step(root, open_store, steps) for _ in range(REPEATS))


def set_fsync(server: PgServer, on: bool) -> None:
    import psycopg

    with psycopg.connect(
        host=str(server.socket_dir),
        port=server.port,
        user="xclaw",
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f"ALTER SYSTEM SET fsync = {'on' if on else 'off'}")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.2)  # the reload reaches every backend
        (value,) = conn.execute("SHOW fsync").fetchone() or ("?",)
    assert value == ("on" if on else "off"), value


def main(sizes: list[int]) -> None:
    server = start_server(fsync=True)
    try:
        url = server.create_database("bench")
        with tempfile.TemporaryDirectory(prefix="xclaw-bench-") as tmp:
            root = Path(tmp, "proj")
            root.mkdir()
            root = root.resolve()
            (root / "small.txt").write_text(SMALL_FILE)
            db = Path(tmp, "data", "xclaw.db")

            def sqlite() -> AnyStore:
                return SqliteStore(db)

            def postgres() -> AnyStore:
                return PostgresStore(url)

            ms_per_step(root, sqlite, 20)  # warm imports, caches and connections
            ms_per_step(root, postgres, 20)
            print(
                f"{'steps':>6} {'SQLite ms/step':>15} {'PG fsync=off':>13} {'ratio':>7}"
                f" {'PG fsync=on':>12} {'ratio':>7}"
            )
            for steps in sizes:
                lite = best(root, sqlite, steps)
                set_fsync(server, False)
                pg_off = best(root, postgres, steps)
                set_fsync(server, True)
                pg_on = best(root, postgres, steps)
                print(
                    f"{steps:>6} {lite:>15.3f} {pg_off:>13.3f} {pg_off / lite:>6.2f}x"
                    f" {pg_on:>12.3f} {pg_on / lite:>6.2f}x"
                )
    finally:
        server.stop()
    print("every step committed; PostgreSQL 15 local (unix socket), psycopg 3")
    print("ratio = PostgreSQL time / SQLite time (lower is better for PostgreSQL)")
    print("fsync=off: survives a killed process, like SQLite WAL NORMAL; fsync=on: survives")
    print("an OS crash too (SQLite would need synchronous = FULL for that)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200, 1000])
