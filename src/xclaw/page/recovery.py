"""Guards and recovery of the page loop (seed 002 §4), as small pieces with no browser:
redundant ``page_info`` interception, snapshot debounce, the round break after a DOM-changing
action, the element-not-found results, the not-found retry dialogue, idle and repeated-batch
detection. ``PageRun`` wires them to the loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xclaw.core.messages import ToolResult

DEFAULT_MAX_ROUNDS = 40
DEFAULT_RECOVERY_WAIT_MS = 100
DEFAULT_ACTION_RECOVERY_ROUNDS = 2
DEFAULT_NOT_FOUND_RETRY_ROUNDS = 2
DEFAULT_NOT_FOUND_RETRY_WAIT_MS = 2000
DEFAULT_IDLE_ROUNDS = 2
DEFAULT_SNAPSHOT_DEBOUNCE = 2
DEFAULT_PROTOCOL_VIOLATION_ROUNDS = 2

ELEMENT_NOT_FOUND = "ELEMENT_NOT_FOUND"
ELEMENT_NOT_FOUND_RECOVERY = "ELEMENT_NOT_FOUND_RECOVERY"
ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED = "ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED"
REDUNDANT_PAGE_INFO_SKIPPED = "REDUNDANT_PAGE_INFO_SKIPPED"
REDUNDANT_SNAPSHOT = "REDUNDANT_SNAPSHOT"
SKIPPED_AFTER_DOM_CHANGE = "SKIPPED_AFTER_DOM_CHANGE"
REPEATED_BATCH_SKIPPED = "REPEATED_BATCH_SKIPPED"
NOT_FOUND_CODES = frozenset(
    {ELEMENT_NOT_FOUND, ELEMENT_NOT_FOUND_RECOVERY, ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED}
)
# A stale ref after a re-render fails as "detached" rather than "not found": same recovery.
RECOVERABLE_CODES = frozenset({ELEMENT_NOT_FOUND, "ELEMENT_DETACHED"})

REDUNDANT_PAGE_INFO = frozenset({"snapshot", "query_all", "get_url", "get_title", "get_viewport"})
NAVIGATIONS = frozenset({"goto", "back", "forward", "reload"})
DOM_CHANGING = frozenset({"click", "press", "select_option", "check", "uncheck"})
READ_ACTIONS = frozenset({"get_text", "get_attr"})


@dataclass(frozen=True, slots=True)
class PageLoopSettings:
    """The seed's constants; waits are configurable so tests need not sleep for seconds."""

    action_recovery_rounds: int = DEFAULT_ACTION_RECOVERY_ROUNDS
    recovery_wait_ms: int = DEFAULT_RECOVERY_WAIT_MS
    not_found_retry_rounds: int = DEFAULT_NOT_FOUND_RETRY_ROUNDS
    not_found_retry_wait_ms: int = DEFAULT_NOT_FOUND_RETRY_WAIT_MS
    idle_rounds: int = DEFAULT_IDLE_ROUNDS
    snapshot_debounce: int = DEFAULT_SNAPSHOT_DEBOUNCE
    protocol_violation_rounds: int = DEFAULT_PROTOCOL_VIOLATION_ROUNDS


def action_of(args: Mapping[str, Any]) -> str:
    action = args.get("action")
    return action if isinstance(action, str) else ""


def changes_dom(name: str, args: Mapping[str, Any]) -> bool:
    """True for a call after which the snapshot is stale and the round must break."""
    action = action_of(args)
    if name == "navigate":
        return action in NAVIGATIONS
    return name == "dom" and action in DOM_CHANGING


def is_navigation(name: str, args: Mapping[str, Any]) -> bool:
    return name == "navigate" and action_of(args) in NAVIGATIONS


def is_read_only_call(name: str, args: Mapping[str, Any], spec_read_only: bool) -> bool:
    """Reads the page without acting on it (idle detection)."""
    if name in ("page_info", "wait"):
        return True
    if name == "dom":
        return action_of(args) in READ_ACTIONS
    return spec_read_only and name not in ("navigate", "evaluate")


def is_action(name: str, args: Mapping[str, Any], spec_read_only: bool) -> bool:
    """A call that does something on the page (it consumes a step of the task)."""
    return not is_read_only_call(name, args, spec_read_only)


