"""Gateway load and isolation: N concurrent WebSocket sessions against a scripted model.

The server is a child process running what ``xclaw serve`` runs: ``create_app`` under
``GatewayServer`` (its socket, its uvicorn config), token auth, the SQLite store in a fresh
XDG data dir, one coding ``Agent`` per session with the configured sandbox (``--sandbox`` as
``xclaw serve``). Its model streams like a network model (it yields to the loop before every
event): turn 1 says a few words and calls ``fs.read``, turn 2 streams the reply in
``--deltas`` pieces. The load client is this process (websockets, asyncio): it opens N
sessions (after 5 warm-up turns), then every session sends one message, evenly spread at
``--rate`` messages/s ("paced"), then one more, all N at once ("burst"). Per turn it times
send -> first ``delta`` frame (TTFD) and send -> ``reply``.

Isolation: a frame naming another session is counted as foreign, and every streamed reply
must quote the nonce its own client just sent and no other ("wrong text"); both must be 0.
Also printed: the server's VmRSS growth per live session (connected, one turn done) and its
CPU time per turn (its threads' run time, from /proc: the figure that holds when other
processes share the cores; latencies on a busy machine do not).

Peer, same run, same client, same ``GatewayServer`` runner: a "floor" server, a bare FastAPI
WebSocket endpoint that checks the token and streams the same frames with no agent, store or
tools. xclaw/floor is the cost of the gateway and its durable agent turn over the transport.

Run: ``make bench`` (or ``python bench/gateway_load.py --sessions 100,500,1000``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect

TOKEN = "bench-gateway-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NONCE = re.compile(r"nonce-[0-9a-f]{16}")
WORDS = "The notes say the build passes and the release is tagged; nothing else to do here."


def reply_chunks(nonce: str, deltas: int) -> list[str]:
    """The streamed reply: ``deltas`` pieces that join to one sentence quoting the nonce."""
    text = f"Done for {nonce}. {WORDS}"
    step = -(-len(text) // deltas)
    return [text[i : i + step] for i in range(0, len(text), step)]


# -- the servers (child processes) ---------------------------------------------------------
def serve_xclaw(root: Path, port_file: Path, deltas: int, sandbox: str | None) -> None:
    from xclaw.cli.common import sandbox_factory
    from xclaw.coding.agent import Agent
    from xclaw.config import load_config
    from xclaw.core.events import EventBus
    from xclaw.core.messages import ToolCallPart
    from xclaw.core.model import Finish, ModelRequest, TextDelta, ToolCallEvent
    from xclaw.core.tooling import Approver
    from xclaw.gateway.auth import GatewayAuth
    from xclaw.gateway.gateway import Gateway
    from xclaw.gateway.server import GatewayServer, create_app
    from xclaw.models.base import Model, ModelEvent
    from xclaw.store.sqlite import open_store

    class StreamingScript(Model):
        """Turn 1: a short text and an fs.read call; turn 2: the reply, ``deltas`` pieces;
        it yields to the event loop before each event, as a network stream would."""

        name = "scripted-stream"

        async def _events(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            # the last user message, read from the end: the peer has no model at all, so the
            # script must not cost a scan of the whole conversation each call
            last = next((m for m in reversed(request.messages) if m.role == "user"), None)
            found = NONCE.search(last.text if last is not None else "")
            nonce = found.group(0) if found else "nonce-missing"
            if request.messages[-1].role == "user":
                events: list[ModelEvent] = [
                    TextDelta("Reading the notes. "),
                    ToolCallEvent(ToolCallPart("call_1", "fs.read", {"path": "notes.txt"})),
                    Finish("tool_calls"),
                ]
            else:
                events = [TextDelta(piece) for piece in reply_chunks(nonce, deltas)]
                events.append(Finish("stop"))
            for event in events:
                await asyncio.sleep(0)  # each event is a read off the network
                yield event

        def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            return self._events(request)

    cfg = load_config(root)
    box = sandbox_factory(sandbox, cfg)
    store = open_store()

    def make(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        return Agent(
            StreamingScript(),
            root,
            approval=approver,
            limits=cfg.limits.to_limits(),
            bus=bus,
            store=store,
            model_spec="scripted-stream",
            sandbox=box,
        )

    gateway = Gateway(make, store, workdir=root)
    run(GatewayServer(create_app(gateway, GatewayAuth(TOKEN)), log_level="warning"), port_file)


Barrier = Callable[[str, str, str], None]  # (session, kind, text): a durable write


def usage_event(tool_calls: int) -> dict[str, Any]:
    """The footer's event after each model answer, as xclaw's gateway sends it."""
    payload = {"model": "scripted-stream", "input_tokens": None, "output_tokens": None}
    return {
        "type": "model.message_complete",
        "payload": {**payload, "cost_usd": None, "tool_calls": tool_calls},
    }


def step_events(tool_calls: int) -> list[dict[str, Any]]:
    """The frames of the turn's first model answer and its fs.read step, as xclaw's gateway
    streams them (the web UI's step tree is drawn from them)."""
    data = {
        "path": "notes.txt",
        "content": "     1\tbuild: passing",
        "start_line": 1,
        "end_line": 1,
        "total_lines": 1,
        "has_more": False,
        "next_start_line": None,
    }
    call = {"callId": "call_1"}
    return [
        usage_event(tool_calls),
        {
            "type": "tool.proposed",
            **call,
            "payload": {"name": "fs.read", "arguments": {"path": "notes.txt"}},
        },
        {
            "type": "tool.started",
            **call,
            "payload": {"name": "fs.read", "risk": "read", "decision": "allow"},
        },
        {
            "type": "tool.completed",
            **call,
            "payload": {
                "name": "fs.read",
                "ok": True,
                "error_code": None,
                "message": "Read notes.txt: lines 1-1 of 1.",
                "duration_ms": 0.1,
                "data": data,
            },
        },
    ]


def floor_app(deltas: int, barrier: Barrier | None = None) -> FastAPI:
    """The peer: the same frames over the same stack (the deltas, the tool step's events, the
    usage events and the reply), nothing behind them; with ``barrier``, a write at each of
    the turn's three points a durable server must commit (before each model call and before
    the reply)."""
    app = FastAPI()

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        if websocket.headers.get("authorization") != f"Bearer {TOKEN}":
            await websocket.close(code=4401)
            return
        sid = f"floor-{secrets.token_hex(6)}"
        await websocket.send_json({"type": "session", "sessionId": sid})
        try:
            while True:
                frame = json.loads(await websocket.receive_text())
                found = NONCE.search(str(frame.get("content", "")))
                nonce = found.group(0) if found else "nonce-missing"
                if barrier is not None:
                    barrier(sid, "message", str(frame.get("content", "")))
                first = {"type": "delta", "sessionId": sid, "text": "Reading the notes. "}
                await websocket.send_json(first)
                for event in step_events(1):  # the tool step, as xclaw shows it live
                    await websocket.send_json({"sessionId": sid, "type": "event", "event": event})
                if barrier is not None:
                    barrier(sid, "result", "build: passing")
                text = first["text"]
                for piece in reply_chunks(nonce, deltas):
                    await websocket.send_json({"type": "delta", "sessionId": sid, "text": piece})
                    text += piece
                    await asyncio.sleep(0)
                usage = {"sessionId": sid, "type": "event", "event": usage_event(0)}
                await websocket.send_json(usage)
                if barrier is not None:
                    barrier(sid, "reply", text)
                reply = {"type": "reply", "sessionId": sid, "text": text, "status": "completed"}
                await websocket.send_json(reply)
        except WebSocketDisconnect:
            pass

    return app


def serve_floor(port_file: Path, deltas: int) -> None:
    from xclaw.gateway.server import GatewayServer

    run(GatewayServer(floor_app(deltas), log_level="warning"), port_file)


def run(server: Any, port_file: Path) -> None:
    """Serve as ``xclaw serve`` does, on GatewayServer's own listening socket."""
    port_file.write_text(str(server.port))
    server.server.run(sockets=[server.sock])


# -- the load client -----------------------------------------------------------------------
@dataclass
class Session:
    ws: Any
    sid: str
    nonce: str
    frames: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    foreign: int = 0  # frames that name another session
    reader: asyncio.Task[None] | None = None


@dataclass
class Figures:
    ttfd: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wrong_text: int = 0  # turns whose streamed text is not (only) this session's


async def read_frames(s: Session) -> None:
    async for raw in s.ws:
        frame = json.loads(raw)
        if frame.get("sessionId") != s.sid:
            s.foreign += 1
        s.frames.put_nowait(frame)


async def open_session(url: str) -> Session:
    from websockets.asyncio.client import connect

    ws = await connect(url, additional_headers=AUTH, max_queue=None, open_timeout=60)
    first = json.loads(await asyncio.wait_for(ws.recv(), 60))
    if first.get("type") != "session":
        raise RuntimeError(f"first frame is {first.get('type')!r}, not a session")
    s = Session(ws, str(first["sessionId"]), "")
    s.reader = asyncio.get_running_loop().create_task(read_frames(s))
    return s


async def one_turn(s: Session, delay: float, out: Figures, wait: float) -> None:
    """One message; times send -> first delta and send -> reply; checks the streamed text."""
    await asyncio.sleep(delay)
    s.nonce = f"nonce-{os.urandom(8).hex()}"
    start = time.perf_counter()
    await s.ws.send(
        json.dumps({"type": "message", "content": f"What do the notes say? ({s.nonce})"})
    )
    first: float | None = None
    text = ""
    try:
        while (frame := await asyncio.wait_for(s.frames.get(), wait))["type"] != "reply":
            if frame["type"] == "delta":
                first = first or time.perf_counter()
                text += frame["text"]
            elif frame["type"] == "error":
                raise RuntimeError(f"{frame['code']}: {frame['message']}")
    except (TimeoutError, RuntimeError) as err:
        out.errors.append(str(err) or "timeout")
        return
    end = time.perf_counter()
    if NONCE.findall(text) != [s.nonce] or NONCE.findall(frame["text"]) != [s.nonce]:
        out.wrong_text += 1
    if first is None:
        out.errors.append("no delta before the reply")
        return
    out.ttfd.append((first - start) * 1000)
    out.turn.append((end - start) * 1000)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_ms(pid: int) -> float:
    """CPU time of ``pid``'s threads so far (robust to other load on the machine): the
    kernel's exact run time of each (``schedstat``, in nanoseconds; ``stat``'s user + system
    come in ticks of 10 ms, too coarse for a round of a fraction of a second). A thread that
    exits takes its time with it: the servers here run one thread (``server_threads``)."""
    tasks = Path(f"/proc/{pid}/task")
    return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks.iterdir()) / 1e6


