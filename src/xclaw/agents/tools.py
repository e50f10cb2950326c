"""The orchestrator's tools: ``agents.delegate``, ``agents.debate``, ``agents.pipeline`` and
``agents.open_artifact``.

They are marked read-only on purpose: for the ledger, *read-only* means "safe to run again
after a crash", and these are: the child session ids come from the call, so running a call
again reuses finished children and resumes the unfinished one. The children's own side
effects are governed by their own policy, approvals and ledgers. (Read-only neighbours in one
turn also run concurrently, bounded by the tree's semaphore.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from xclaw.agents.children import ChildOutcome, TreeContext, converse, run_child
from xclaw.agents.deliver import delivery_from_store
from xclaw.agents.workspace import child_dir
from xclaw.core.errors import PolicyDenied
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.policy.paths import resolve_inside_root
from xclaw.tools.base import Tool, ToolContext, tool

MAX_TASK = 40_000
MAX_READ = 20_000


class PipelineStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    worker: str = Field(min_length=1, max_length=32)
    task: str = Field(min_length=1, max_length=MAX_TASK)


def _failed(outcome: ChildOutcome, **extra: object) -> ToolResult:
    return ToolResult.failure(
        outcome.code or "CHILD_FAILED",
        outcome.message,
        hint=outcome.hint,
        data={**outcome.public(), **extra},
    )


def _brief(outcome: ChildOutcome) -> dict[str, object]:
    """One child in a combined result: its summary and data, never its transcript."""
    out: dict[str, object] = {
        "worker": outcome.worker,
        "session_id": outcome.session_id,
        "ok": outcome.ok,
        "summary": outcome.summary,
    }
    if outcome.delivery is not None:
        if outcome.delivery.data:
            out["summary_data"] = outcome.delivery.data
        if outcome.delivery.pointers:
            out["artifact_pointers"] = outcome.delivery.pointers
    if outcome.workspace:
        out["workspace"] = outcome.workspace
    return out


TreeFor = Callable[[ToolContext], TreeContext]
"""The tree a call's children belong to: one fixed tree (an ``xclaw agents`` run), or the
tree of the session making the call (a gateway session's agent serves many turns)."""


def orchestrator_tools(tree_for: TreeFor) -> list[Tool]:
    """The four tools, each call's children in ``tree_for(ctx)``."""

    @tool("agents.delegate", risk=Risk.EXECUTE, read_only=True, timeout_s=24 * 3600.0)
    async def delegate(
        ctx: ToolContext,
        worker: Annotated[str, Field(min_length=1, max_length=32)],
        task: Annotated[str, Field(min_length=1, max_length=MAX_TASK)],
    ) -> ToolResult:
        """Give a self-contained task to one worker; returns its summary, data and artifact
        pointers (never its transcript).

        Args:
            worker: The worker's name (coder, reviewer, writer, optimizer, skeptic, ...).
            task: Everything the worker needs: it sees nothing of your conversation.
        """
        return await run_delegate(tree_for(ctx), ctx.call_id, worker, task)

    @tool("agents.debate", risk=Risk.EXECUTE, read_only=True, timeout_s=24 * 3600.0)
    async def debate(
        ctx: ToolContext,
        workers: Annotated[list[str], Field(min_length=2, max_length=8)],
        question: Annotated[str, Field(min_length=1, max_length=MAX_TASK)],
        rounds: Annotated[int, Field(ge=1, le=3)] = 1,
        judge: Annotated[str, Field(min_length=1, max_length=32)] = "judge",
    ) -> ToolResult:
        """Ask several workers the same question in parallel (optionally over rounds where
        each sees the others' answers), then have a judge worker give one decision.

        Args:
            workers: Two or more worker names, e.g. ["coder", "reviewer", "skeptic"].
            question: A self-contained question.
            rounds: Rounds of answers (1-3); from round 2 each sees the others' summaries.
            judge: The worker that weighs the answers and decides.
        """
        return await run_debate(tree_for(ctx), ctx.call_id, workers, question, rounds, judge)

    @tool("agents.pipeline", risk=Risk.EXECUTE, read_only=True, timeout_s=24 * 3600.0)
    async def pipeline(
        ctx: ToolContext,
        steps: Annotated[list[PipelineStep], Field(min_length=1, max_length=12)],
        input: Annotated[str, Field(max_length=MAX_TASK)] = "",
    ) -> ToolResult:
        """Run workers one after another; ``{{input}}`` in a step's task is replaced by the
        previous step's delivery (summary, data and artifact pointers).

        Args:
            steps: [{"worker": name, "task": text with {{input}}}, ...] in order.
            input: What ``{{input}}`` means in the first step (default: empty).
        """
        return await run_pipeline(tree_for(ctx), ctx.call_id, steps, input)

    @tool("agents.open_artifact", timeout_s=30.0, output_cap=MAX_READ + 2_000)
    def open_artifact(
        ctx: ToolContext,
        pointer: Annotated[str, Field(min_length=1, max_length=4_000)],
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=1, le=MAX_READ)] = MAX_READ,
    ) -> ToolResult:
        """Read an artifact a worker delivered: a path (in the project or a child's isolated
        workspace, or a child's diff) or ``session:ID`` for a child's delivery.

        Args:
            pointer: A value from artifact_pointers or workspace.diff, or session:CHILD_ID.
            offset: First character to return (for long files).
            max_chars: How many characters to return at most.
        """
        return read_artifact(tree_for(ctx), pointer, offset, max_chars)

    return [delegate, debate, pipeline, open_artifact]


