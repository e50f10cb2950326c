"""``PageRun``: one ``chat()`` of the page agent, as hooks on the one loop.

- ``before_model_call``: follow the route, build this round's compact message.
- ``request_view``: the model is sent the system prompt, the memory and that message only.
- ``after_tools``: advance REMAINING (or reduce heuristically), record done steps, stop when
  done, idle or repeating, run the not-found retry dialogue, refresh the snapshot.
- ``completion_gate``: a final answer with work left is a protocol violation round.
The page toolbox asks it about each call (``intercept``, ``before_execute``, ``after_execute``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from xclaw.core.errors import EndRun
from xclaw.core.hooks import Hooks
from xclaw.core.messages import ImagePart, Message, TextPart, ToolCallPart, ToolResult
from xclaw.core.state import RunState, ToolCallRecord
from xclaw.core.tooling import PreparedCall
from xclaw.page import recovery as rc
from xclaw.page.callbacks import WebAgentCallbacks
from xclaw.page.keeper import SnapshotKeeper
from xclaw.page.metrics import MetricsCollector
from xclaw.page.remaining import Remaining, is_done, parse_remaining, reduce_heuristically
from xclaw.page.remaining import strip_remaining as _strip
from xclaw.page.rounds import (
    RoundInput,
    build_round_message,
    deduplicate_snapshots,
    describe_call,
    describe_result,
    normalise_output,
    outdate_snapshots,
)

Rerun = Callable[[], Awaitable[ToolResult]]


@dataclass(slots=True)
class PageRunSetup:
    """What a run is given by the agent; the agent's settings stay on the agent."""

    task: str
    keeper: SnapshotKeeper
    metrics: MetricsCollector
    callbacks: WebAgentCallbacks
    system_prompt: Callable[[], str]
    follow_url: Callable[[], None]  # route skills: look at the page's URL now
    settings: rc.PageLoopSettings = field(default_factory=rc.PageLoopSettings)
    history: Sequence[Message] = ()
    dry_run: bool = False