def server_threads(pid: int) -> frozenset[str]:
    """The thread ids of ``pid``: the same before and after a round, or its CPU is not whole."""
    return frozenset(t.name for t in Path(f"/proc/{pid}/task").iterdir())


@dataclass
class Run:
    paced: Figures
    burst: Figures
    foreign: int
    rss_per_session_kib: float
    cpu_per_turn_ms: float


async def warm_up(url: str, wait: float) -> None:
    """A few turns first: lazy imports and caches belong to start-up, not to the figures."""
    out = Figures()
    for _ in range(5):
        s = await open_session(url)
        await one_turn(s, 0.0, out, wait)
        await s.ws.close()
    if out.errors or out.wrong_text:
        raise RuntimeError(f"warm-up failed: {out.errors[:3]}, wrong text {out.wrong_text}")


async def drive(url: str, pid: int, n: int, rate: float, wait: float) -> Run:
    await warm_up(url, wait)
    await asyncio.sleep(0.2)
    before = rss_kib(pid)
    sessions: list[Session] = []
    for i in range(0, n, 50):  # a ramp of 50 connections at a time
        sessions += await asyncio.gather(*(open_session(url) for _ in range(i, min(n, i + 50))))
    paced = Figures()
    cpu = cpu_ms(pid)
    await asyncio.gather(*(one_turn(s, i / rate, paced, wait) for i, s in enumerate(sessions)))
    cpu_per_turn = (cpu_ms(pid) - cpu) / n
    rss = (rss_kib(pid) - before) / n  # connected sessions, one turn each, all still live
    burst = Figures()
    await asyncio.gather(*(one_turn(s, 0.0, burst, wait) for s in sessions))
    for s in sessions:
        await s.ws.close()
        if s.reader is not None:
            await s.reader
    return Run(paced, burst, sum(s.foreign for s in sessions), rss, cpu_per_turn)


