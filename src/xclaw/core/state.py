"""Per-run state and the result of a run. Nothing about a run lives on the Agent."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from xclaw.core.messages import Message, ToolResult
from xclaw.core.recorder import NULL_RECORDER, MessageKind, Recorder

RunStatus = Literal["running", "completed", "interrupted", "failed"]


def new_session_id() -> str:
    """A new session's id: when it started, and six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    call_id: str
    name: str
    input: dict[str, Any]
    result: ToolResult
    turn: int
    duration_ms: float
    read_only: bool
    risk: str = "read"


@dataclass(frozen=True, slots=True)
class RunMetrics:
    rounds: int
    tool_calls: int
    failed_calls: int
    success_rate: float
    input_tokens: int | None
    output_tokens: int | None
    duration_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "failed_calls": self.failed_calls,
            "success_rate": self.success_rate,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "duration_ms": round(self.duration_ms, 1),
        }


class RunControl:
    """Ctrl+C handling: the first request pauses at the next boundary, the second cancels."""

    def __init__(self) -> None:
        self.pause_requested = False
        self.cancel_requested = False
        self._task: asyncio.Task[Any] | None = None

    def attach(self, task: asyncio.Task[Any] | None) -> None:
        self._task = task

    def interrupt(self) -> Literal["pause", "cancel"]:
        if not self.pause_requested:
            self.pause_requested = True
            return "pause"
        self.cancel_requested = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        return "cancel"


@dataclass(slots=True)
class RunState:
    session_id: str
    task: str
    messages: list[Message]
    control: RunControl = field(default_factory=RunControl)
    recorder: Recorder = NULL_RECORDER
    turn: int = 0
    started: float = field(default_factory=time.monotonic)
    records: list[ToolCallRecord] = field(default_factory=list)
    failed_calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    output_chars: int = 0
    last_call_key: str = ""
    identical_calls: int = 0
    protocol_errors: int = 0
    gate_refusals: int = 0
    status: RunStatus = "running"
    reason: str = ""
    reply: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Earlier runs' calls, built on demand: the records and how many of them failed.
    history: Callable[[], tuple[list[ToolCallRecord], int]] | None = None
    # The session's turn when this run began: ``limits.max_turns`` counts this run's model
    # turns, as ``wall_time_s`` counts its time (a chat's hundredth message is not refused
    # for the turns of the ninety-nine before it).
    first_turn: int = field(init=False)

    def __post_init__(self) -> None:
        self.first_turn = self.turn

    def all_records(self) -> list[ToolCallRecord]:
        """This session's tool calls, earlier runs first (a resume builds those lazily, so
        continuing a long session does not wait for them)."""
        if self.history is not None:
            (earlier, failed), self.history = self.history(), None
            self.records[:0] = earlier
            self.failed_calls += failed
        return self.records

    def append(
        self,
        msg: Message,
        kind: MessageKind,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        duration_ms: float | None = None,
    ) -> None:
        """Every user/assistant message enters the conversation here, and the record."""
        self.messages.append(msg)
        self.recorder.message(
            self,
            msg,
            kind,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            duration_ms=duration_ms,
        )

    def add_usage(self, input_tokens: int | None, output_tokens: int | None) -> None:
        if input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + input_tokens
        if output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + output_tokens

    def metrics(self) -> RunMetrics:
        n = len(self.all_records())
        return RunMetrics(
            rounds=self.turn,
            tool_calls=n,
            failed_calls=self.failed_calls,
            success_rate=(n - self.failed_calls) / n if n else 1.0,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            duration_ms=(time.monotonic() - self.started) * 1000,
        )


@dataclass(frozen=True, slots=True, repr=False)
class RunResult:
    """Seed 002's AgentLoopResult: reply, ordered tool calls, messages, metrics."""

    session_id: str
    status: RunStatus
    reason: str
    reply: str
    tool_calls: list[ToolCallRecord]
    messages: list[Message]
    metrics: RunMetrics
    changed_files: list[str] = field(default_factory=list)
    kept_processes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def __repr__(self) -> str:
        # Compact on purpose: a long session holds tens of thousands of messages.
        return (
            f"RunResult(session_id={self.session_id!r}, status={self.status!r}, "
            f"reason={self.reason!r}, tool_calls={len(self.tool_calls)}, "
            f"messages={len(self.messages)})"
        )
