"""Tool dispatch for one model turn, in the fixed order of the blueprint:
validate → inspect → policy → approval → execute → cap → feed back.

Approvals are asked one at a time, in call order. Consecutive read-only calls run
concurrently; any call with side effects runs alone, in order.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from xclaw.core.errors import LimitExceeded, XclawError
from xclaw.core.events import Event, EventBus, EventType
from xclaw.core.limits import Limits
from xclaw.core.messages import Message, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.state import RunState, ToolCallRecord
from xclaw.core.tooling import (
    ApprovalRequest,
    Approver,
    Policy,
    PreparedCall,
    Toolbox,
    ToolSpec,
)
from xclaw.redact import redact


class DispatchDeps(Protocol):
    """What dispatch needs; the loop's ``LoopDeps`` and ``xclaw tools call`` both provide it."""

    @property
    def toolbox(self) -> Toolbox: ...
    @property
    def policy(self) -> Policy: ...
    @property
    def approver(self) -> Approver: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def limits(self) -> Limits: ...


def emit(
    deps: DispatchDeps,
    state: RunState,
    type_: EventType,
    call_id: str | None = None,
    **payload: object,
) -> None:
    if deps.bus.active:
        deps.bus.emit(Event(type_, state.session_id, state.turn, dict(payload), call_id))


async def run_tool_calls(
    state: RunState,
    deps: DispatchDeps,
    calls: list[ToolCallPart],
    known: dict[str, ToolResult] | None = None,
) -> list[ToolCallRecord]:
    """Run one turn's calls; ``known`` results (from a resumed ledger) are sent, not rerun."""
    results: dict[int, tuple[ToolResult, float]] = {}
    ready: list[tuple[int, PreparedCall]] = []
    seen: dict[str, int] = {}  # call id -> index of its first call in this turn
    echoes: dict[int, int] = {}  # a repeated stream event of one call -> that call's index
    repeated: str | None = None
    for i, call in enumerate(calls):
        extra = {"repaired": True} if call.repaired else {}
        emit(
            deps,
            state,
            "tool.proposed",
            call.call_id,
            name=call.name,
            arguments=call.arguments,
            **extra,
        )
        if call.call_id in seen:
            _same_id_again(calls, seen[call.call_id], i, echoes, results)
            continue
        seen[call.call_id] = i
        if known and call.call_id in known:
            results[i] = (_settled(state, call, known[call.call_id]), 0.0)
            continue
        prepared = deps.toolbox.prepare(call)
        if isinstance(prepared, ToolResult):
            results[i] = (prepared, 0.0)
            continue
        if _is_repeat_over_limit(state, deps, prepared.key):
            repeated = call.name
            results[i] = (_repeated(call, deps.limits.max_identical_calls), 0.0)
            continue
        refusal = await _authorize(state, deps, prepared)
        if refusal is not None:
            if prepared.extra.get("recorded"):
                state.recorder.completed(state, call, refusal, prepared.spec.read_only)
            results[i] = (refusal, 0.0)
            continue
        ready.append((i, prepared))
    await _run_ready(state, deps, ready, results)
    for i, original in echoes.items():
        results[i] = (results[original][0], 0.0)
    records = _record(state, deps, calls, results)
    if repeated is not None:
        raise LimitExceeded(
            f"{repeated} was called with identical arguments more than "
            f"{deps.limits.max_identical_calls} times in a row",
            code="LIMIT_REPEATED_CALLS",
        )
    return records


async def _run_ready(
    state: RunState,
    deps: DispatchDeps,
    ready: list[tuple[int, PreparedCall]],
    results: dict[int, tuple[ToolResult, float]],
) -> None:
    """Authorised calls: read-only neighbours together, anything else alone, in order."""
    for batch in _batches(ready):
        if len(batch) > 1:
            outs = await asyncio.gather(*(_execute(state, deps, p) for _, p in batch))
        else:
            outs = [await _execute(state, deps, batch[0][1])]
        for (i, _), out in zip(batch, outs, strict=True):
            results[i] = out


def _same_id_again(
    calls: list[ToolCallPart],
    first: int,
    i: int,
    echoes: dict[int, int],
    results: dict[int, tuple[ToolResult, float]],
) -> None:
    """An id seen earlier in this turn: the same call again is one call (a retried stream
    event; it gets the first one's result, one side effect); a different call is refused."""
    if (calls[first].name, calls[first].arguments) == (calls[i].name, calls[i].arguments):
        echoes[i] = first
    else:
        results[i] = (_duplicate_id(calls[i]), 0.0)


def _record(
    state: RunState,
    deps: DispatchDeps,
    calls: list[ToolCallPart],
    results: dict[int, tuple[ToolResult, float]],
) -> list[ToolCallRecord]:
    parts: list[ToolResultPart] = []
    records: list[ToolCallRecord] = []
    for i, call in enumerate(calls):
        result, ms = results[i]
        parts.append(ToolResultPart(call.call_id, call.name, result))
        spec = _spec(deps, call.name)
        read_only, risk = (spec.read_only, str(spec.risk)) if spec else (True, "read")
        rec = ToolCallRecord(
            call.call_id, call.name, call.arguments, result, state.turn, ms, read_only, risk
        )
        records.append(rec)
        if not result.ok:
            state.failed_calls += 1
        state.output_chars += len(result.message) + _data_size(result)
        emit(
            deps,
            state,
            "tool.completed",
            call.call_id,
            name=call.name,
            ok=result.ok,
            error_code=result.error_code,
            message=result.message,
            duration_ms=round(ms, 1),
            data=result.data,
        )
    state.records.extend(records)
    msg = Message("tool", tuple(parts))
    state.messages.append(msg)
    state.recorder.results(state, msg, records)
    return records