class PageRun:
    def __init__(self, setup: PageRunSetup) -> None:
        self.setup = setup
        self.keeper = setup.keeper
        self.settings = setup.settings
        self.remaining = setup.task
        self.done_steps: list[str] = []
        self.previous_planned: list[str] = []
        self.previous_output = ""
        self.previous_results: list[str] = []
        self.previous_images: list[ImagePart] = []  # screenshots for the next round message
        self.protocol_hint = ""
        self.violations = 0
        self.round_message: Message | None = None
        self.retry = rc.NotFoundRetry(self.settings.not_found_retry_rounds)
        self.batches = rc.BatchGuard()
        self.idle = rc.IdleDetector(self.settings.idle_rounds)
        self.debounce = rc.SnapshotDebounce(self.settings.snapshot_debounce)
        self.recoveries: dict[str, int] = {}
        self.state: RunState | None = None
        self.batch_checked_turn = -1
        self.stop: EndRun | None = None
        self.broke_after: str | None = None

    def hooks(self) -> Hooks:
        return Hooks(
            before_model_call=[self.before_model_call],
            after_tools=[self.after_tools],
            completion_gate=[self.completion_gate],
            request_view=[self.view],
        )

    # -- hooks ----------------------------------------------------------------------------
    async def before_model_call(self, state: RunState) -> None:
        self.state = state
        self.broke_after = None
        if state.turn > 0:  # seed 002 §1.3: every round reads the page as it is now
            await self.keeper.refresh()
        self.setup.follow_url()
        text = build_round_message(
            RoundInput(
                round=state.turn,
                task=self.setup.task,
                remaining=self.remaining,
                snapshot=self.keeper.wrapped(),
                done_steps=self.done_steps,
                previous_planned=self.previous_planned,
                previous_output=self.previous_output,
                previous_results=self.previous_results,
                extra_sections=self._extra_sections(),
            )
        )
        self._outdate_previous_round(state)
        images, self.previous_images = tuple(self.previous_images), []
        self.round_message = Message("user", (TextPart(text), *images))
        state.append(self.round_message, "system_alert")

    def view(self, state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        assert self.round_message is not None, "before_model_call builds the round message"
        system = Message.system(self.setup.system_prompt())
        return deduplicate_snapshots([system, *self.setup.history, self.round_message])

    async def after_tools(self, state: RunState, records: list[ToolCallRecord]) -> None:
        reply = _last_reply(state)
        if self.setup.dry_run:
            raise EndRun(
                "dry run: the planned calls were not executed",
                code="PAGE_DRY_RUN",
                status="completed",
                reply=_dry_run_reply(reply, records),
            )
        if self.stop is not None:
            raise self.stop
        had_error = any(not r.result.ok for r in records)
        before = self.remaining
        self._advance(reply, records)
        self.batches.record(rc.batch_key([(r.name, r.input) for r in records]), had_error)
        if is_done(self.remaining) and not had_error:
            raise EndRun(
                "the model reported REMAINING: DONE",
                code="PAGE_TASK_DONE",
                status="completed",
                reply=self._final_reply(reply),
            )
        read_only = all(rc.is_read_only_call(r.name, r.input, r.read_only) for r in records)
        if self.idle.record(read_only, progressed=self.remaining != before):
            raise self._ended(
                "PAGE_IDLE_LOOP",
                f"{self.idle.streak} rounds in a row only read the page and made no progress",
                reply,
            )
        await self._not_found_dialogue(records)

    def completion_gate(self, state: RunState) -> str | None:
        reply = _last_reply(state)
        parsed = parse_remaining(reply)
        if self.setup.dry_run or parsed.done or (not parsed.given and is_done(self.remaining)):
            return None
        if parsed.value is not None:
            self.remaining = parsed.value
        self.violations += 1
        if self.violations > self.settings.protocol_violation_rounds:
            raise self._ended(
                "PAGE_PROTOCOL_VIOLATION",
                f"{self.violations} replies in a row had no tool call while work was left",
                reply,
            )
        self.previous_output = normalise_output(reply)
        self.previous_planned, self.previous_results = [], []
        self.protocol_hint = (
            "Your previous reply had no tool calls, but the task is not finished. Either return "
            "the tool calls that continue it from the latest snapshot, or, if nothing is left, "
            "reply with exactly `REMAINING: DONE`."
        )
        return f"Protocol violation: work is left ({self.remaining}). Act, or say REMAINING: DONE."

    # -- the toolbox asks -----------------------------------------------------------------
    def intercept(self, call: ToolCallPart) -> ToolResult | None:
        """A result for a call that must not run (nothing ran), or None."""
        if self.setup.dry_run:
            return ToolResult.success("dry run: planned, not executed", dry_run=True)
        self._check_batch()
        if self.stop is not None:
            return ToolResult.failure(
                rc.REPEATED_BATCH_SKIPPED,
                "Not run: the same batch as last round, which succeeded.",
                data={"skipped": True},
            )
        return None

    async def before_execute(self, call: ToolCallPart) -> ToolResult | None:
        """The forced round break (nothing runs after a DOM-changing action in one batch), and
        a ``page_info`` read of what the round's snapshot already shows: refused only while
        no action ran and the page has not changed since that snapshot."""
        if self.broke_after:
            return rc.round_break_result(self.broke_after)
        debounced = self.debounce.check(call.name, call.arguments)
        if call.name != "page_info":
            return None
        action = rc.action_of(call.arguments)
        if action not in rc.REDUNDANT_PAGE_INFO or not self.keeper.fresh:
            return None
        if self.keeper.can_tell and await self.keeper.changed(since_any=True):
            return None  # e.g. after a wait: the snapshot is not current, let the model read
        refused = rc.redundant_page_info(action, True, self.keeper.url) or debounced
        if refused is not None:
            self.setup.metrics.intercepts += 1
        return refused

    async def after_execute(
        self, prepared: PreparedCall, result: ToolResult, rerun: Rerun
    ) -> ToolResult:
        name, args = prepared.call.name, prepared.call.arguments
        if name == "dom" and result.error_code in rc.RECOVERABLE_CODES:
            result = await self._recover(args, result, rerun)
        if not result.ok:
            return result
        if rc.is_action(name, args, prepared.spec.read_only):
            self.keeper.stale()
        if rc.changes_dom(name, args):
            self.broke_after = describe_call(name, args)
        if rc.is_navigation(name, args) or result.data.get("navigated") is True:
            self.setup.callbacks.before_recovery_snapshot(_page_url(result, args))
            await self.keeper.read()
        return result

    # -- internals --------------------------------------------------------------------------
    def _check_batch(self) -> None:
        """Once per turn, before any call runs: is this the batch that just succeeded?"""
        state = self.state
        if state is None or self.batch_checked_turn == state.turn:
            return
        self.batch_checked_turn = state.turn
        calls = state.messages[-1].tool_calls if state.messages else []
        if calls and self.batches.repeated(rc.batch_key([(c.name, c.arguments) for c in calls])):
            self.stop = self._ended(
                "PAGE_REPEATED_BATCH",
                "the model planned the same batch as the previous round, which succeeded",
                _last_reply(state),
            )

    async def _recover(
        self, args: dict[str, object], result: ToolResult, rerun: Rerun
    ) -> ToolResult:
        selector, action = str(args.get("selector", "")), rc.action_of(args)
        attempt = self.recoveries.get(selector, 0) + 1
        self.recoveries[selector] = attempt
        limit = self.settings.action_recovery_rounds
        if attempt > limit:
            return rc.max_recovery_result(selector, limit, action, result.message)
        self.setup.metrics.recoveries += 1
        self.setup.callbacks.before_recovery_snapshot(None)
        await asyncio.sleep(self.settings.recovery_wait_ms / 1000)
        await self.keeper.read()
        if self.keeper.has_ref(selector):  # it came back under the same ref: try once more
            again = await rerun()
            if again.ok:
                return replace(again, data={**again.data, "recoveryAttempt": attempt})
        return rc.recovery_result(selector, attempt, limit, action)

    def _advance(self, reply: str, records: list[ToolCallRecord]) -> None:
        parsed: Remaining = parse_remaining(reply)
        actions = [r for r in records if r.result.ok and rc.is_action(r.name, r.input, r.read_only)]
        if parsed.done and any(not r.result.ok for r in records):
            self.protocol_hint = ""  # "done" over a failed call: what is left is not known
        elif parsed.value is not None:
            self.remaining = "" if parsed.done else parsed.value
            self.protocol_hint = ""
        elif actions:
            self.remaining = reduce_heuristically(self.remaining, len(actions))
            self.protocol_hint = ""
        else:
            self.protocol_hint = (
                "Your previous reply had no REMAINING line: end every reply with one."
            )
        self.violations = 0
        self.done_steps += [describe_call(r.name, r.input) for r in actions]
        self.previous_planned = [describe_call(r.name, r.input) for r in records]
        self.previous_output = normalise_output(reply)
        self.previous_results = [describe_result(r.name, r.input, r.result) for r in records]
        self.previous_images = [image for r in records for image in r.result.images]

    async def _not_found_dialogue(self, records: list[ToolCallRecord]) -> None:
        failures = [
            describe_result(r.name, r.input, r.result)
            for r in records
            if r.result.error_code in rc.NOT_FOUND_CODES
        ]
        if self.retry.update(failures):  # the retry missed again: give the page time
            await asyncio.sleep(self.settings.not_found_retry_wait_ms / 1000)
            self.keeper.stale()

    def _extra_sections(self) -> list[tuple[str, str]]:
        sections = []
        if self.previous_images:
            count = len(self.previous_images)
            sections.append(
                (
                    "Screenshots",
                    f"{count} screenshot{'s' if count > 1 else ''} from the previous round "
                    "follow this text as images (a model that cannot see them gets the file "
                    "paths in the previous round results).",
                )
            )
        retry = self.retry.section()
        if retry is not None:
            sections.append(retry)
        if self.protocol_hint:
            sections.append(("Protocol violation", self.protocol_hint))
        return sections

    def _outdate_previous_round(self, state: RunState) -> None:
        old = self.round_message
        if old is None:
            return
        for i in range(len(state.messages) - 1, -1, -1):
            if state.messages[i] is old:
                state.messages[i] = Message.user(outdate_snapshots(old.text))
                return

    def _final_reply(self, reply: str) -> str:
        text = _strip(reply)
        return text or "Done: " + "; ".join(self.done_steps)

    def _ended(self, code: str, message: str, reply: str) -> EndRun:
        if is_done(self.remaining):
            return EndRun(message, code=code, status="completed", reply=self._final_reply(reply))
        return EndRun(message, code=code, status="interrupted", reply=_strip(reply))


def _last_reply(state: RunState) -> str:
    for msg in reversed(state.messages):
        if msg.role == "assistant":
            return msg.text
    return ""


def _page_url(result: ToolResult, args: dict[str, object]) -> str | None:
    url = result.data.get("url") or args.get("url")
    return str(url) if url else None


def _dry_run_reply(reply: str, records: list[ToolCallRecord]) -> str:
    lines = [f"Dry run: {len(records)} planned tool call(s), none executed."]
    lines += [f"{i}. {describe_call(r.name, r.input)}" for i, r in enumerate(records, 1)]
    text = _strip(reply)
    return "\n".join(lines + ([text] if text else []))