def redundant_page_info(action: str, snapshot_fresh: bool, url: str) -> ToolResult | None:
    """page_info.* while the round's snapshot is current: skipped, the model is told why."""
    if action not in REDUNDANT_PAGE_INFO or not snapshot_fresh:
        return None
    return ToolResult.failure(
        REDUNDANT_PAGE_INFO_SKIPPED,
        f"page_info.{action} was skipped: the latest snapshot in this round's message is "
        f"current (url {url}).",
        hint="Act on the refs of the latest snapshot directly; it is refreshed every round.",
        data={"action": action, "intercepted": True},
    )


class SnapshotDebounce:
    """Consecutive page_info.snapshot calls: the ``threshold``-th in a row is refused."""

    def __init__(self, threshold: int = DEFAULT_SNAPSHOT_DEBOUNCE) -> None:
        self.threshold = threshold
        self.streak = 0

    def check(self, name: str, args: Mapping[str, Any]) -> ToolResult | None:
        if name != "page_info" or action_of(args) != "snapshot":
            self.streak = 0
            return None
        self.streak += 1
        if self.streak < self.threshold:
            return None
        return ToolResult.failure(
            REDUNDANT_SNAPSHOT,
            f"{self.streak} page_info.snapshot calls in a row; this one was skipped.",
            hint="Use the snapshot you already have.",
            data={"action": "snapshot", "intercepted": True},
        )


def round_break_result(after: str) -> ToolResult:
    return ToolResult.failure(
        SKIPPED_AFTER_DOM_CHANGE,
        f"Not run: {after} earlier in this batch can change the page, so the round ended there.",
        hint="If it is still needed, do it next round with a ref from the new snapshot.",
        retryable=True,
        data={"skipped": True},
    )


def recovery_result(selector: str, attempt: int, limit: int, action: str) -> ToolResult:
    return ToolResult.failure(
        ELEMENT_NOT_FOUND_RECOVERY,
        f"Element {selector} was not found; the snapshot was refreshed (recovery {attempt}/"
        f"{limit}).",
        hint="Find the target again in the latest snapshot (its ref may have changed) and retry.",
        retryable=True,
        data={"action": action, "selector": selector, "recoveryAttempt": attempt},
    )


def max_recovery_result(selector: str, limit: int, action: str, cause: str) -> ToolResult:
    return ToolResult.failure(
        ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED,
        f"Element {selector} was not found, and its {limit} recoveries are used up: {cause}",
        hint="Pick another target from the latest snapshot, or report it as missing.",
        data={"action": action, "selector": selector, "recoveryAttempt": limit + 1},
    )


@dataclass(slots=True)
class NotFoundRetry:
    """The not-found retry dialogue: failed calls go back to the model with attempt x/y; a
    repeated miss waits before the refresh; past the limit the dialogue ends."""

    limit: int = DEFAULT_NOT_FOUND_RETRY_ROUNDS
    attempt: int = 0
    failures: list[str] = field(default_factory=list)

    def update(self, failures: Sequence[str]) -> bool:
        """Record this round's not-found failures; True when the next refresh should wait."""
        if not failures:
            self.attempt, self.failures = 0, []
            return False
        if self.attempt >= self.limit:
            self.failures = []  # out of attempts: the REMAINING protocol takes over
            return False
        self.attempt += 1
        self.failures = list(failures)
        return self.attempt > 1

    def section(self) -> tuple[str, str] | None:
        if not self.failures:
            return None
        lines = [f"Retry attempt: {self.attempt}/{self.limit}", "Failed tool calls:"]
        lines += [f"- {f}" for f in self.failures]
        lines.append("Retry only targets visible in the latest snapshot; refs may have changed.")
        return "Not-found retry context", "\n".join(lines)


def batch_key(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    return json.dumps([[n, dict(a)] for n, a in calls], sort_keys=True, default=str)


@dataclass(slots=True)
class BatchGuard:
    """Two rounds in a row planning the very same batch, the first without errors: spinning."""

    last_key: str = ""
    last_had_error: bool = False

    def repeated(self, key: str) -> bool:
        return key == self.last_key and not self.last_had_error

    def record(self, key: str, had_error: bool) -> None:
        self.last_key, self.last_had_error = key, had_error


@dataclass(slots=True)
class IdleDetector:
    """Rounds that only read the page and move the task no further."""

    limit: int = DEFAULT_IDLE_ROUNDS
    streak: int = 0

    def record(self, read_only_round: bool, progressed: bool) -> bool:
        """True when the run should stop as idle."""
        self.streak = self.streak + 1 if read_only_round and not progressed else 0
        return self.streak >= self.limit
