"""process.* tools and the ProcessManager against real long-running processes."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import textwrap
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.procs import alive, tree_alive

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import Command, PreparedCall
from xclaw.sandbox import proctree
from xclaw.tools import process as process_mod
from xclaw.tools.base import Workspace
from xclaw.tools.process import ProcessManager, detect_urls, process_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry

PY = sys.executable

# Ignores SIGTERM and leaves a child that called setsid(); both append their pid to argv[1].
STUBBORN = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    def record():
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
    record()
    if os.fork() == 0:
        os.setsid(); record(); time.sleep(30); os._exit(0)
    print("up", flush=True)
    time.sleep(30)
    """
)


@pytest.fixture
async def tb(root: Path) -> AsyncIterator[BoundToolbox]:
    box = ToolRegistry(process_tools()).bind(Workspace(root))
    yield box
    await box.workspace.close()


async def call(tb: BoundToolbox, name: str, **args: Any) -> ToolResult:
    prepared = tb.prepare(ToolCallPart("c1", name, args))
    assert isinstance(prepared, PreparedCall), prepared
    return await tb.execute(prepared, lambda stream, text: None)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def read_text(path: str) -> str:
    return Path(path).read_text()


async def wait_for_pids(path: Path, count: int) -> list[int]:
    for _ in range(200):
        if len(pids := read_pids(path)) >= count:
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError(f"only {read_pids(path)} started")


def http_get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.status)


def manager(tb: BoundToolbox) -> ProcessManager:
    pm = tb.workspace.processes
    assert isinstance(pm, ProcessManager)
    return pm


async def test_dev_server_url_is_detected_and_answers(tb: BoundToolbox) -> None:
    assert tb.workspace.processes is None
    argv = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"]
    r = await call(tb, "process.start", program=PY, argv=argv, wait_for_url_ms=10_000)
    assert r.ok, r
    assert r.data["processId"] == "proc_01" and r.data["status"] == "running"
    [url] = r.data["detectedUrls"]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/")
    assert "Serving HTTP" in r.data["stdout"] and url in r.message
    assert await asyncio.to_thread(http_get, url) == 200

    seen = ""
    for _ in range(100):  # the access log line comes a moment after the response
        read = await call(tb, "process.read", process_id="proc_01")
        assert read.ok and "Serving HTTP" not in read.data["stdout"], "start returned that"
        seen += read.data["stderr"]
        if "GET / HTTP" in seen:
            break
        await asyncio.sleep(0.05)
    assert "GET / HTTP" in seen
    again = await call(tb, "process.read", process_id="proc_01")
    assert again.data["stdout"] == "" and again.data["stderr"] == ""
    assert again.data["status"] == "running" and again.data["detectedUrls"] == [url]

    stopped = await call(tb, "process.stop", process_id="proc_01")
    assert stopped.ok and stopped.data["status"] == "stopped"
    assert stopped.data["signal"] == "SIGTERM"
    assert not alive(r.data["pid"])


async def test_early_exit_is_a_failure_with_the_output(tb: BoundToolbox) -> None:
    code = "import sys; print('boom', file=sys.stderr); sys.exit(2)"
    r = await call(tb, "process.start", program=PY, argv=["-c", code])
    assert not r.ok and r.error_code == "PROCESS_EXITED"
    assert r.data["exit_code"] == 2 and r.data["status"] == "exited"
    assert "boom" in r.data["stderr"] and "code 2" in r.message
    for _ in range(50):  # with no children left, the watcher reaps it: no zombie lingers
        if not await asyncio.to_thread(os.path.exists, f"/proc/{r.data['pid']}"):
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the exited process was not reaped")
    stopped = await call(tb, "process.stop", process_id=r.data["processId"])
    assert stopped.data["status"] == "exited" and stopped.data["exit_code"] == 2


async def test_no_url_within_the_wait_is_still_a_running_start(tb: BoundToolbox) -> None:
    r = await call(tb, "process.start", program="sleep", argv=["30"], wait_for_url_ms=100)
    assert r.ok and r.data["status"] == "running" and r.data["detectedUrls"] == []
    assert "no URL appeared within 100 ms" in r.message


async def test_stop_kills_the_whole_tree(
    tb: BoundToolbox, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proctree, "GRACE_S", 0.3)
    (root / "stubborn.py").write_text(STUBBORN)
    pids_file = root / "pids"
    argv = ["stubborn.py", str(pids_file)]
    r = await call(tb, "process.start", program=PY, argv=argv, wait_for_url_ms=300)
    assert r.ok and r.data["stdout"] == "up\n"
    await wait_for_pids(pids_file, 2)
    assert len(tree_alive(str(pids_file))) >= 2  # and the sandbox launcher, if any
    stopped = await call(tb, "process.stop", process_id=r.data["processId"])
    assert stopped.data["signal"] == "SIGKILL"
    assert tree_alive(str(pids_file)) == []


