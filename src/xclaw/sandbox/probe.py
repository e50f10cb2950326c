"""What the bwrap sandbox really gives a command on this machine, measured, not assumed.

``probe_bwrap`` starts one command the way every command starts and reads its
``/proc/self/status`` and ``uid_map``: the ids inside and outside, capabilities, no-new-privs,
the seccomp mode and the process limit. ``doctor`` prints it; a missing part is a warning.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from xclaw.sandbox.base import CommandRequest
from xclaw.sandbox.bwrap import BwrapOptions, BwrapSandbox, bwrap_problem
from xclaw.sandbox.limits import pids_base
from xclaw.sandbox.seccomp import filter_program

_SCRIPT = "cat /proc/self/status; echo MAP; cat /proc/self/uid_map"


@dataclass(frozen=True, slots=True)
class SandboxReport:
    inside_uid: int | None = None
    outside_uid: int | None = None
    user_namespace: bool = False
    capabilities: str = ""  # CapEff as hex
    no_new_privs: bool = False
    seccomp: bool = False
    process_limit: str = ""  # how the process count is bounded
    problems: tuple[str, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        caps = "none" if self.capabilities.strip("0") == "" else self.capabilities
        return (
            f"uid {self.inside_uid} inside (host uid {self.outside_uid}), user namespace "
            f"{'yes' if self.user_namespace else 'NO'}, capabilities {caps}, no-new-privs "
            f"{'yes' if self.no_new_privs else 'NO'}, seccomp {'on' if self.seccomp else 'OFF'}, "
            f"processes {self.process_limit}"
        )


def probe_bwrap(options: BwrapOptions | None = None) -> SandboxReport:
    problem = bwrap_problem()
    if problem is not None:
        return SandboxReport(problems=(problem,))
    sandbox = BwrapSandbox(options or BwrapOptions())
    with tempfile.TemporaryDirectory(prefix="xclaw-probe-") as tmp:
        root = Path(tmp).resolve()
        os.chmod(root, 0o755)
        request = CommandRequest("sh", "/bin/sh", ("-c", _SCRIPT), root, {}, root)
        launch = sandbox.launch(request, tag=os.urandom(8).hex())
        try:
            done = subprocess.run(
                launch.argv, **launch.spawn_options(), capture_output=True, timeout=30, check=False
            )
        finally:
            launch.started(None)
            sandbox.network.close_sync()
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()[-300:]
        return SandboxReport(problems=(f"the probe command failed: {err}",))
    return _report(done.stdout.decode(errors="replace"), sandbox)


def _report(text: str, sandbox: BwrapSandbox) -> SandboxReport:
    status, _, uid_map = text.partition("MAP\n")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    inside = int(fields.get("Uid", "-1").split()[0])
    mapping = uid_map.split()
    userns = len(mapping) >= 3 and mapping[:3] != ["0", "0", "4294967295"]
    caps = fields.get("CapEff", "").strip()
    report = SandboxReport(
        inside_uid=inside,
        outside_uid=os.getuid() if sandbox.options.run_as is None else sandbox.options.run_as[0],
        user_namespace=userns,
        capabilities=caps,
        no_new_privs=fields.get("NoNewPrivs", "").strip() == "1",
        seccomp=fields.get("Seccomp", "").strip() == "2",
        process_limit=_process_limit(sandbox),
    )
    problems = []
    if not report.user_namespace:
        problems.append("no user namespace")
    if caps.strip("0"):
        problems.append(f"capabilities left: {caps}")
    if inside == 0:
        problems.append("commands run as uid 0 inside")
    if not report.no_new_privs:
        problems.append("no-new-privs is off")
    if not report.seccomp:
        why = "libseccomp is missing" if filter_program() is None else "not applied"
        problems.append(f"no seccomp filter ({why})")
    if report.process_limit.startswith("NONE"):
        problems.append("no process limit")
    return dataclasses.replace(report, problems=tuple(problems))


def _process_limit(sandbox: BwrapSandbox) -> str:
    n = sandbox.options.limits.max_processes
    if sandbox.options.run_as is None and os.geteuid() == 0:
        base = pids_base()
        return f"{n} (pids cgroup)" if base is not None else "NONE (root, no pids cgroup)"
    return f"{n} (RLIMIT_NPROC)"
