"""Gateway server CPU per turn, against a bare WebSocket floor: the cost of a durable turn.

Three child processes, all real uvicorn on a loopback socket under ``GatewayServer`` (what
``xclaw serve`` runs): the gateway (``create_app``, token auth, the SQLite store in a fresh XDG
data dir, one coding ``Agent`` per session, the scripted streaming model of
``bench/gateway_load.py``: turn 1 says a few words and calls ``fs.read``, turn 2 streams the
reply in ``--deltas`` pieces); the floor (a bare FastAPI WebSocket endpoint that checks the
token and streams the same frames, nothing behind them); and a second, durable floor
(``floor+db``): the bare floor plus the three durability barriers such a turn needs at the
least, one SQLite commit each (the message before the model is asked, the tool result before
it is asked again, the reply before it is sent), one small row per commit, with the WAL and
``synchronous`` settings of xclaw's store. One real WebSocket client (this process) opens
``--sessions`` sessions per round and sends ``--turns`` messages on each, one turn at a time,
waiting for each reply.

Figure: the server process's CPU time (its threads' run time in nanoseconds, from
``/proc/<pid>/task/*/schedstat``) over a round divided by its turns. CPU time, not wall
time: it holds when other processes share the cores. Rounds alternate between the servers;
the median round is shown, with the spread. The ratios printed are ours/peer; the target,
against the bare floor, is at most 2x. The durable floor is not the target's peer: it shows
how much of the gap the commits alone are.

``--base-src DIR`` adds a fourth server, ``xclaw-base``: the same gateway with xclaw imported
from DIR (the ``src`` of another checkout, e.g. ``git worktree add /tmp/base REV``), in the
same rounds, so a change's gain is measured against its base on the same load at the same
moments (runs one after another drift by ±10% on a shared machine).

``--profile FILE`` runs the gateway under cProfile and writes its stats to FILE when it stops
(read with ``python -m pstats FILE``); the CPU figures of such a run include the profiler.

Run: ``make bench`` (or ``python bench/gateway_cpu.py --rounds 7 --sessions 40 --turns 10``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

from fastapi import FastAPI

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_load import (  # noqa: E402
    Figures,
    cpu_ms,
    floor_app,
    one_turn,
    open_session,
    run,
    serve_floor,
    serve_xclaw,
    server_threads,
    spawn_server,
    warm_up,
)

TARGET = 2.0
KINDS = ("xclaw", "floor", "floor+db")


def durable_floor_app(deltas: int, db_path: Path) -> FastAPI:
    """The bare floor's frames, and a commit at each of the turn's three barriers."""
    db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")  # as xclaw's store: survives a killed process
    db.execute(
        "CREATE TABLE IF NOT EXISTS turns (session TEXT, seq INTEGER, kind TEXT, text TEXT,"
        " PRIMARY KEY (session, seq))"
    )
    seqs: dict[str, int] = {}

    def commit(sid: str, kind: str, text: str) -> None:
        seqs[sid] = seq = seqs.get(sid, 0) + 1
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO turns VALUES (?, ?, ?, ?)", (sid, seq, kind, text))
        db.execute("COMMIT")

    return floor_app(deltas, barrier=commit)


def serve_durable_floor(root: Path, port_file: Path, deltas: int) -> None:
    from xclaw.gateway.server import GatewayServer

    app = durable_floor_app(deltas, root.parent / f"{root.name}-floor.db")
    run(GatewayServer(app, log_level="warning"), port_file)


def serve_profiled(root: Path, port_file: Path, deltas: int, out: Path) -> None:
    """The gateway under cProfile; stats written when SIGTERM ends it."""
    profiler = cProfile.Profile(time.process_time)  # CPU, not waits

    def dump(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(str(out))
        os._exit(0)

    signal.signal(signal.SIGTERM, dump)
    profiler.enable()
    serve_xclaw(root, port_file, deltas, None)


def start(kind: str, args: argparse.Namespace, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    if kind == "xclaw-base":
        env = {"PYTHONPATH": str(args.base_src)}
        return spawn_server(__file__, "xclaw", kind, args.deltas, tmp, [], env)
    extra = ["--profile", str(args.profile)] if kind == "xclaw" and args.profile else []
    return spawn_server(__file__, kind, kind, args.deltas, tmp, extra)


async def one_round(url: str, pid: int, sessions: int, turns: int, wait: float) -> float:
    """CPU ms per turn of one round: ``sessions`` opened first, then their turns in turn."""
    opened = [await open_session(url) for _ in range(sessions)]
    out = Figures()
    threads, before = server_threads(pid), cpu_ms(pid)
    for _ in range(turns):
        for s in opened:
            await one_turn(s, 0.0, out, wait)
    spent = cpu_ms(pid) - before
    if server_threads(pid) != threads:
        raise RuntimeError("a server thread started or ended during the round: CPU not whole")
    for s in opened:
        await s.ws.close()
        if s.reader is not None:
            await s.reader
    if out.errors or out.wrong_text or len(out.turn) != sessions * turns:
        raise RuntimeError(f"turns failed: {out.errors[:3]}, wrong text {out.wrong_text}")
    return spent / (sessions * turns)


async def drive(
    servers: dict[str, tuple[int, str]], args: argparse.Namespace
) -> dict[str, list[float]]:
    for _pid, url in servers.values():
        await warm_up(url, args.wait)
    figures: dict[str, list[float]] = {kind: [] for kind in servers}
    for _ in range(args.rounds):  # interleaved: a burst of other load hits both alike
        for kind, (pid, url) in servers.items():
            await asyncio.sleep(0.2)  # let the last round's closes settle
            figures[kind].append(await one_round(url, pid, args.sessions, args.turns, args.wait))
    return figures


def report(figures: dict[str, list[float]], args: argparse.Namespace) -> None:
    turns = args.sessions * args.turns
    print(
        f"gateway server CPU per turn: {args.rounds} rounds of {args.sessions} sessions x "
        f"{args.turns} turns ({turns} turns; turn = fs.read, then a {args.deltas}-delta reply), "
        f"one turn at a time; CPU time of the server process from /proc, median round"
    )
    medians = {}
    for kind, values in figures.items():
        medians[kind] = statistics.median(values)
        print(
            f"  {kind:<10} {medians[kind]:6.2f} ms/turn (rounds {min(values):.2f}-"
            f"{max(values):.2f}; one core: ~{1000 / max(medians[kind], 1e-3):.0f} turns/s)"
        )
    if "xclaw" in medians and "floor" in medians:
        ratio = medians["xclaw"] / max(medians["floor"], 1e-3)
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(
            f"  xclaw/floor server CPU per turn: {ratio:.2f}x (target <= {TARGET:.0f}x: {verdict})"
        )
    if "xclaw" in medians and "xclaw-base" in medians:
        ratio = medians["xclaw"] / max(medians["xclaw-base"], 1e-3)
        print(f"  xclaw/xclaw-base server CPU per turn: {ratio:.3f}x (this tree against its base)")
    if "xclaw" in medians and "floor+db" in medians:
        ratio = medians["xclaw"] / max(medians["floor+db"], 1e-3)
        print(
            f"  xclaw/floor+db (3 commits a turn) server CPU per turn: {ratio:.2f}x (not a target)"
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds per server")
    parser.add_argument("--sessions", type=int, default=40, help="sessions per round")
    parser.add_argument("--turns", type=int, default=10, help="turns per session")
    parser.add_argument("--deltas", type=int, default=8, help="streamed reply pieces")
    parser.add_argument("--wait", type=float, default=60.0, help="longest wait for a frame, s")
    parser.add_argument("--only", choices=KINDS, help="run one server only")
    parser.add_argument("--profile", type=Path, help="cProfile the gateway, stats to this file")
    parser.add_argument("--base-src", type=Path, help="also run xclaw from this src dir")
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve == "xclaw":
        if args.profile:
            serve_profiled(args.root, args.port_file, args.deltas, args.profile)
        else:
            serve_xclaw(args.root, args.port_file, args.deltas, None)
        return 0
    if args.serve == "floor":
        serve_floor(args.port_file, args.deltas)
        return 0
    if args.serve == "floor+db":
        serve_durable_floor(args.root, args.port_file, args.deltas)
        return 0
    kinds = [args.only] if args.only else list(KINDS)
    if args.base_src is not None:
        if not (args.base_src / "xclaw" / "__init__.py").is_file():
            parser.error(f"--base-src {args.base_src}: no xclaw package there (give its src dir)")
        kinds.insert(1, "xclaw-base")
    with tempfile.TemporaryDirectory() as tmp_name:
        procs = {kind: start(kind, args, Path(tmp_name)) for kind in kinds}
        try:
            servers = {kind: (proc.pid, url) for kind, (proc, url) in procs.items()}
            figures = asyncio.run(drive(servers, args))
        finally:
            for proc, _url in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
    report(figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
