"""The bwrap sandbox for real: privilege drop, protected files, the session network, the
choice of mode and what a project file may not change."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import xclaw.sandbox as sandbox_pkg
from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall
from xclaw.sandbox import (
    BwrapOptions,
    BwrapSandbox,
    CommandRequest,
    HostSandbox,
    Launch,
    make_sandbox,
)
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.process import process_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry

NOBODY = 65534


async def call(box: BoundToolbox, name: str, **args: Any) -> ToolResult:
    prepared = box.prepare(ToolCallPart("c1", name, args))
    assert isinstance(prepared, PreparedCall), prepared
    return await box.execute(prepared, lambda stream, text: None)


@pytest.fixture
async def box(root: Path) -> AsyncIterator[BoundToolbox]:
    b = ToolRegistry([*exec_tools(), *process_tools()]).bind(Workspace(root))
    yield b
    await b.workspace.close()


async def test_commands_can_run_as_an_unprivileged_user() -> None:
    # pytest's own temp folders are owner-only; the other user must be able to reach this one.
    root = Path(tempfile.mkdtemp(prefix="xclaw-run-as-", dir="/tmp"))
    os.chmod(root, 0o777)
    await asyncio.to_thread((root / "owner-only").write_text, "root's\n")
    os.chmod(root / "owner-only", 0o600)
    sandbox = BwrapSandbox(BwrapOptions(run_as=(NOBODY, NOBODY)))
    b = ToolRegistry(exec_tools()).bind(Workspace(root, sandbox=sandbox))
    try:
        who = await call(b, "terminal.exec", program="id", argv=["-u"])
        assert who.ok and who.data["stdout"].strip() == str(NOBODY)
        denied = await call(b, "terminal.exec", program="cat", argv=["owner-only"])
        assert not denied.ok and "Permission denied" in denied.data["stderr"]
        made = await call(b, "terminal.exec", program="touch", argv=["made"])
        assert made.ok and (root / "made").stat().st_uid == NOBODY
    finally:
        await b.workspace.close()
        shutil.rmtree(root, ignore_errors=True)


async def test_git_folder_cannot_be_swapped_and_its_config_is_read_only(
    box: BoundToolbox, root: Path
) -> None:
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(root)], check=True)
    before = (root / ".git" / "config").read_text()
    script = "echo '[core] fsmonitor = evil' >> .git/config; mv .git .git-old; echo done"
    r = await call(box, "terminal.exec", program="sh", argv=["-c", script])
    assert "Read-only file system" in r.data["stderr"]
    assert (root / ".git" / "config").read_text() == before
    assert not (root / ".git-old").exists()
    hook = await call(box, "terminal.exec", program="cp", argv=["/bin/true", ".git/hooks/x"])
    assert not hook.ok and not (root / ".git" / "hooks" / "x").exists()


async def test_a_created_agent_config_is_moved_aside(box: BoundToolbox, root: Path) -> None:
    r = await call(box, "terminal.exec", program="sh", argv=["-c", "echo 'model: x' > xclaw.yaml"])
    assert r.error_code == "PROTECTED_FILE_WRITTEN" and "xclaw.yaml" in r.message
    assert not (root / "xclaw.yaml").exists()
    [kept] = [p for p in os.listdir(root) if p.endswith(".xclaw-rejected")]
    kept = root / kept
    assert kept.read_text() == "model: x\n"  # nothing is lost


async def test_a_new_repository_that_would_run_programs_is_defused(
    box: BoundToolbox, root: Path
) -> None:
    script = (
        "git init -q . && git config core.fsmonitor 'touch PWNED' && "
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit"
    )
    r = await call(box, "terminal.exec", program="sh", argv=["-c", script])
    assert r.error_code == "PROTECTED_FILE_WRITTEN"
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert (
        "fsmonitor" not in (root / ".git" / "config").read_text()
        if (root / ".git" / "config").exists()
        else True
    )
    await asyncio.to_thread(
        subprocess.run, ["git", "-C", str(root), "status"], capture_output=True, check=False
    )
    assert not (root / "PWNED").exists()


async def test_session_commands_share_one_loopback_and_the_host_reaches_servers(
    box: BoundToolbox, root: Path
) -> None:
    argv = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"]
    started = await call(
        box, "process.start", program=sys.executable, argv=argv, wait_for_url_ms=10_000
    )
    assert started.ok, started
    [url] = started.data["detectedUrls"]
    # The URL names the host side of the bridge; inside, the server listens on its own port.
    fetch = "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).status)"
    inner_port = started.data["stdout"].split("port ")[1].split()[0]
    inside = await call(
        box,
        "terminal.exec",
        program=sys.executable,
        argv=["-c", fetch, f"http://127.0.0.1:{inner_port}/"],
    )
    assert inside.ok and inside.data["stdout"].strip() == "200"
    host_status = await asyncio.to_thread(_http_status, url)
    assert host_status == 200


def _http_status(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        return int(response.status)


def test_the_host_loopback_is_out_of_reach_unless_the_network_was_approved(root: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    code = (
        "import socket,sys\n"
        "try:\n socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n"
        " print('connected')\n"
        "except OSError as e:\n print('refused', e)\n"
    )
    sandbox = BwrapSandbox()
    request = CommandRequest("python3", "/usr/bin/python3", ("-c", code, str(port)), root, {}, root)
    try:
        for network, expected in ((False, "refused"), (True, "connected")):
            launch = sandbox.launch(request, tag="t", network=network)
            out = _spawn(launch)
            assert out.stdout.startswith(expected), (network, out.stdout, out.stderr)
    finally:
        server.close()
        sandbox.network.close_sync()


def test_bwrap_asked_for_but_unusable_is_an_error_and_auto_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox_pkg, "bwrap_problem", lambda: "bubblewrap is not installed")
    with pytest.raises(ConfigError) as err:
        make_sandbox("bwrap")
    assert err.value.code == "SANDBOX_UNAVAILABLE"
    choice = make_sandbox("auto")
    assert isinstance(choice.sandbox, HostSandbox) and choice.mode == "host"
    assert "host mode because bubblewrap is not installed" in choice.warning
    chosen = make_sandbox("host")
    assert "host mode (chosen)" in chosen.warning


@pytest.mark.parametrize(
    "body",
    [
        "sandbox:\n  mode: host\n",
        "sandbox:\n  read_only_paths: [~/.ssh]\n",
        "sandbox:\n  env_passthrough: [OPENAI_API_KEY]\n",
        "sandbox:\n  run_as_uid: 1\n",
    ],
)
def test_a_project_file_cannot_weaken_the_sandbox(root: Path, body: str) -> None:
    (root / "xclaw.yaml").write_text(body)
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"


def test_a_project_file_may_choose_bwrap(root: Path) -> None:
    (root / "xclaw.yaml").write_text("sandbox:\n  mode: bwrap\n")
    assert load_config(root).sandbox.mode == "bwrap"


def test_the_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("SOME_RANDOM_SETTING", "visible?")
    for sandbox in (BwrapSandbox(), HostSandbox()):
        request = CommandRequest("env", "/usr/bin/env", (), root, {"MINE": "1"}, root)
        launch = sandbox.launch(request, tag="t")
        done = _spawn(launch)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert "MINE=1" in out and "PATH=" in out
        assert "hunter2" not in out and "SOME_RANDOM_SETTING" not in out
        if isinstance(sandbox, BwrapSandbox):
            sandbox.network.close_sync()
    assert os.environ["MY_SERVICE_PASSWORD"] == "hunter2hunter2"


def test_launchers_whose_xclaw_died_are_reaped() -> None:
    from xclaw.sandbox.orphans import OWNER_VAR, owner_mark, reap_orphans
    from xclaw.sandbox.proctree import read_stat

    gone = subprocess.Popen(["sleep", "0"])
    info = read_stat(gone.pid)
    gone.wait()  # its pid and start time now name nobody
    dead_mark = f"{gone.pid}:{info.start if info else 1}"
    argv = ["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--", "sleep", "61.75"]
    orphan = subprocess.Popen(argv, env={OWNER_VAR: dead_mark, "PATH": os.defpath})
    ours = subprocess.Popen(argv, env={OWNER_VAR: owner_mark(), "PATH": os.defpath})
    try:
        deadline = 50
        while deadline and not _cmdline_has(orphan.pid, b"61.75"):
            deadline -= 1
            subprocess.run(["sleep", "0.02"], check=True)
        assert reap_orphans() >= 1
        assert orphan.wait(timeout=10) == -9
        assert ours.poll() is None  # its owner (this test) is alive: left alone
    finally:
        for proc in (orphan, ours):
            proc.kill()
            proc.wait()


def _cmdline_has(pid: int, needle: bytes) -> bool:
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _spawn(launch: Launch) -> subprocess.CompletedProcess[str]:
    """Start what a sandbox's ``launch`` says, as the command tools do, and wait for it."""
    return subprocess.run(
        launch.argv,
        executable=launch.executable,
        env=launch.env,
        cwd=launch.cwd,
        pass_fds=launch.pass_fds,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


_KILLED_OWNER = """
import shutil, sys, time
from xclaw.sandbox.netns import SessionNetwork
net = SessionNetwork(shutil.which("bwrap"))
net.ensure()
print(net.socket_path, flush=True)
time.sleep(60)
"""


def test_a_killed_xclaw_s_network_folder_is_swept_and_live_ones_are_kept(tmp_path: Path) -> None:
    from xclaw.sandbox.netns import SessionNetwork, sweep_stale_dirs

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    owner = subprocess.Popen(
        [sys.executable, "-c", _KILLED_OWNER], env=env, stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    with owner.stdout:
        killed_sock = Path(owner.stdout.readline().strip())
    owner.kill()
    owner.wait()
    for _ in range(200):  # the holder dies with it (SIGKILL from bwrap); its folder stays
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(killed_sock))
        except ConnectionRefusedError:
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert killed_sock.parent.is_dir()

    live = SessionNetwork(shutil.which("bwrap") or "bwrap")
    old_empty, young_empty = tmp / "xclaw-net-old", tmp / "xclaw-net-young"
    old_empty.mkdir()
    young_empty.mkdir()
    os.utime(old_empty, (1, 1))
    elsewhere = tmp_path / "keep"
    elsewhere.mkdir()
    (tmp / "xclaw-net-link").symlink_to(elsewhere)
    assert sweep_stale_dirs(str(tmp)) == 2
    assert not killed_sock.parent.exists() and not old_empty.exists()
    assert young_empty.is_dir() and elsewhere.is_dir()
    try:
        tempfile.tempdir = str(tmp)  # the live holder's folder goes there too
        live.ensure()
        assert sweep_stale_dirs(str(tmp)) == 0
        assert Path(live.socket_path).exists() and young_empty.is_dir() and elsewhere.is_dir()
    finally:
        tempfile.tempdir = None
        live.close_sync()
