"""Trusted checks: a check id resolves to the user's configured argv, run in the worktree.

No shell, a minimal environment (the sandbox's allow-list), bounded and scrubbed output. A
timeout, a signal or a non-zero exit is a failure the model cannot talk its way out of.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xclaw.config import CheckConfig
from xclaw.patch.gitio import PatchError, run_program
from xclaw.redact import redact
from xclaw.sandbox.base import LocalSandbox

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class CheckResult:
    check_id: str
    ok: bool
    status: str  # passed | failed | timed-out
    exit_code: int | None
    duration_ms: int
    output: str
    version: int  # the worktree change version it ran on

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clean_output(raw: bytes, worktree: Path, cap: int) -> str:
    """Text without control sequences, secrets or the worktree's real path; head and tail."""
    text = _ANSI.sub("", raw.decode("utf-8", "replace")).replace(str(worktree), ".")
    text = redact(text)
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n[... {len(text) - cap} characters cut ...]\n{text[-half:]}"


def _find_program(program: str) -> str | None:
    found = program if "/" in program else shutil.which(program)
    return found if found is not None and Path(found).is_file() else None


async def run_check(
    check_id: str,
    config: CheckConfig,
    worktree: Path,
    sandbox: LocalSandbox,
    *,
    version: int,
    timeout_s: float,
    cap: int,
) -> CheckResult:
    executable = _find_program(config.command[0])
    if executable is None:
        raise PatchError(
            f"The program of check {check_id} is not installed.",
            code="PATCH_CHECK_UNAVAILABLE",
            hint="Fix the command of this check in your user config.",
        )
    started = time.monotonic()
    done = await run_program(
        sandbox, executable, tuple(config.command[1:]), worktree, timeout_s=timeout_s, cap=cap * 4
    )
    ms = int((time.monotonic() - started) * 1000)
    status = "timed-out" if done.returncode is None else ("passed" if done.ok else "failed")
    output = clean_output(done.stdout + done.stderr, worktree, cap)
    return CheckResult(check_id, done.ok, status, done.returncode, ms, output, version)
