"""The bwrap sandbox holds whoever runs xclaw: no privilege, no escape, bounded resources.

Every case is an approved command (``--approval allow``: the human said yes, so only the
sandbox stands between the command and the host). The suite runs twice in ``make test``:
as root, and as an unprivileged user that ``tests/unprivileged.sh`` creates.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.security.conftest import call, call_async, dump, output

from xclaw.sandbox.bwrap import BwrapOptions, BwrapSandbox
from xclaw.sandbox.limits import SandboxLimits

PROBE = Path(__file__).with_name("sandbox_probe.py")

# Read-only probes: what a command has inside.
STATUS = {"capeff": "0000000000000000", "capbnd": "0000000000000000", "nonewprivs": "1"}
STATUS["seccomp"] = "2"

# Each must be refused by the kernel (any errno) inside the sandbox.
REFUSED_CALLS = sorted(
    """mount-tmpfs umount-shadow-mask remount-etc-rw fsopen open-tree pivot-root chroot
    unshare-user unshare-mount unshare-net clone-newuser clone3 setns open-by-handle
    name-to-handle keyctl add-key bpf perf-event-open userfaultfd init-module finit-module
    kexec-load syslog-read swapon acct settimeofday process-vm-readv ptrace-attach-init
    tiocsti tioclinux chmod-setuid chmod-setgid fchmod-setuid fchmodat2-setuid
    open-create-setuid openat2 mknod-setuid-file mknod-block-device mknod-char-device
    core-pattern sysctl-write sys-write proc-sysrq""".split()
)
# Refused by the filter itself (EPERM / ENOSYS), whatever else the kernel would say.
FILTERED = {"keyctl", "add-key", "bpf", "userfaultfd", "open-by-handle", "name-to-handle"}
FILTERED |= {"tiocsti", "tioclinux", "clone3", "openat2", "process-vm-readv"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XCLAW_SANDBOX", "bwrap")
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(PROBE, root / "probe.py")
    return root.resolve()


def probe(root: Path, case: str) -> str:
    result = call(root, "terminal.exec", _py("probe.py", case), approval="allow")
    assert result.ok, dump(result)
    return str(result.data["stdout"]).strip()


def _py(*argv: str) -> dict[str, Any]:
    return {"program": "python3", "argv": list(argv), "timeout_ms": 20_000}


@pytest.mark.parametrize("case", sorted(STATUS))
def test_no_privilege_inside(project: Path, case: str) -> None:
    assert probe(project, case) == STATUS[case]


def test_commands_never_run_as_uid_0_inside(project: Path) -> None:
    assert probe(project, "uid") != "0"


def test_setuid_programs_gain_nothing(project: Path) -> None:
    assert "0" not in probe(project, "su-root").split()


@pytest.mark.parametrize("case", REFUSED_CALLS)
def test_kernel_refuses(project: Path, case: str) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    out = probe(project, case)
    assert out.startswith("BLOCKED"), f"{case}: {out}"
    if case in FILTERED:
        assert out.split()[1] in ("EPERM", "ENOSYS"), f"{case}: {out}"
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert not (project / "s.bin").exists() or not (project / "s.bin").stat().st_mode & 0o6000
    assert not (project / "f.txt").stat().st_mode & 0o6000


def test_no_setuid_file_left_in_the_project_by_any_tool(project: Path) -> None:
    script = (
        "cp /bin/true t1; chmod u+s t1; install -m 4755 /bin/true t2; "
        "cp -p /bin/su t3 2>/dev/null; tar -cf a.tar t1; true"
    )
    call(project, "terminal.exec", {"program": "sh", "argv": ["-c", script]}, approval="allow")
    for path in project.iterdir():
        assert not path.lstat().st_mode & 0o6000, f"{path.name} is setuid/setgid"


def test_shadow_stays_masked(project: Path) -> None:
    script = "umount /etc/shadow 2>/dev/null; cat /etc/shadow 2>/dev/null | head -c 200; true"
    result = call(
        project, "terminal.exec", {"program": "sh", "argv": ["-c", script]}, approval="allow"
    )
    assert ":" not in output(result), "password hashes visible"


# --- resources ---------------------------------------------------------------------------


def _bounded(root: Path, limits: SandboxLimits, args: dict[str, Any]) -> Any:
    from xclaw.tools.base import Workspace

    async def go() -> Any:
        sandbox = BwrapSandbox(BwrapOptions(limits=limits))
        ws = Workspace(root, sandbox=sandbox)
        return await call_async(root, "terminal.exec", args, approval="allow", workspace=ws)

    return asyncio.run(go())


def test_fork_bomb_stops_at_the_process_limit(project: Path) -> None:
    script = "for i in $(seq 200); do sleep 5 & done; wait"
    limits = SandboxLimits(max_processes=64)
    result = _bounded(project, limits, {"program": "sh", "argv": ["-c", script]})
    assert not result.ok
    assert "fork" in output(result).lower() or result.error_code == "SANDBOX_PROCESS_LIMIT"
    if os.geteuid() == 0:  # the cgroup says so; under RLIMIT_NPROC only the shell does
        assert result.error_code == "SANDBOX_PROCESS_LIMIT", dump(result)


def test_private_tmp_is_bounded(project: Path) -> None:
    write = "open('/tmp/fill','wb').write(b'x' * (48 << 20))"
    result = _bounded(project, SandboxLimits(tmp_bytes=16 << 20), _py("-c", write))
    assert result.error_code == "SANDBOX_SPACE_LIMIT", dump(result)


def test_private_home_is_bounded(project: Path) -> None:
    write = "import os; open(os.path.expanduser('~/fill'),'wb').write(b'x' * (48 << 20))"
    result = _bounded(project, SandboxLimits(home_bytes=16 << 20), _py("-c", write))
    assert result.error_code == "SANDBOX_SPACE_LIMIT", dump(result)


def test_file_size_limit_has_a_code(project: Path) -> None:
    write = "open('big.bin','wb').write(b'x' * (8 << 20))"
    result = _bounded(project, SandboxLimits(max_file_bytes=1 << 20), _py("-c", write))
    assert result.error_code == "SANDBOX_FILE_SIZE_LIMIT", dump(result)
    assert (project / "big.bin").stat().st_size <= 1 << 20
