"""Added cost of the sandbox: one ``terminal.exec`` through the tool, bwrap vs host.

Both runs go through the same registry, policy-free ``execute`` path and output capture: the
only difference is the launcher (``prlimit`` + ``nsenter`` into the session's network
namespace + ``bwrap`` with its own user namespace, ``--cap-drop ALL``, the seccomp filter, the
sealed ``.git`` and the full mount plan — and, as root, the per-command pids cgroup — against
a plain spawn with the allow-listed environment). The probe line says what was on. The
session network is started before timing, as it is once per session. Target: at most 15 ms
added per call. Run: ``make bench`` (or ``python bench/sandbox_exec.py 200``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import PreparedCall
from xclaw.sandbox import BwrapSandbox, HostSandbox
from xclaw.sandbox.bwrap import bwrap_problem
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.registry import ToolRegistry

TARGET_MS = 15.0


async def ms_per_call(root: Path, sandbox: object, calls: int) -> list[float]:
    box = ToolRegistry(exec_tools()).bind(Workspace(root, sandbox=sandbox))
    prepared = box.prepare(ToolCallPart("c", "terminal.exec", {"program": "true"}))
    assert isinstance(prepared, PreparedCall)
    times: list[float] = []
    try:
        for _ in range(calls + 5):
            start = time.perf_counter()
            result = await box.execute(prepared, lambda stream, text: None)
            times.append((time.perf_counter() - start) * 1000)
            assert result.ok, result
    finally:
        await box.workspace.close()
    return times[5:]  # the first calls start the session network and warm caches


async def main(calls: int) -> int:
    problem = bwrap_problem()
    if problem is not None:
        print(f"sandbox_exec: cannot measure, {problem}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        host = await ms_per_call(root, HostSandbox(), calls)
        boxed = await ms_per_call(root, BwrapSandbox(), calls)
    from xclaw.sandbox.probe import probe_bwrap

    print(f"sandbox: {probe_bwrap().summary()}")
    h, b = statistics.median(host), statistics.median(boxed)
    added = b - h
    print(f"terminal.exec `true`, {calls} calls, median ms per call")
    print(f"  xclaw bwrap sandbox : {b:7.2f} ms")
    print(f"  host (no sandbox)   : {h:7.2f} ms")
    print(f"  ratio bwrap/host    : {b / h:7.2f}x   added {added:.2f} ms (target <= {TARGET_MS})")
    return 0 if added <= TARGET_MS else 2


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)))
