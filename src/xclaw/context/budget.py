"""The context budget: before each model call, make the conversation fit the window.

In order, stopping as soon as the conversation fits:

1. prune old tool output: results (and long call arguments) outside the last
   ``keep_recent`` turns become short placeholders; every call keeps its result;
2. remove whole old turns after the task, oldest first, down to ``trim_to`` of the limit so
   the next few calls need no trimming (and keep a stable prefix for prompt caches); one
   note stands in for them, a checkpoint summary when a compaction model is given;
3. if the recent turns alone are too big, do the same to them, all but the latest; then
   prune the latest; if the task and the latest turn still cannot fit, stop the run with
   ``LIMIT_CONTEXT_WINDOW`` rather than send a request the provider will refuse.

A turn is an assistant message with the tool message holding its results, so a call is
never split from its result; the system prompt and the task are never touched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from xclaw.context.compaction import ContextNote, compact, count_turns, truncation_note
from xclaw.context.tokens import REPLY_PRIMING, TokenCounter, count_messages
from xclaw.core.errors import ConfigError, LimitExceeded
from xclaw.core.messages import Message, Part, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import Model
from xclaw.core.state import RunState, ToolCallRecord

_PRUNE_ABOVE_CHARS = 400  # smaller results cost less than the placeholder is worth
_ARGUMENT_KEEP_CHARS = 1_000
_KEPT_VALUE_CHARS = 80
_KEPT_DATA_ENTRIES = 8
_STATUS_RESERVE = 64  # tokens for the note's status line
_WRITE_RISKS = ("write", "destructive")


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """How much of a model's window the conversation may use.

    ``reserve_output`` is kept free for the reply and should include the tool schemas sent
    with every request; ``margin`` absorbs counting error (estimates run ~10% off).
    """

    window: int
    _: KW_ONLY
    reserve_output: int
    counter: TokenCounter
    keep_recent: int = 4
    margin: float = 0.05
    trim_to: float = 0.7
    summary_tokens: int = 1_500

    def __post_init__(self) -> None:
        if self.keep_recent < 1 or not 0 < self.trim_to <= 1 or not 0 <= self.margin < 0.5:
            raise ConfigError(
                "Context budget settings are out of range.",
                hint="Use keep_recent >= 1, 0 < trim_to <= 1 and 0 <= margin < 0.5.",
            )
        if self.limit <= 0:
            raise ConfigError(
                f"A context window of {self.window} tokens leaves no room after reserving "
                f"{self.reserve_output} for the reply.",
                hint="Lower reserve_output or use a model with a larger window.",
            )

    @property
    def limit(self) -> int:
        """Tokens the messages of one request may use."""
        return int(self.window * (1 - self.margin)) - self.reserve_output

    @property
    def target(self) -> int:
        """Where trimming aims, below the limit."""
        return int(self.limit * self.trim_to)

    def fits(self, messages: Sequence[Message]) -> bool:
        return count_messages(self.counter, messages) <= self.limit


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the parts of a conversation are: messages[:head] are the system prompt and the
    task; an existing note sits at messages[head]; then one (start, end) range per turn."""

    head: int
    note: ContextNote | None
    turns: list[tuple[int, int]]


def split_conversation(messages: Sequence[Message]) -> Layout:
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    if first_user is None:
        head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    else:
        head = first_user + 1
    note = ContextNote.parse(messages[head]) if head < len(messages) else None
    turns: list[tuple[int, int]] = []
    for i in range(head + (note is not None), len(messages)):
        # Tool messages belong to the turn before them; anything else starts a turn.
        if messages[i].role == "tool" and turns:
            turns[-1] = (turns[-1][0], i + 1)
        else:
            turns.append((i, i + 1))
    return Layout(head, note, turns)


@dataclass(slots=True)
class FitReport:
    tokens_before: int
    tokens_after: int = 0
    pruned: int = 0
    removed_turns: int = 0
    compactions: list[dict[str, Any]] = field(default_factory=list)  # compact()'s records

    @property
    def changed(self) -> bool:
        return bool(self.pruned or self.removed_turns or self.compactions)