def conversation_tool(tree_for: TreeFor) -> Tool:
    """``agents.ask``: a message to a worker's own conversation in this session."""

    @tool("agents.ask", risk=Risk.EXECUTE, read_only=True, timeout_s=24 * 3600.0)
    async def ask(
        ctx: ToolContext,
        worker: Annotated[str, Field(min_length=1, max_length=32)],
        message: Annotated[str, Field(min_length=1, max_length=MAX_TASK)],
    ) -> ToolResult:
        """Send a message to a worker's own conversation in this session: unlike delegate,
        which starts fresh each time, the worker remembers your earlier messages to it.

        Args:
            worker: The worker's name.
            message: The message; it sees its earlier conversation with you, nothing else.
        """
        outcome = await converse(tree_for(ctx), worker, message)
        if not outcome.ok:
            return _failed(outcome)
        return ToolResult.success(outcome.summary, **outcome.public())

    return ask


async def run_delegate(tree: TreeContext, call_id: str, worker: str, task: str) -> ToolResult:
    outcome = await run_child(tree, worker, task, f"{call_id}|delegate")
    if not outcome.ok:
        return _failed(outcome)
    return ToolResult.success(f"{worker} delivered: {outcome.summary}", **outcome.public())


async def run_debate(
    tree: TreeContext, call_id: str, workers: list[str], question: str, rounds: int, judge: str
) -> ToolResult:
    if len(set(workers)) != len(workers):
        return ToolResult.failure(
            "TOOL_ARGUMENTS_INVALID",
            "A worker is named twice in the debate.",
            hint="Name each worker once.",
            retryable=True,
        )
    answers: list[ChildOutcome] = []
    for r in range(1, rounds + 1):
        tasks = [_debate_task(question, name, answers, r, rounds) for name in workers]
        answers = list(
            await asyncio.gather(
                *(
                    run_child(tree, name, t, f"{call_id}|debate|{r}|{i}")
                    for i, (name, t) in enumerate(zip(workers, tasks, strict=True))
                )
            )
        )
    heard = [a for a in answers if a.ok]
    briefs = [_brief(a) for a in answers]
    if not heard:
        return ToolResult.failure(
            "DEBATE_NO_ANSWERS",
            f"No worker of the debate answered; the first reason: {answers[0].message}",
            hint="Check the workers' errors below, then ask again or answer yourself.",
            data={"answers": briefs},
        )
    verdict = await run_child(tree, judge, _judge_task(question, heard), f"{call_id}|judge")
    if not verdict.ok:
        return _failed(verdict, answers=briefs)
    return ToolResult.success(
        f"{judge} decided: {verdict.summary}",
        decision=verdict.public(),
        answers=briefs,
        rounds=rounds,
    )


