"""terminal.exec against real subprocesses, through the registry's prepare + execute path."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.tools.procs import alive, tree_alive

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import Command, PreparedCall
from xclaw.sandbox import proctree
from xclaw.sandbox.host import HostSandbox
from xclaw.tools import exec as exec_mod
from xclaw.tools.base import Workspace
from xclaw.tools.exec import OUTPUT_CAP_CHARS, HeadTailBuffer, exec_tools
from xclaw.tools.output import head_tail
from xclaw.tools.registry import BoundToolbox, ToolRegistry

PY = sys.executable

# A leader that ignores SIGTERM and leaves three descendants that ignore it too: one in its
# process group, one that called setsid(), and one orphaned daemon (double fork + setsid)
# that only the environment tag can find. Every process appends its pid to argv[1].
TREE = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    def record():
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
    record()
    if os.fork() == 0:
        record(); time.sleep(30); os._exit(0)
    if os.fork() == 0:
        os.setsid(); record()
        if os.fork() == 0:
            record(); time.sleep(30); os._exit(0)
        time.sleep(30); os._exit(0)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(0.1); record(); time.sleep(30); os._exit(0)
        os._exit(0)
    print("ready", flush=True)
    time.sleep(30)
    """
)
TREE_SIZE = 5


@pytest.fixture
def pids_file(root: Path) -> Iterator[Path]:
    """Where TREE records its pids; anything left alive after a failed test is killed."""
    path = root / "pids"
    yield path
    for pid in read_pids(path):
        if alive(pid) and b"tree.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)


def toolbox(root: Path, output_dir: Path | None = None, mode: str = "bwrap") -> BoundToolbox:
    sandbox = HostSandbox() if mode == "host" else None  # None: the default, bwrap
    workspace = Workspace(root, output_dir=output_dir, sandbox=sandbox)
    return ToolRegistry(exec_tools()).bind(workspace)


def prepare(tb: BoundToolbox, args: dict[str, object]) -> PreparedCall:
    prepared = tb.prepare(ToolCallPart("c1", "terminal.exec", args))
    assert isinstance(prepared, PreparedCall), prepared
    return prepared


async def run(
    tb: BoundToolbox, args: dict[str, object], chunks: list[tuple[str, str]] | None = None
) -> ToolResult:
    seen = chunks if chunks is not None else []
    return await tb.execute(prepare(tb, args), lambda stream, text: seen.append((stream, text)))


def file_facts(path: Path) -> tuple[str, int]:
    return path.read_text(), stat.S_IMODE(path.stat().st_mode)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


async def wait_for_pids(path: Path, count: int) -> list[int]:
    for _ in range(200):
        if len(pids := read_pids(path)) >= count:
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError(f"only {read_pids(path)} started")


def python(code: str) -> dict[str, object]:
    return {"program": PY, "argv": ["-c", textwrap.dedent(code)]}


async def test_success_captures_streams_apart_and_records_verification(root: Path) -> None:
    tb = toolbox(root)
    r = await run(tb, python("import sys; print('out'); print('err', file=sys.stderr)"))
    assert r.ok and r.error_code is None
    assert r.data["stdout"] == "out\n" and r.data["stderr"] == "err\n"
    assert r.data["exit_code"] == 0 and r.data["signal"] is None and not r.data["timed_out"]
    assert r.data["command"][0] == PY and r.data["stdout_file"] is None
    verification = tb.workspace.last_verification
    assert verification is not None
    assert verification["ok"] is True and verification["exit_code"] == 0
    assert verification["command"] == r.data["command"] and verification["at"]


async def test_nonzero_exit_is_command_failed_with_data(root: Path) -> None:
    tb = toolbox(root)
    r = await run(tb, python("import sys; sys.stderr.write('bad input'); sys.exit(3)"))
    assert not r.ok and r.error_code == "COMMAND_FAILED"
    assert r.message == "Command exited with code 3." and "stderr" in r.hint
    assert r.data["exit_code"] == 3 and r.data["stderr"] == "bad input"
    assert tb.workspace.last_verification is not None
    assert tb.workspace.last_verification["ok"] is False