def _spec(deps: DispatchDeps, name: str) -> ToolSpec | None:
    for spec in deps.toolbox.specs():
        if spec.name == name:
            return spec
    return None


def _data_size(result: ToolResult) -> int:
    return sum(len(v) for v in result.data.values() if isinstance(v, str))


def _batches(ready: list[tuple[int, PreparedCall]]) -> list[list[tuple[int, PreparedCall]]]:
    out: list[list[tuple[int, PreparedCall]]] = []
    for item in ready:
        if item[1].spec.read_only and out and out[-1][-1][1].spec.read_only:
            out[-1].append(item)
        else:
            out.append([item])
    return out


def _is_repeat_over_limit(state: RunState, deps: DispatchDeps, key: str) -> bool:
    if key == state.last_call_key:
        state.identical_calls += 1
    else:
        state.last_call_key, state.identical_calls = key, 1
    return state.identical_calls > deps.limits.max_identical_calls


async def _authorize(
    state: RunState, deps: DispatchDeps, prepared: PreparedCall
) -> ToolResult | None:
    """None when the call may run; otherwise the coded refusal fed back to the model."""
    unseen = await deps.toolbox.inspect(prepared)  # the target it acts on, looked at first
    if unseen is not None:
        return unseen
    try:
        decision = deps.policy.evaluate(prepared)
    except XclawError as err:  # e.g. the session's sandbox, made on first use, could not be
        return ToolResult.failure(
            err.code,
            f"{prepared.call.name} could not be checked: {err.message}; nothing ran.",
            hint=err.hint or "Fix what the message names, then call it again.",
        )
    prepared.decision = decision
    if decision.action == "deny":
        return deps.policy.refusal(decision, by_user=False)
    # Lands before approval is asked: a crash while waiting means "re-approve, then run".
    state.recorder.prepared(state, prepared, awaiting_approval=decision.action == "ask")
    prepared.extra["recorded"] = True
    if decision.action == "allow":
        return None
    call = prepared.call
    summary = call_summary(call)
    emit(
        deps,
        state,
        "approval.required",
        call.call_id,
        name=call.name,
        summary=summary,
        risk=str(decision.risk),
        reason=decision.reason,
        grant=decision.grant.describe() if decision.grant else None,
    )
    answer = await deps.approver.approve(ApprovalRequest(call.name, summary, decision))
    emit(deps, state, "approval.resolved", call.call_id, name=call.name, answer=answer)
    if answer == "deny":
        return deps.policy.refusal(decision, by_user=True)
    if answer == "task" and decision.grant is not None:
        deps.policy.grant(decision.grant)
    return None


async def _execute(
    state: RunState, deps: DispatchDeps, prepared: PreparedCall
) -> tuple[ToolResult, float]:
    call_id = prepared.call.call_id
    state.recorder.started(state, prepared)  # durable before any side effect
    decision = prepared.decision
    emit(
        deps,
        state,
        "tool.started",
        call_id,
        name=prepared.call.name,
        risk=str(decision.risk),
        decision=decision.action,
    )
    start = time.perf_counter()

    def output(stream: str, text: str) -> None:
        emit(deps, state, "tool.output", call_id, stream=stream, text=text)

    try:
        async with asyncio.timeout(deps.limits.tool_timeout_s):
            result = await deps.toolbox.execute(prepared, output)
    except TimeoutError:
        result = ToolResult.failure(
            "TOOL_TIMEOUT",
            f"{prepared.call.name} exceeded the run's per-tool limit of "
            f"{deps.limits.tool_timeout_s:g}s and was stopped.",
            hint="Split the work into smaller steps.",
            retryable=True,
        )
    state.recorder.completed(state, prepared.call, result, prepared.spec.read_only)
    return result, (time.perf_counter() - start) * 1000


def _settled(state: RunState, call: ToolCallPart, result: ToolResult) -> ToolResult:
    """A result decided on resume: recorded as completed (a no-op if it already was)."""
    state.recorder.completed(state, call, result, True)
    return result


def call_summary(call: ToolCallPart) -> str:
    """A call as a person is asked about it: its name and its arguments, shortened."""
    return f"{call.name} {_short_args(call.arguments)}"


def _short_args(arguments: dict[str, object], limit: int = 160) -> str:
    """Redacted first, then shortened: a cut never leaves part of a secret behind."""
    text = redact(" ".join(f"{k}={v!r}" for k, v in arguments.items()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duplicate_id(call: ToolCallPart) -> ToolResult:
    return ToolResult.failure(
        "TOOL_CALL_ID_DUPLICATE",
        f"Tool call id {call.call_id!r} was used twice in one response for different calls; "
        "the second was not run.",
        hint="Give each tool call in a response its own id.",
        retryable=True,
    )


def _repeated(call: ToolCallPart, limit: int) -> ToolResult:
    return ToolResult.failure(
        "REPEATED_CALL",
        f"{call.name} with these exact arguments ran {limit} times in a row; stopping.",
        hint="Change approach instead of repeating the same call.",
    )
