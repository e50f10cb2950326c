"""Running one child: a worker as an ordinary durable run of the one loop.

A child is an agent of the tree's ``AgentFactory`` (the coding ``Agent``, from the composition
root) with the worker's prompt, tools, model, limits and workspace, recorded as its own
session with ``parent_session_id`` and ``caller="agent"``. Its session id is derived from the
parent's session and the orchestrator's tool call, so running that call again after a crash
finds the same child: a finished child is not run again (its delivery is read from the
store), an unfinished one is resumed where it stopped.

Whatever happens to the child, the parent gets a ``ChildOutcome`` (a code, a sentence and a
next step when it failed), never an exception — except the parent's own cancellation, which
cancels the child first and then goes on up.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xclaw.agents.budget import ChildControl, TreeBudget
from xclaw.agents.deliver import (
    Delivery,
    deliver_tool,
    delivery_from_records,
    delivery_from_store,
    end_on_delivery,
)
from xclaw.agents.factory import AgentFactory, AgentSettings, SessionRunner
from xclaw.agents.interrupted import InterruptedAsker
from xclaw.agents.registry import APPROVAL_RANK, WorkerRegistry, WorkerSpec
from xclaw.agents.workspace import IsolatedWorkspaces
from xclaw.core.errors import XclawError
from xclaw.core.events import Event, EventBus, EventType
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.model import Model
from xclaw.core.resume import InterruptedChoice
from xclaw.core.sandbox import SandboxSource
from xclaw.core.state import RunControl, RunResult
from xclaw.core.task import task_from_message
from xclaw.core.tooling import Approver
from xclaw.models.info import model_info
from xclaw.policy.approval import ModeApprover
from xclaw.store.base import Store
from xclaw.tools.registry import ToolRegistry

ModelFactory = Callable[[WorkerSpec], Model]


@dataclass(slots=True)
class ChildOutcome:
    worker: str
    session_id: str | None
    ok: bool
    status: str  # completed | interrupted | failed | not_started
    delivery: Delivery | None = None
    code: str = ""
    message: str = ""
    hint: str = ""
    reused: bool = False  # finished in an earlier process; not run again
    workspace: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """What the parent may see: the delivery and where things are, no transcript."""
        out: dict[str, Any] = {
            "worker": self.worker,
            "session_id": self.session_id,
            "run_status": self.status,
        }
        if self.delivery is not None:
            out.update(self.delivery.to_dict())
        if self.code:
            out["error_code"] = self.code
            out["reason"] = self.message
        if self.reused:
            out["reused"] = True
        if self.workspace:
            out["workspace"] = self.workspace
        return out

    @property
    def summary(self) -> str:
        if self.delivery is not None:
            return self.delivery.summary
        return f"[{self.code}] {self.message}"


@dataclass(slots=True)
class TreeContext:
    """Everything the orchestrator's tools need to run children of one parent session."""

    store: Store
    project: Path
    parent_session: str
    control: RunControl
    bus: EventBus
    registry: WorkerRegistry
    model_for: ModelFactory
    approval: str  # the parent's approval mode: deny | ask | allow
    approver: Approver
    limits: Limits
    budget: TreeBudget
    semaphore: asyncio.Semaphore
    agent_factory: AgentFactory  # makes every agent of the tree (compose: coding Agents)
    workspaces: IsolatedWorkspaces = field(default_factory=IsolatedWorkspaces)
    ask_approver: Approver | None = None  # for a worker narrowing "allow" to "ask"
    interrupted: InterruptedChoice | None = None  # how resumed children settle cut-off calls
    interrupted_asker: Approver | None = None  # who answers interrupted="ask" (a terminal)
    sandbox: SandboxSource = None
    default_model_spec: str | None = None

    def emit(self, type_: EventType, **payload: Any) -> None:
        if self.bus.active:
            self.bus.emit(Event(type_, self.parent_session, 0, payload))

    def approver_for(self, spec: WorkerSpec) -> Approver:
        """The parent's approver, unless the worker narrows the mode (never widens it); the
        question about a call cut off by a crash goes to ``interrupted_asker`` when set."""
        mode = spec.approval or self.approval
        if APPROVAL_RANK[mode] >= APPROVAL_RANK[self.approval]:
            chosen = self.approver
        elif mode == "ask" and self.ask_approver is not None:
            chosen = self.ask_approver
        else:
            chosen = ModeApprover("deny")  # no one to ask: fail closed
        if self.interrupted == "ask" and self.interrupted_asker is not None:
            return InterruptedAsker(chosen, self.interrupted_asker, spec.name)
        return chosen

    def child_id(self, worker: str, key: str, task: str) -> str:
        """Stable for (parent, tool call, position); a different task under the same id (a
        reused call id) gets a suffix instead of taking over another child."""
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        base = f"{self.parent_session}.{worker}-{digest}"
        candidate, n = base, 1
        while True:
            found = self.store.get_session(candidate)
            if found is None or found.task == task:
                return candidate
            n += 1
            candidate = f"{base}-{n}"