async def test_death_by_signal_is_named(root: Path) -> None:
    r = await run(toolbox(root), python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert r.error_code == "COMMAND_FAILED"
    assert r.data["signal"] == "SIGKILL" and r.data["exit_code"] is None
    assert "SIGKILL" in r.message


async def test_chunks_stream_live_in_order(root: Path) -> None:
    code = """
        import sys, time
        for stream, word in [(sys.stdout, 'one'), (sys.stderr, 'two'), (sys.stdout, 'three')]:
            stream.write(word + '\\n'); stream.flush(); time.sleep(0.15)
    """
    chunks: list[tuple[str, str]] = []
    r = await run(toolbox(root), python(code), chunks)
    assert r.ok
    merged: list[tuple[str, str]] = []
    for stream, text in chunks:
        if merged and merged[-1][0] == stream:
            merged[-1] = (stream, merged[-1][1] + text)
        else:
            merged.append((stream, text))
    assert merged == [("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")]


async def test_multibyte_character_split_across_chunks(root: Path) -> None:
    code = """
        import sys, time
        sys.stdout.buffer.write(b'caf\\xc3'); sys.stdout.flush(); time.sleep(0.15)
        sys.stdout.buffer.write(b'\\xa9\\n'); sys.stdout.flush()
    """
    chunks: list[tuple[str, str]] = []
    r = await run(toolbox(root), python(code), chunks)
    assert len(chunks) >= 2, "the test needs the bytes to arrive in two chunks"
    assert "".join(t for _, t in chunks) == "café\n" == r.data["stdout"]


async def test_long_output_keeps_head_and_tail_and_the_whole_file(root: Path) -> None:
    out_dir = root.parent / "out"
    tb = toolbox(root, output_dir=out_dir)
    r = await run(tb, python("print('HEAD' + 'x' * 100000 + 'TAIL')"))
    assert r.ok and r.data["stdout_truncated"] and not r.data["stderr_truncated"]
    shown = r.data["stdout"]
    assert shown.startswith("HEAD") and shown.endswith("TAIL\n")
    assert "characters truncated" in shown and len(shown) < OUTPUT_CAP_CHARS + 100
    full = Path(r.data["stdout_file"])
    assert full.parent == out_dir and full.name == "exec-c1.stdout"
    assert file_facts(full) == ("HEAD" + "x" * 100000 + "TAIL\n", 0o600)
    assert stat.S_IMODE(os.stat(out_dir).st_mode) == 0o700
    again = await run(tb, python("print('second')"))
    assert again.data["stdout_file"] != r.data["stdout_file"]


async def test_live_output_of_a_runaway_program_is_capped(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exec_mod, "LIVE_CAP_CHARS", 1000)
    chunks: list[tuple[str, str]] = []
    r = await run(toolbox(root), python("print('y' * 50000)"), chunks)
    live = "".join(text for _, text in chunks)
    assert live.startswith("y" * 1000) and live.count("y") == 1000
    assert "live output paused" in live
    assert r.data["stdout"].endswith("y\n") and r.data["stdout_truncated"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30), st.integers(min_value=3, max_value=60))
def test_head_tail_buffer_matches_head_tail_of_the_whole(chunks: list[str], cap: int) -> None:
    buf = HeadTailBuffer(cap)
    for chunk in chunks:
        buf.add(chunk)
    assert buf.render() == head_tail("".join(chunks), cap)


