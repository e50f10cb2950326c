"""Per-job tool state: the worktree, its change version, caches and the terminal failure.

Every successful write bumps ``version``; read results and check results are kept only for
the version they were computed on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xclaw.config import CheckConfig
from xclaw.core.errors import LimitExceeded
from xclaw.core.messages import ToolResult
from xclaw.core.state import RunState, ToolCallRecord
from xclaw.patch.checks import CheckResult
from xclaw.patch.job import PatchLimits, sha256
from xclaw.patch.worktree import file_hash
from xclaw.sandbox.base import LocalSandbox
from xclaw.worktree.gitio import git


@dataclass(slots=True)
class PatchSession:
    worktree: Path
    limits: PatchLimits
    checks: dict[str, CheckConfig]
    sandbox: LocalSandbox  # for run_check
    version: int = 0
    terminal: str = ""  # "CODE: sentence" once a tool hit a failure that ends the job
    tool_calls: int = 0
    _cache: dict[str, ToolResult] = field(default_factory=dict)
    check_results: dict[str, CheckResult] = field(default_factory=dict)

    def changed(self) -> None:
        self.version += 1
        self._cache.clear()

    async def cached(
        self, key: dict[str, Any], compute: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """A read result for this change version, computed once."""
        k = json.dumps(key, sort_keys=True)
        hit = self._cache.get(k)
        if hit is not None:
            return hit
        result = await compute()
        self._cache[k] = result
        return result

    def fresh_check(self, check_id: str) -> CheckResult | None:
        result = self.check_results.get(check_id)
        return result if result is not None and result.version == self.version else None

    async def fingerprint(self) -> str:
        """Status of the worktree against its baseline plus the bytes of every changed path."""
        done = await git(self.worktree, "status", "--porcelain=v2", "-z", "--untracked-files=all")
        parts = [done.stdout]
        for rec in done.text.split("\0"):
            if rec[:1] in ("1", "?"):
                rel = rec.split(" ", 8)[-1] if rec[0] == "1" else rec[2:]
                parts.append(f"{rel}={file_hash(self.worktree, rel)}".encode())
        return sha256(b"\0".join(parts))

    def end_job(self, code: str, sentence: str) -> None:
        self.terminal = self.terminal or f"{code}: {sentence}"

    def after_tools(self, state: RunState, records: list[ToolCallRecord]) -> None:
        """Loop hook: a terminal tool failure or the call budget stops the run."""
        self.tool_calls += len(records)
        if self.terminal:
            raise LimitExceeded(self.terminal, code="PATCH_TERMINAL")
        if self.tool_calls > self.limits.max_tool_calls:
            raise LimitExceeded(
                f"more than {self.limits.max_tool_calls} tool calls", code="LIMIT_TOOL_CALLS"
            )