def start_server(
    kind: str, n: int, args: argparse.Namespace, tmp: Path
) -> tuple[subprocess.Popen[bytes], str]:
    extra = ["--sandbox", args.sandbox] if args.sandbox else []
    return spawn_server(__file__, kind, f"{kind}-{n}", args.deltas, tmp, extra)


def spawn_server(
    script: str,
    kind: str,
    tag: str,
    deltas: int,
    tmp: Path,
    extra: list[str],
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """``script --serve KIND`` in its own process, data and config dirs (named by ``tag``),
    with ``env`` added to its environment; returns it and its WebSocket URL once it listens.
    Shared by the gateway benches."""
    port_file = tmp / f"{tag}.port"
    root = tmp / f"{tag}-root"
    root.mkdir()
    (root / "notes.txt").write_text("build: passing\nrelease: tagged\n")
    env = {**os.environ, **(env or {}), "XDG_DATA_HOME": str(tmp / f"{tag}-data")}
    env["XDG_CONFIG_HOME"] = str(tmp / f"{tag}-config")
    cmd = [sys.executable, script, "--serve", kind, "--root", str(root)]
    cmd += ["--port-file", str(port_file), "--deltas", str(deltas), *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the {kind} server did not start")
        time.sleep(0.05)
    time.sleep(0.5)  # the port file is written just before uvicorn starts serving
    return proc, f"ws://127.0.0.1:{port_file.read_text()}/ws"


def measure(kind: str, n: int, args: argparse.Namespace, tmp: Path) -> Run:
    proc, url = start_server(kind, n, args, tmp)
    try:
        return asyncio.run(drive(url, proc.pid, n, args.rate, args.wait))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- the report ----------------------------------------------------------------------------
def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, f: Figures, n: int) -> str:
    return (
        f"  {name:<12} TTFD p50 {pct(f.ttfd, 0.5):7.1f} p99 {pct(f.ttfd, 0.99):7.1f} ms | "
        f"turn p50 {pct(f.turn, 0.5):7.1f} p99 {pct(f.turn, 0.99):7.1f} ms | "
        f"ok {len(f.turn)}/{n}, errors {len(f.errors)}, wrong text {f.wrong_text}"
    )


def report(n: int, runs: dict[str, Run]) -> bool:
    """Prints one N; True when a turn failed or a session saw anything not its own."""
    print(f"N = {n} sessions")
    bad = False
    for kind, r in runs.items():
        print(row(f"{kind} paced", r.paced, n))
        print(row(f"{kind} burst", r.burst, n))
        print(
            f"  {kind:<12} foreign frames {r.foreign} | server RSS "
            f"+{r.rss_per_session_kib:.1f} KiB/session | server CPU {r.cpu_per_turn_ms:.2f} "
            f"ms/turn (one core: ~{1000 / max(r.cpu_per_turn_ms, 1e-3):.0f} turns/s)"
        )
        for f in (r.paced, r.burst):
            bad |= bool(f.errors) or f.wrong_text > 0 or len(f.turn) != n
        bad |= r.foreign > 0
    if len(runs) == 2:
        ours, floor = runs["xclaw"], runs["floor"]
        for mode in ("paced", "burst"):
            o, f = getattr(ours, mode), getattr(floor, mode)
            ratios = [pct(o.ttfd, q) / pct(f.ttfd, q) for q in (0.5, 0.99)]
            ratios += [pct(o.turn, q) / pct(f.turn, q) for q in (0.5, 0.99)]
            print(
                f"  xclaw/floor {mode}: TTFD p50 {ratios[0]:.1f}x p99 {ratios[1]:.1f}x, "
                f"turn p50 {ratios[2]:.1f}x p99 {ratios[3]:.1f}x"
            )
        cpu = ours.cpu_per_turn_ms / max(floor.cpu_per_turn_ms, 1e-3)
        print(f"  xclaw/floor server CPU per turn: {cpu:.1f}x")
    if "xclaw" in runs and n >= 1000:
        met = pct(runs["xclaw"].paced.ttfd, 0.99) < 50
        print(f"  target, 1,000 sessions paced, TTFD p99 < 50 ms: {'met' if met else 'NOT met'}")
    return bad


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="100,500,1000", help="comma-separated Ns")
    parser.add_argument("--rate", type=float, default=100.0, help="paced messages per second")
    parser.add_argument("--deltas", type=int, default=8, help="streamed reply pieces")
    parser.add_argument("--wait", type=float, default=120.0, help="longest wait for a frame, s")
    parser.add_argument("--only", choices=("xclaw", "floor"), help="run one server only")
    parser.add_argument("--sandbox", help="as `xclaw serve --sandbox` (default: configured)")
    parser.add_argument("--serve", choices=("xclaw", "floor"), help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve == "xclaw":
        serve_xclaw(args.root, args.port_file, args.deltas, args.sandbox)
        return 0
    if args.serve == "floor":
        serve_floor(args.port_file, args.deltas)
        return 0
    kinds = [args.only] if args.only else ["xclaw", "floor"]
    print(
        f"gateway load: per session one turn (fs.read, then a {args.deltas}-delta reply) sent "
        f"paced at {args.rate:.0f} msg/s, then a second turn sent by all N at once (burst); "
        f"loopback, {os.cpu_count()} cores shared by server, client and anything else running"
    )
    failed = False
    with tempfile.TemporaryDirectory() as tmp_name:
        for n in [int(x) for x in args.sessions.split(",")]:
            failed |= report(n, {kind: measure(kind, n, args, Path(tmp_name)) for kind in kinds})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