async def run_pipeline(
    tree: TreeContext, call_id: str, steps: list[PipelineStep], first_input: str
) -> ToolResult:
    previous = first_input
    done: list[ChildOutcome] = []
    for i, step in enumerate(steps):
        task = step.task.replace("{{input}}", previous)
        outcome = await run_child(tree, step.worker, task, f"{call_id}|pipe|{i}")
        done.append(outcome)
        if not outcome.ok:
            return ToolResult.failure(
                outcome.code or "CHILD_FAILED",
                f"Pipeline step {i + 1} ({step.worker}) failed: {outcome.message}",
                hint=outcome.hint or "Fix the step's task and run the rest again.",
                data={"failed_step": i + 1, "steps": [_brief(o) for o in done]},
            )
        assert outcome.delivery is not None
        previous = outcome.delivery.as_input()
    last = done[-1]
    return ToolResult.success(
        f"pipeline finished; last step ({last.worker}): {last.summary}",
        **last.public(),
        steps=[_brief(o) for o in done],
    )


def read_artifact(tree: TreeContext, pointer: str, offset: int, max_chars: int) -> ToolResult:
    if pointer.startswith("session:"):
        return _child_delivery(tree, pointer.removeprefix("session:"))
    try:
        resolved = resolve_inside_root(
            pointer, tree.project, extra_roots=_tree_roots(tree), write=False, must_exist=True
        )
    except PolicyDenied as err:
        return ToolResult.failure(
            err.code, err.message, hint="Open a pointer a worker of this run delivered."
        )
    if not resolved.path.is_file():
        return ToolResult.failure(
            "ARTIFACT_NOT_A_FILE",
            f"{pointer} is not a regular file.",
            hint="List a folder with fs.list; open a file inside it.",
        )
    text = resolved.path.read_bytes().decode("utf-8", "replace")
    chunk = text[offset : offset + max_chars]
    more = offset + len(chunk) < len(text)
    return ToolResult.success(
        chunk,
        truncated=more,
        path=str(resolved.path),
        chars=len(text),
        next_offset=offset + len(chunk) if more else None,
    )


def _debate_task(
    question: str, name: str, previous: list[ChildOutcome], round_no: int, rounds: int
) -> str:
    if round_no == 1:
        return f"Debate question (answer from your role's point of view):\n\n{question}"
    others = "\n\n".join(f"[{o.worker}] {o.summary}" for o in previous if o.worker != name and o.ok)
    return (
        f"Debate question, round {round_no} of {rounds}:\n\n{question}\n\n"
        f"The other answers of the previous round:\n\n{others or '(none)'}\n\n"
        "Answer again: keep or revise your position, and say why."
    )


def _judge_task(question: str, answers: list[ChildOutcome]) -> str:
    listed = "\n\n".join(
        f"[{a.worker}] {a.summary}"
        + (f"\ndata: {a.delivery.data}" if a.delivery is not None and a.delivery.data else "")
        for a in answers
    )
    return f"Question:\n\n{question}\n\nAnswers:\n\n{listed}\n\nGive one reasoned decision."


def _tree_roots(tree: TreeContext) -> tuple[Path, ...]:
    """The isolated workspaces (tree and diff) of this parent's children."""
    roots = (child_dir(c.id) for c in tree.store.list_children(tree.parent_session))
    return tuple(p for p in roots if p.is_dir())


def _child_delivery(tree: TreeContext, child_id: str) -> ToolResult:
    session = tree.store.get_session(child_id)
    if session is None or session.parent_session_id != tree.parent_session:
        return ToolResult.failure(
            "ARTIFACT_NOT_FOUND",
            f"{child_id} is not a child session of this run.",
            hint="Use a session_id from a delegate, debate or pipeline result.",
        )
    delivery = delivery_from_store(tree.store, child_id)
    return ToolResult.success(delivery.summary, state=session.state, **delivery.to_dict())