def _tools_for(ctx: TreeContext, spec: WorkerSpec) -> ToolRegistry:
    allowed = set(spec.tools)
    tools = [t for t in ctx.agent_factory.tools() if t.name in allowed]
    return ToolRegistry([*tools, deliver_tool()])


def _failure(
    spec_name: str, sid: str | None, code: str, message: str, hint: str, status: str = "failed"
) -> ChildOutcome:
    return ChildOutcome(spec_name, sid, False, status, code=code, message=message, hint=hint)


def _delivered(
    spec: WorkerSpec, sid: str, delivery: Delivery, *, reused: bool = False
) -> ChildOutcome:
    """A finished child: a success, unless it delivered with status "error"."""
    if delivery.status == "error":
        return ChildOutcome(
            spec.name,
            sid,
            False,
            "completed",
            delivery,
            code="CHILD_REPORTED_ERROR",
            message=f"{spec.name} could not do the task: {delivery.summary}",
            hint="Read its summary_data, then change the task or ask another worker.",
            reused=reused,
        )
    return ChildOutcome(spec.name, sid, True, "completed", delivery, reused=reused)


def _outcome(spec: WorkerSpec, result: RunResult, timed_out: bool, parent: str) -> ChildOutcome:
    sid = result.session_id
    if result.status == "completed":
        return _delivered(spec, sid, delivery_from_records(result.tool_calls, result.reply))
    reason = result.reason or "no reason recorded"
    code = reason.split(":", 1)[0] if ":" in reason else "CHILD_FAILED"
    if timed_out:
        return _failure(
            spec.name,
            sid,
            "CHILD_TIMEOUT",
            f"{spec.name} did not finish within its {spec.time_limit_s:g}s limit (or the "
            "tree's remaining time) and was stopped.",
            "Give it a smaller task, or delegate the remaining part again.",
            result.status,
        )
    if code == "BUDGET_EXHAUSTED":
        return _failure(
            spec.name,
            sid,
            code,
            f"{spec.name} was stopped: {reason.split(':', 1)[1].strip()}.",
            "Finish with what you have; the tree's budget is spent.",
            result.status,
        )
    if code == "RUN_CANCELLED":
        return _failure(
            spec.name, sid, "CHILD_CANCELLED", f"{spec.name} was cancelled.", "", result.status
        )
    if code == "SESSION_PAUSED":
        return _failure(
            spec.name,
            sid,
            "CHILD_PAUSED",
            f"{spec.name} was resumed after a crash and a call it had started may have had an "
            "effect; it waits for a decision.",
            f"Decide with `xclaw resume {parent} --skip-interrupted` (or --retry-interrupted).",
            result.status,
        )
    status_code = "CHILD_FAILED" if result.status == "failed" else "CHILD_INTERRUPTED"
    return _failure(
        spec.name,
        sid,
        status_code if not code.startswith("LIMIT_") else code,
        f"{spec.name} stopped before delivering: {reason}",
        "Delegate a smaller or clearer task, or try another worker.",
        result.status,
    )


def _unknown_worker(ctx: TreeContext, worker: str) -> ChildOutcome:
    return _failure(
        worker,
        None,
        "WORKER_UNKNOWN",
        f"There is no worker named {worker!r}.",
        "Use one of: " + ", ".join(ctx.registry.names()),
        "not_started",
    )


def _spent(ctx: TreeContext, spec: WorkerSpec, sid: str | None, verb: str) -> ChildOutcome | None:
    """The refusal of a child when the tree's budget is spent (checked once admitted:
    others may have spent it meanwhile); None while it lasts."""
    spent = ctx.budget.exhausted()
    if spent is None:
        return None
    return _failure(
        spec.name,
        sid,
        "BUDGET_EXHAUSTED",
        f"{spec.name} was not {verb}: {spent}.",
        "Finish with what you have; the tree's budget is spent.",
        "not_started",
    )