@pytest.mark.parametrize("mode", ["bwrap", "host"])
async def test_timeout_stops_a_tree_that_ignores_sigterm_and_escapes(
    root: Path, pids_file: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(proctree, "GRACE_S", 0.4)
    (root / "tree.py").write_text(TREE)
    started = time.monotonic()
    args = {"program": PY, "argv": ["tree.py", str(pids_file)], "timeout_ms": 1500}
    r = await run(toolbox(root, mode=mode), args)
    elapsed = time.monotonic() - started
    pids = read_pids(pids_file)
    assert len(pids) == TREE_SIZE, "every process of the tree should have started"
    assert tree_alive(str(pids_file)) == []
    assert not r.ok and r.error_code == "COMMAND_TIMEOUT" and "1500 ms" in r.message
    assert r.data["timed_out"] and r.data["signal"] == "SIGKILL" and r.data["exit_code"] is None
    assert r.data["stdout"] == "ready\n"
    assert 1.5 + 0.4 <= elapsed < 6, "SIGTERM was ignored, so SIGKILL followed the grace"


async def test_timeout_of_a_polite_program_needs_no_grace(root: Path) -> None:
    started = time.monotonic()
    r = await run(toolbox(root), {"program": "sleep", "argv": ["30"], "timeout_ms": 200})
    assert r.error_code == "COMMAND_TIMEOUT" and r.data["signal"] == "SIGTERM"
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("mode", ["bwrap", "host"])
async def test_cancellation_stops_the_tree_and_propagates(
    root: Path, pids_file: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(proctree, "GRACE_S", 0.3)
    (root / "tree.py").write_text(TREE)
    tb = toolbox(root, mode=mode)
    task = asyncio.create_task(run(tb, {"program": PY, "argv": ["tree.py", str(pids_file)]}))
    pids = await wait_for_pids(pids_file, TREE_SIZE)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(pids) == TREE_SIZE and tree_alive(str(pids_file)) == []


@pytest.mark.parametrize("mode", ["bwrap", "host"])
async def test_background_process_holding_the_pipes_is_stopped(
    root: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(exec_mod, "DRAIN_S", 0.2)
    args = {"program": "sh", "argv": ["-c", "sleep 30.0271 & echo $!"]}
    r = await run(toolbox(root, mode=mode), args)
    assert r.ok
    # On the host xclaw stops it; in the sandbox its PID namespace ends with the command.
    assert r.data.get("background_stopped") is (True if mode == "host" else None)
    assert tree_alive("30.0271") == []


async def test_stdin_is_sent_and_closed(root: Path) -> None:
    r = await run(toolbox(root), {"program": "cat", "stdin": "hello\nworld\n"})
    assert r.ok and r.data["stdout"] == "hello\nworld\n"


async def test_stdin_defaults_to_empty(root: Path) -> None:
    r = await run(toolbox(root), {"program": "cat", "timeout_ms": 5000})
    assert r.ok and r.data["stdout"] == ""


async def test_cwd_and_extra_env_reach_the_program(root: Path) -> None:
    (root / "sub").mkdir()
    code = "import os; print(os.getcwd()); print(os.environ['XCLAW_TEST_VALUE'])"
    args = {**python(code), "cwd": "sub", "env": {"XCLAW_TEST_VALUE": "v1"}}
    r = await run(toolbox(root), args)
    assert r.data["stdout"] == f"{root / 'sub'}\nv1\n"


async def test_program_with_a_slash_is_relative_to_cwd(root: Path) -> None:
    (root / "bin").mkdir()
    script = root / "bin" / "hello.sh"
    script.write_text("#!/bin/sh\necho hello from $0\n")
    script.chmod(0o755)
    r = await run(toolbox(root), {"program": "./hello.sh", "cwd": "bin"})
    assert r.ok and r.data["stdout"] == f"hello from {script}\n"


async def test_command_not_found(root: Path) -> None:
    r = await run(toolbox(root), {"program": "xclaw-no-such-program-zz"})
    assert not r.ok and r.error_code == "COMMAND_NOT_FOUND" and r.hint
    r = await run(toolbox(root), {"program": "./missing.sh"})
    assert r.error_code == "COMMAND_NOT_FOUND"


async def test_file_without_execute_bit_is_not_executable(root: Path) -> None:
    (root / "plain.sh").write_text("echo hi\n")
    r = await run(toolbox(root), {"program": "./plain.sh"})
    assert r.error_code == "COMMAND_NOT_EXECUTABLE" and "interpreter" in r.hint


async def test_cwd_outside_the_root_is_refused_and_nothing_runs(root: Path) -> None:
    marker = root.parent / "ran"
    r = await run(toolbox(root), {"program": "touch", "argv": [str(marker)], "cwd": ".."})
    assert r.error_code == "PATH_OUTSIDE_ROOT"
    assert not marker.exists()


async def test_cwd_must_be_a_directory(root: Path) -> None:
    (root / "file.txt").write_text("x")
    r = await run(toolbox(root), {"program": "true", "cwd": "file.txt"})
    assert r.error_code == "PATH_NOT_DIRECTORY"


@pytest.mark.parametrize("name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES"])
async def test_loader_variables_are_refused(root: Path, name: str) -> None:
    marker = root / "ran"
    r = await run(
        toolbox(root), {"program": "touch", "argv": [str(marker)], "env": {name: "/tmp/x.so"}}
    )
    assert r.error_code == "ENV_VAR_DENIED" and name in r.message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        ({"program": "true", "timeout_ms": 50}, "timeout_ms"),
        ({"program": "true", "timeout_ms": 3_600_001}, "timeout_ms"),
        ({"program": " "}, "program"),
        ({"program": "echo", "argv": ["a\x00b"]}, "NUL"),
        ({"program": "true", "env": {"BAD-NAME": "x"}}, "BAD-NAME"),
    ],
)
async def test_invalid_arguments(root: Path, args: dict[str, object], detail: str) -> None:
    r = await run(toolbox(root), args)
    assert r.error_code == "TOOL_ARGUMENTS_INVALID" and detail in r.message


def test_schema_rejects_unknown_and_mistyped_arguments(root: Path) -> None:
    tb = toolbox(root)
    for args in ({"program": "ls", "shell": True}, {"program": "ls", "argv": "-la"}):
        result = tb.prepare(ToolCallPart("c1", "terminal.exec", args))
        assert isinstance(result, ToolResult) and result.error_code == "TOOL_ARGUMENTS_INVALID"


def test_access_names_the_command_for_the_policy(root: Path) -> None:
    prepared = prepare(toolbox(root), {"program": "npm", "argv": ["run", "build"], "cwd": "web"})
    assert prepared.access.command == Command("npm", ("run", "build"), "web")
    assert prepared.spec.risk == "execute" and not prepared.spec.read_only
