"""The one agent loop: model → parse → policy → approve → execute → feed back.

Every face runs this loop; faces add behaviour through ``Hooks``. It stops as *completed* only
when the model gives a final answer that every completion gate accepts; every limit stops it
as *interrupted* with the reason.

A stream that drops after it began (``ModelUnavailable`` once events arrived) is discarded whole
and asked again, ``limits.stream_retries`` times, with a ``model.retry`` event (``partial``)
the live view prints; a drop before anything arrived is the model chain's retry policy.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, assert_never

from xclaw.core.dispatch import emit, run_tool_calls
from xclaw.core.errors import (
    EndRun,
    LimitExceeded,
    ModelError,
    ModelUnavailable,
    ProtocolViolation,
    RunCancelled,
)
from xclaw.core.events import Event, EventBus, EventType
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.messages import Message, Part, ReasoningPart, TextPart, ToolCallPart
from xclaw.core.model import (
    Finish,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    ReasoningEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from xclaw.core.state import RunResult, RunState
from xclaw.core.tooling import Approver, Policy, Toolbox


@dataclass(slots=True)
class LoopDeps:
    model: Model
    toolbox: Toolbox
    policy: Policy
    approver: Approver
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)
    hooks: Hooks = field(default_factory=Hooks)


async def run_loop(state: RunState, deps: LoopDeps) -> RunResult:
    emit(deps, state, "run.started", task=state.task, model=deps.model.name)
    try:
        while True:
            check_limits(state, deps.limits)
            await deps.hooks.run_before_model_call(state)
            state.recorder.before_model_call(state)
            try:
                message = await ask_model(state, deps)
            except ProtocolViolation as err:
                record_protocol_error(state, deps, err)
                continue
            state.protocol_errors = 0
            calls = message.tool_calls
            if calls:
                records = await run_tool_calls(state, deps, calls)
                await deps.hooks.run_after_tools(state, records)
                continue
            reminder = deps.hooks.check_completion(state)
            if reminder is None:
                return finish(state, deps, "completed", message.text)
            refuse_completion(state, deps, reminder)
    except LimitExceeded as err:
        return finish(state, deps, "interrupted", "", reason=f"{err.code}: {err.message}")
    except EndRun as end:
        return finish(state, deps, end.status, end.reply, reason=f"{end.code}: {end.message}")
    except RunCancelled:
        return _cancelled(state, deps)
    except asyncio.CancelledError:
        if not state.control.cancel_requested:
            raise  # cancelled by the caller (a timeout, a shutdown): not ours to swallow
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return _cancelled(state, deps)
    except ModelError as err:
        return finish(state, deps, "failed", "", reason=str(err))


def _cancelled(state: RunState, deps: LoopDeps) -> RunResult:
    return finish(state, deps, "interrupted", "", reason="RUN_CANCELLED: cancelled by the user")


def check_limits(state: RunState, limits: Limits) -> None:
    if state.control.cancel_requested:
        raise RunCancelled("cancelled by the user")
    if state.control.pause_requested:
        raise LimitExceeded("paused at your request", code="RUN_PAUSED")
    if state.turn - state.first_turn >= limits.max_turns:
        raise LimitExceeded(
            f"reached the limit of {limits.max_turns} model turns", code="LIMIT_TURNS"
        )
    if time.monotonic() - state.started > limits.wall_time_s:
        raise LimitExceeded(f"ran longer than {limits.wall_time_s:g}s", code="LIMIT_WALL_TIME")
    if state.output_chars > limits.max_output_bytes:
        raise LimitExceeded("tool output volume exceeded the run limit", code="LIMIT_OUTPUT")


class TurnCollector:
    """Gathers one streamed model turn into an assistant message.

    A repaired call (written as JSON in the reply text) replaces that text: it was the call."""

    __slots__ = (
        "text",
        "reasoning",
        "calls",
        "stop",
        "input_tokens",
        "output_tokens",
        "started",
        "first_ms",
    )

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[ReasoningPart] = []
        self.calls: list[ToolCallPart] = []
        self.stop = "stop"
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.started = time.perf_counter()
        self.first_ms: float | None = None  # time to the first streamed event (tracing's TTFT)

    @property
    def began(self) -> bool:
        return self.first_ms is not None

    @property
    def repaired(self) -> int:
        return sum(1 for c in self.calls if c.repaired)

    def add(self, ev: ModelEvent) -> None:
        if self.first_ms is None:
            self.first_ms = (time.perf_counter() - self.started) * 1000
        match ev:
            case TextDelta():
                self.text.append(ev.text)
            case ReasoningDelta():
                pass  # the finished block arrives as ReasoningEvent
            case ReasoningEvent():
                self.reasoning.append(ev.part)
            case ToolCallEvent():
                if ev.call.repaired:
                    self.text.clear()
                self.calls.append(ev.call)
            case Usage():
                self.input_tokens = _add(self.input_tokens, ev.input_tokens)
                self.output_tokens = _add(self.output_tokens, ev.output_tokens)
            case Finish():
                self.stop = ev.stop_reason
            case _:
                assert_never(ev)

    def message(self) -> Message:
        parts: list[Part] = list(self.reasoning)
        if self.text:
            parts.append(TextPart("".join(self.text)))
        parts.extend(self.calls)
        return Message("assistant", tuple(parts))


def _add(a: int | None, b: int | None) -> int | None:
    return a if b is None else (a or 0) + b


async def ask_model(state: RunState, deps: LoopDeps) -> Message:
    """One model turn, collected into an assistant message (reasoning, text, tool calls)."""
    state.turn += 1
    emit(deps, state, "model.message_sent", messages=len(state.messages))
    request = ModelRequest(deps.hooks.view_messages(state), deps.toolbox.specs())
    started = time.perf_counter()
    turn = await stream_turn(state, deps, request)
    state.add_usage(turn.input_tokens, turn.output_tokens)
    message = turn.message()
    extra: dict[str, Any] = {"repaired_tool_calls": turn.repaired} if turn.repaired else {}
    state.append(
        message,
        "llm_call",
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    emit(
        deps,
        state,
        "model.message_complete",
        text=message.text,
        tool_calls=len(turn.calls),
        stop_reason=turn.stop,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        first_event_ms=None if turn.first_ms is None else round(turn.first_ms, 1),
        **extra,
    )
    return message


async def stream_turn(state: RunState, deps: LoopDeps, request: ModelRequest) -> TurnCollector:
    """The model's answer to ``request``, streamed live; a stream that drops after it began is
    discarded and asked for again (see the module docstring)."""
    attempt = 0
    while True:
        turn = TurnCollector()
        try:
            async with asyncio.timeout(deps.limits.turn_timeout_s):
                async for ev in deps.model.respond(request):
                    turn.add(ev)
                    if isinstance(ev, TextDelta):
                        emit(deps, state, "model.streaming", delta=ev.text)
            return turn
        except TimeoutError:
            raise LimitExceeded(
                f"the model did not answer within {deps.limits.turn_timeout_s:g}s",
                code="LIMIT_TURN_TIMEOUT",
            ) from None
        except ModelUnavailable as err:
            if not turn.began or attempt >= deps.limits.stream_retries:
                raise
            attempt += 1
            emit(
                deps,
                state,
                "model.retry",
                model=deps.model.name,
                attempt=attempt,
                delay_s=0,
                reason=err.message,
                code=err.code,
                partial=True,
                discarded_chars=sum(len(t) for t in turn.text),
            )


def record_protocol_error(state: RunState, deps: LoopDeps, err: ProtocolViolation) -> None:
    state.protocol_errors += 1
    emit(
        deps,
        state,
        "protocol.invalid",
        code=err.code,
        message=err.message,
        count=state.protocol_errors,
    )
    if state.protocol_errors > deps.limits.max_protocol_errors:
        raise LimitExceeded(
            f"{state.protocol_errors} consecutive replies broke the protocol ({err.code})",
            code="LIMIT_PROTOCOL_ERRORS",
        )
    if err.reply_text:
        state.append(Message("assistant", (TextPart(err.reply_text),)), "protocol")
    state.append(Message.user(err.feedback or str(err)), "protocol")


def refuse_completion(state: RunState, deps: LoopDeps, reminder: str) -> None:
    state.gate_refusals += 1
    emit(deps, state, "gate.refused", reminder=reminder, count=state.gate_refusals)
    if state.gate_refusals > deps.limits.max_gate_refusals:
        raise LimitExceeded(
            f"completion refused {state.gate_refusals} times: {reminder}",
            code="LIMIT_COMPLETION_EVIDENCE",
        )
    state.append(Message.user(reminder), "system_alert")


def finish(state: RunState, deps: LoopDeps, status: str, reply: str, reason: str = "") -> RunResult:
    state.status = (
        "completed"
        if status == "completed"
        else ("interrupted" if status == "interrupted" else "failed")
    )
    state.reply, state.reason = reply, reason
    metrics = state.metrics()
    kind: EventType = (
        "run.completed"
        if state.status == "completed"
        else "run.interrupted"
        if state.status == "interrupted"
        else "run.failed"
    )
    payload = {"reply": reply, "reason": reason, "metrics": metrics.to_dict()}
    end = Event(kind, state.session_id, state.turn, payload)
    # The run's end is recorded in the commit of its outcome (a recorder ignores what it is
    # sent after that), and shown only once that commit is made.
    state.recorder.event(end)
    state.recorder.finished(state, pending=state.extra.get("pending"))
    if deps.bus.active:
        deps.bus.emit(end)
    return RunResult(
        state.session_id,
        state.status,
        reason,
        reply,
        state.all_records(),
        state.messages,
        metrics,
    )