async def run_child(ctx: TreeContext, worker: str, task: str, key: str) -> ChildOutcome:
    """Run (or resume, or reuse) one child and return its outcome. ``key`` is
    ``CALL_ID|pattern|position``: the orchestrator call and the child's place in it."""
    spec = ctx.registry.get(worker)
    if spec is None:
        return _unknown_worker(ctx, worker)
    sid = ctx.child_id(spec.name, key, task)
    existing = ctx.store.get_session(sid)
    if existing is not None and existing.state == "success":
        outcome = _delivered(spec, sid, delivery_from_store(ctx.store, sid), reused=True)
        if spec.workspace == "isolated":
            await _add_changes(ctx, outcome)
        return outcome
    async with ctx.semaphore:
        spent = _spent(ctx, spec, sid if existing else None, "started")
        if spent is not None:
            return spent
        outcome = await _run_admitted(ctx, spec, task, sid, key, resume=existing is not None)
    if spec.workspace == "isolated" and outcome.session_id is not None:
        await _add_changes(ctx, outcome)
    return outcome


Start = Callable[[SessionRunner, RunControl], Coroutine[Any, Any, RunResult]]


async def _run_admitted(
    ctx: TreeContext, spec: WorkerSpec, task: str, sid: str, key: str, *, resume: bool
) -> ChildOutcome:
    def start(agent: SessionRunner, control: RunControl) -> Coroutine[Any, Any, RunResult]:
        if resume:
            return agent.resume(sid, control=control, interrupted=ctx.interrupted)
        return agent.run(task, control=control, session_id=sid)

    # Which orchestrator call started it (``xclaw steps`` hangs the child under that step).
    return await _drive_child(ctx, spec, sid, start, resumed=resume, meta={"call": key})


async def _drive_child(
    ctx: TreeContext,
    spec: WorkerSpec,
    sid: str,
    start: Start,
    *,
    resumed: bool,
    outcome_of: Callable[[RunResult], ChildOutcome] | None = None,
    meta: dict[str, Any] | None = None,
) -> ChildOutcome:
    """Run one admitted child to its end: its workspace and model, its own bus counting
    into the tree's budget, its time limit, the parent's cancellation passed down first;
    ``meta``: more of its ``agents`` meta, written if its session is new."""
    try:
        workdir = (
            await ctx.workspaces.prepare(ctx.project, sid)
            if spec.workspace == "isolated"
            else ctx.project
        )
        model = ctx.model_for(spec)
    except XclawError as err:
        return _failure(spec.name, None, err.code, err.message, err.hint, "not_started")
    except OSError as err:
        return _failure(
            spec.name,
            None,
            "AGENTS_WORKSPACE_FAILED",
            f"The isolated workspace for {spec.name} could not be made: {err}.",
            "Check the free space and permissions of the data folder.",
            "not_started",
        )
    bus = EventBus()
    bus.subscribe(ctx.budget.listener(model_info(model)))
    agent = worker_agent(
        ctx, spec, workdir, model, bus, parent=ctx.parent_session, caller="agent", meta=meta
    )
    control = ChildControl(ctx.control)
    ctx.emit("agents.child_started", worker=spec.name, child=sid, resumed=resumed)
    child = asyncio.create_task(start(agent, control), name=f"agents:{sid}")
    timeout = spec.time_limit_s
    left = ctx.budget.remaining_seconds()
    if left is not None:
        timeout = max(0.0, min(timeout, left))
    timed_out = False
    try:
        try:
            done, _ = await asyncio.wait({child}, timeout=timeout)
        except asyncio.CancelledError:
            control.cancel()  # the parent was cancelled: the child ends, recorded, first
            await asyncio.wait({child})
            raise
        if not done:
            timed_out = True
            control.cancel()
            await asyncio.wait({child})
        outcome = _settled(spec, sid, child, timed_out, ctx.parent_session, outcome_of)
    finally:
        await model.aclose()
    ctx.emit(
        "agents.child_finished",
        worker=spec.name,
        child=sid,
        status=outcome.status,
        error_code=outcome.code or None,
        budget=ctx.budget.snapshot(),
    )
    return outcome


def conversation_id(parent: str, worker: str) -> str:
    """The session of ``worker``'s own conversation in ``parent``."""
    return f"{parent}.{worker}"