async def test_unknown_ids_and_other_sessions_are_not_visible(tb: BoundToolbox, root: Path) -> None:
    for name in ("process.read", "process.stop"):
        r = await call(tb, name, process_id="proc_01")
        assert r.error_code == "PROCESS_NOT_FOUND" and "process.list" in r.hint
    await call(tb, "process.start", program="sleep", argv=["30"], wait_for_url_ms=0)
    other = ToolRegistry(process_tools()).bind(Workspace(root))
    r = await call(other, "process.read", process_id="proc_01")
    assert r.error_code == "PROCESS_NOT_FOUND"


async def test_list_and_stop_all(tb: BoundToolbox) -> None:
    for _ in range(2):
        await call(tb, "process.start", program="sleep", argv=["30"], wait_for_url_ms=0)
    listed = await call(tb, "process.list")
    rows = listed.data["processes"]
    assert [(p["processId"], p["status"]) for p in rows] == [
        ("proc_01", "running"),
        ("proc_02", "running"),
    ]
    assert rows[0]["command"] == ["sleep", "30"]
    assert await manager(tb).stop_all() == ["proc_01", "proc_02"]
    assert not any(alive(p["pid"]) for p in rows)
    assert {p["status"] for p in manager(tb).list()} == {"stopped"}


async def test_detach_all_leaves_processes_running(tb: BoundToolbox) -> None:
    r = await call(tb, "process.start", program="sleep", argv=["30"], wait_for_url_ms=0)
    pm = manager(tb)
    mp = pm.get("proc_01")
    try:
        assert pm.detach_all() == ["proc_01"]
        await asyncio.sleep(0.1)
        assert alive(r.data["pid"]) and mp.status == "detached"
        assert await pm.stop_all() == []
        assert alive(r.data["pid"])
    finally:
        os.killpg(mp.pid, signal.SIGKILL)
        await asyncio.to_thread(mp.popen.wait)
        # A detached process keeps writing its logs, so the manager left its temp dir.
        await asyncio.to_thread(shutil.rmtree, mp.logs["stdout"].path.parent)


async def test_reads_past_the_memory_window_point_to_the_log(
    tb: BoundToolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_mod, "KEEP_CHARS", 1000)
    code = "import time; print('x' * 5000 + 'END', flush=True); time.sleep(30)"
    r = await call(tb, "process.start", program=PY, argv=["-c", code], wait_for_url_ms=300)
    assert r.ok and r.data["stdout_truncated"]
    assert "earlier characters only in" in r.data["stdout"]
    assert r.data["stdout"].endswith("END\n")
    assert read_text(r.data["stdout_file"]) == "x" * 5000 + "END\n"


async def test_arguments_are_checked(tb: BoundToolbox) -> None:
    r = await call(tb, "process.start", program="sleep", argv=["1"], wait_for_url_ms=-1)
    assert r.error_code == "TOOL_ARGUMENTS_INVALID"
    r = await call(tb, "process.start", program="sleep", env={"LD_PRELOAD": "x"})
    assert r.error_code == "ENV_VAR_DENIED"
    r = await call(tb, "process.start", program="sleep", cwd="..")
    assert r.error_code == "PATH_OUTSIDE_ROOT"
    r = await call(tb, "process.start", program="xclaw-no-such-program-zz")
    assert r.error_code == "COMMAND_NOT_FOUND"
    assert tb.workspace.processes is None or manager(tb).list() == []


def test_specs_and_policy_access(root: Path) -> None:
    box = ToolRegistry(process_tools()).bind(Workspace(root))
    specs = {s.name: s for s in box.specs()}
    assert {n: s.read_only for n, s in specs.items()} == {
        "process.start": False,
        "process.read": True,
        "process.stop": False,
        "process.list": True,
    }
    prepared = box.prepare(
        ToolCallPart("c1", "process.start", {"program": "npm", "argv": ["run", "dev"]})
    )
    assert isinstance(prepared, PreparedCall)
    assert prepared.access.command == Command("npm", ("run", "dev"), ".")


@pytest.mark.parametrize(
    ("text", "urls"),
    [
        (
            "  ➜  Local:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n",
            ["http://localhost:5173/"],
        ),
        (
            "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...",
            ["http://127.0.0.1:8000/"],
        ),
        (
            "listening on http://[::]:3000, also http://[::1]:3000.",
            ["http://127.0.0.1:3000", "http://[::1]:3000"],
        ),
        (
            "ready at https://127.0.0.1:8443/app?x=1; again https://127.0.0.1:8443/app?x=1",
            ["https://127.0.0.1:8443/app?x=1"],
        ),
        ("see https://github.com/org/repo and http://host:notaport/", []),
    ],
)
def test_detect_urls(text: str, urls: list[str]) -> None:
    assert detect_urls(text) == urls