def pruned_result(part: ToolResultPart) -> ToolResult:
    """A short stand-in for an old result: same outcome and code, small facts kept."""
    old = part.result
    kept = {
        k: v
        for k, v in old.data.items()
        if v is None or isinstance(v, bool | int | float) or _short_str(v)
    }
    data: dict[str, Any] = dict(list(kept.items())[:_KEPT_DATA_ENTRIES])
    data["pruned"] = True
    head = old.message if len(old.message) <= 200 else old.message[:200] + "…"
    message = (
        f"[output pruned to fit the context window; call {part.name} again to read it, "
        f"asking for a smaller part if it was large] {head}"
    ).rstrip()
    return ToolResult(
        ok=old.ok,
        message=message,
        data=data,
        error_code=old.error_code,
        retryable=old.retryable,
        truncated=True,
        hint=old.hint[:200],
    )


def _short_str(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= _KEPT_VALUE_CHARS


def _prune_part(part: Part) -> Part | None:
    """The pruned form of a part, or None when it is already small."""
    if isinstance(part, ToolResultPart):
        if part.result.data.get("pruned") is True:
            return None
        size = len(part.result.to_model_text())
        if size <= _PRUNE_ABOVE_CHARS:
            return None
        new = ToolResultPart(part.call_id, part.name, pruned_result(part))
        return new if len(new.result.to_model_text()) < size else None
    if isinstance(part, ToolCallPart):
        args = {
            k: f"[{len(v)} characters pruned from the context]"
            if isinstance(v, str) and len(v) > _ARGUMENT_KEEP_CHARS
            else v
            for k, v in part.arguments.items()
        }
        return ToolCallPart(part.call_id, part.name, args) if args != part.arguments else None
    return None


def prune_output(messages: list[Message], layout: Layout, keep_last: int) -> int:
    """Prune tool output in all turns but the last ``keep_last``; the number of parts pruned."""
    pruned = 0
    for start, end in layout.turns[: max(len(layout.turns) - keep_last, 0)]:
        for i in range(start, end):
            msg = messages[i]
            if msg.role not in ("assistant", "tool"):
                continue
            parts = [_prune_part(p) for p in msg.parts]
            if any(parts):
                pruned += sum(1 for p in parts if p is not None)
                new_parts = tuple(n or p for n, p in zip(parts, msg.parts, strict=True))
                messages[i] = Message(msg.role, new_parts)
    return pruned


def plan_drop(costs: Sequence[int], fixed: int, target: int, limit: int, floor: int) -> int | None:
    """How many leading turns to remove: the fewest that reach ``target``; failing that all
    that may go (all but ``floor``) if that fits ``limit``; None if nothing works."""
    most = len(costs) - floor
    if most <= 0:
        return None
    rest = sum(costs)
    for k in range(1, most + 1):
        rest -= costs[k - 1]
        if fixed + rest <= target:
            return k
    return most if fixed + rest <= limit else None


@dataclass(slots=True)
class Trimmer:
    """One fit of one conversation; carries what the note and the summary need."""

    budget: ContextBudget
    model: Model | None = None
    task: str = ""
    turn: int = 0
    known_files: Sequence[str] = ()
    report: FitReport = field(default_factory=lambda: FitReport(0))

    async def fit(self, messages: list[Message]) -> FitReport:
        budget = self.budget
        self.report = FitReport(count_messages(budget.counter, messages))
        levels = ((budget.keep_recent, budget.keep_recent), (1, 1), (1, 0))
        if self.report.tokens_before > budget.limit:
            for floor, keep_unpruned in levels:
                if await self._level(messages, floor, keep_unpruned):
                    break
            else:
                self._give_up(messages)
        self.report.tokens_after = count_messages(budget.counter, messages)
        return self.report

    async def _level(self, messages: list[Message], floor: int, keep_unpruned: int) -> bool:
        """Prune, then remove turns, keeping ``floor`` turns; True once it fits."""
        layout = split_conversation(messages)
        self.report.pruned += prune_output(messages, layout, keep_unpruned)
        if self.budget.fits(messages):
            return True
        counter = self.budget.counter
        costs = [sum(counter.count_message(m) for m in messages[s:e]) for s, e in layout.turns]
        k = plan_drop(
            costs, self._fixed(messages, layout), self.budget.target, self.budget.limit, floor
        )
        if k is not None:
            await self._remove(messages, layout, k)
        return self.budget.fits(messages)

    def _fixed(self, messages: list[Message], layout: Layout) -> int:
        """Tokens that stay whatever is removed: the head and the (largest possible) note."""
        counter = self.budget.counter
        head = sum(counter.count_message(m) for m in messages[: layout.head])
        note = truncation_note(messages[layout.head :], layout.note).to_message()
        summary = self.budget.summary_tokens if self.model else 0
        return REPLY_PRIMING + head + counter.count_message(note) + summary + _STATUS_RESERVE

    async def _remove(self, messages: list[Message], layout: Layout, k: int) -> None:
        start, end = layout.head, layout.turns[k - 1][1]
        removed = messages[layout.turns[0][0] : end]
        if self.model is None:
            replacement = [truncation_note(removed, layout.note).to_message()]
        else:
            replacement, record = await compact(
                removed,
                self.model,
                self.budget.counter,
                previous=layout.note,
                task=self.task,
                known_files=self.known_files,
                turn=self.turn,
                max_summary_tokens=self.budget.summary_tokens,
                max_input_tokens=max(self.budget.limit // 2, 1_024),
            )
            self.report.compactions.append(record)
        messages[start:end] = replacement
        self.report.removed_turns += count_turns(removed)

    def _give_up(self, messages: list[Message]) -> None:
        need = count_messages(self.budget.counter, messages)
        raise LimitExceeded(
            f"the task and the latest turn need {need} tokens, more than the "
            f"{self.budget.limit} this model's context window leaves for them",
            code="LIMIT_CONTEXT_WINDOW",
            hint="Use a model with a larger context window, or shorten the task.",
        )


async def fit_messages(
    messages: list[Message],
    budget: ContextBudget,
    *,
    model: Model | None = None,
    task: str = "",
    turn: int = 0,
    known_files: Sequence[str] = (),
) -> FitReport:
    """Make ``messages`` fit ``budget`` in place (see the module docstring for the order)."""
    return await Trimmer(budget, model, task, turn, known_files).fit(messages)


def changed_files(records: Sequence[ToolCallRecord]) -> list[str]:
    """Paths that successful writing calls named, in first-change order."""
    paths = (
        r.input.get("path")
        for r in records
        if r.result.ok and r.risk in _WRITE_RISKS and not r.read_only
    )
    return list(dict.fromkeys(p for p in paths if isinstance(p, str)))


def budget_hook(
    budget: ContextBudget, model: Model | None = None
) -> Callable[[RunState], Awaitable[None]]:
    """A ``BeforeModelCall`` hook keeping ``state.messages`` within ``budget``.

    With ``model``, removed turns are summarised into a checkpoint that is appended to
    ``state.extra["checkpoints"]`` for the store; ``state.extra["context"]`` keeps counters.
    """

    async def fit_context(state: RunState) -> None:
        report = await fit_messages(
            state.messages,
            budget,
            model=model,
            task=state.task,
            turn=state.turn,
            known_files=changed_files(state.all_records()),
        )
        stats = state.extra.setdefault(
            "context",
            {"pruned_results": 0, "removed_turns": 0, "compactions": 0, "compaction_failures": 0},
        )
        stats["tokens"] = report.tokens_after
        if not report.changed:
            return
        stats["pruned_results"] += report.pruned
        stats["removed_turns"] += report.removed_turns
        for record in report.compactions:
            _record_compaction(state, stats, record)

    return fit_context


def _record_compaction(state: RunState, stats: dict[str, Any], record: dict[str, Any]) -> None:
    state.add_usage(record.get("input_tokens"), record.get("output_tokens"))
    if record["ok"]:
        stats["compactions"] += 1
        state.extra.setdefault("checkpoints", []).append(record)
    else:
        stats["compaction_failures"] += 1
        stats["last_compaction_error"] = record["error"]