async def converse(ctx: TreeContext, worker: str, message: str) -> ChildOutcome:
    """A message to ``worker``'s own conversation in the parent session (seed 003 ch. 09's
    resident panel): its session ``PARENT.WORKER`` is started by the first message and
    continued by each later one, so it remembers the earlier ones. Asked again after a crash
    (the same call run again), an unfinished turn is resumed, and the message is not posted
    twice."""
    spec = ctx.registry.get(worker)
    if spec is None:
        return _unknown_worker(ctx, worker)
    sid = conversation_id(ctx.parent_session, spec.name)
    existing = ctx.store.get_session(sid)
    known = {e.call_id for e in ctx.store.load_ledger(sid)} if existing is not None else set()

    async def start(agent: SessionRunner, control: RunControl) -> RunResult:
        if existing is None:
            return await agent.run(message, control=control, session_id=sid)
        if existing.state not in ("success", "failed", "interrupted"):  # cut off: finish it
            result = await agent.resume(sid, control=control, interrupted=ctx.interrupted)
            if result.status != "completed" or _last_task(ctx.store, sid) == message:
                return result
        return await agent.follow_up(sid, message, control=control)

    def this_turn(result: RunResult) -> ChildOutcome:
        fresh = [r for r in result.tool_calls if r.call_id not in known]
        return _delivered(spec, sid, delivery_from_records(fresh, result.reply))

    if (
        existing is not None
        and existing.state == "success"
        and _last_task(ctx.store, sid) == message
    ):
        # asked again (the call run again after a crash of the parent): the answer it gave
        return _delivered(spec, sid, delivery_from_store(ctx.store, sid), reused=True)
    async with ctx.semaphore:
        spent = _spent(ctx, spec, sid if existing else None, "asked")
        if spent is not None:
            return spent
        return await _drive_child(
            ctx,
            spec,
            sid,
            start,
            resumed=existing is not None,
            outcome_of=this_turn,
            meta={"conversation": True},
        )


def _last_task(store: Store, sid: str) -> str:
    """The last message the parent posted to a session (its last ``user_input`` step)."""
    from xclaw.store.transcript import items_to_messages

    inputs = [st.step_id for st in store.list_steps(sid) if st.kind == "user_input"]
    if not inputs:
        return ""
    items = [i.payload for i in store.load_items(sid) if i.step_id == inputs[-1]]
    texts = [m.text for m in items_to_messages(items) if m.role == "user"]
    return task_from_message(texts[-1]) if texts else ""


def _settled(
    spec: WorkerSpec,
    sid: str,
    child: asyncio.Task[RunResult],
    timed_out: bool,
    parent: str,
    outcome_of: Callable[[RunResult], ChildOutcome] | None = None,
) -> ChildOutcome:
    """The outcome of a finished child task, whatever ended it."""
    try:
        result = child.result()
    except asyncio.CancelledError:
        return _failure(
            spec.name, sid, "CHILD_CANCELLED", f"{spec.name} was cancelled.", "", "interrupted"
        )
    except XclawError as err:
        return _failure(spec.name, sid, err.code, err.message, err.hint)
    except Exception as err:  # noqa: BLE001 - a crashed child is a result, not a crash
        return _failure(
            spec.name,
            sid,
            "CHILD_CRASHED",
            f"{spec.name} failed unexpectedly: {type(err).__name__}: {err}",
            "Report this as a bug; try another worker meanwhile.",
        )
    if outcome_of is not None and result.status == "completed" and not timed_out:
        return outcome_of(result)
    return _outcome(spec, result, timed_out, parent)


def worker_agent(
    ctx: TreeContext,
    spec: WorkerSpec,
    workdir: Path,
    model: Model,
    bus: EventBus,
    *,
    parent: str | None,
    caller: str,
    meta: dict[str, Any] | None = None,
) -> SessionRunner:
    """The tree's agent configured as ``spec``: its prompt, tools, model and limits (never
    above the parent's), the tree's budget hook, and ``deliver`` ending the run; ``meta``:
    more of its session's ``agents`` meta (the call that started it, a route)."""
    limits = replace(
        ctx.limits,
        max_turns=min(spec.max_turns, ctx.limits.max_turns),
        wall_time_s=min(spec.time_limit_s, ctx.limits.wall_time_s),
    )
    settings = AgentSettings(
        model,
        workdir,
        _tools_for(ctx, spec),
        ctx.approver_for(spec),
        limits,
        Hooks(before_model_call=[ctx.budget.hook], after_tools=[end_on_delivery]),
        bus,
        ctx.store,
        spec.system_prompt,
        model_spec=spec.model or ctx.default_model_spec,
        sandbox=ctx.sandbox,
        parent_session_id=parent,
        caller=caller,
        meta={"agents": {"worker": spec.name, "workspace": spec.workspace, **(meta or {})}},
        evidence_gate=False,  # a worker ends by delivering; its caller judges it
    )
    return ctx.agent_factory.agent(settings)


async def _add_changes(ctx: TreeContext, outcome: ChildOutcome) -> None:
    """An isolated child's changes, as a diff the parent can review and apply."""
    assert outcome.session_id is not None
    try:
        changes = await ctx.workspaces.changes(outcome.session_id)
    except (XclawError, OSError) as err:
        outcome.workspace = {"error": f"could not compute the diff: {err}"}
        return
    outcome.workspace = {
        "path": str(changes.tree),
        "diff": str(changes.diff_path),
        "changed_files": changes.files[:200],
        "apply": f"git -C {ctx.project} apply {changes.diff_path}",
    }
