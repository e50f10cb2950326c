"""One long gateway chat: does a turn cost more as the session grows?

The servers of ``bench/gateway_cpu.py`` (the gateway with its SQLite store and the scripted
model, and the bare WebSocket floor), one session each, ``--turns`` messages sent one after
another (turn = ``fs.read``, then a streamed reply). Figure: the server's CPU time per turn
(from /proc, as in gateway_cpu) in the first and the last ``--window`` turns, and their ratio:
1.0 means a turn of a long chat costs what a turn of a new one does. The peer is the floor in
the same run; the ratio printed last is ours/peer of the last window.

Run: ``make bench`` (or ``python bench/long_chat.py --turns 3000 --window 500``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_load import Figures, cpu_ms, one_turn, open_session, spawn_server  # noqa: E402

CPU_BENCH = str(Path(__file__).with_name("gateway_cpu.py"))


async def windows(kind: str, turns: int, window: int, tmp: Path) -> list[float]:
    """CPU ms per turn of each window of ``window`` turns of one session of ``kind``."""
    proc, url = spawn_server(CPU_BENCH, kind, kind, 8, tmp, [])
    try:
        session = await open_session(url)
        out, figures = Figures(), []
        before = cpu_ms(proc.pid)
        for n in range(1, turns + 1):
            await one_turn(session, 0, out, 60)
            if n % window == 0:
                now = cpu_ms(proc.pid)
                figures.append((now - before) / window)
                before = now
                span = f"{n - window + 1}-{n}"
                print(f"  {kind:<6} turns {span}: {figures[-1]:.2f} ms/turn", flush=True)
        if out.errors or out.wrong_text:
            raise SystemExit(f"{kind}: {out.errors[:3]} wrong text {out.wrong_text}")
        await session.ws.close()
        return figures
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--window", type=int, default=500)
    args = parser.parse_args()
    if args.turns < 2 * args.window:
        parser.error("--turns must hold at least two windows")
    print(f"one chat of {args.turns} turns; server CPU per turn, by window of {args.window}")
    with tempfile.TemporaryDirectory(prefix="xclaw-long-chat-") as tmp:
        ours = asyncio.run(windows("xclaw", args.turns, args.window, Path(tmp)))
        floor = asyncio.run(windows("floor", args.turns, args.window, Path(tmp)))
    print(
        f"xclaw: last/first window {ours[-1] / ours[0]:.2f}x "
        f"({ours[0]:.2f} -> {ours[-1]:.2f} ms/turn)"
    )
    print(
        f"floor: last/first window {floor[-1] / floor[0]:.2f}x "
        f"({floor[0]:.2f} -> {floor[-1]:.2f} ms/turn)"
    )
    print(f"xclaw/floor, last window: {ours[-1] / floor[-1]:.2f}x")


if __name__ == "__main__":
    main()
