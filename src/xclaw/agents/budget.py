"""One budget of tokens, cost and time for a whole tree of runs, and the tree's cancellation.

Every run of the tree (orchestrator and children) reports its model usage here through its
event bus and checks the budget before each model call (a ``before_model_call`` hook): when
any limit is spent, that run ends as *interrupted* with ``BUDGET_EXHAUSTED``, and no new
child starts. Tokens spent in earlier processes of a resumed tree are counted from the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from xclaw.core.errors import EndRun
from xclaw.core.events import Event
from xclaw.core.state import RunControl, RunState
from xclaw.store.base import Store


@dataclass(slots=True)
class TreeBudget:
    max_tokens: int | None = None
    max_usd: float | None = None
    max_seconds: float | None = None
    tokens: int = 0
    usd: float = 0.0
    unpriced_tokens: int = 0  # usage of models without known prices (not in ``usd``)
    started: float = field(default_factory=time.monotonic)

    def add(self, input_tokens: int | None, output_tokens: int | None, info: Any = None) -> None:
        n = (input_tokens or 0) + (output_tokens or 0)
        self.tokens += n
        cost = info.cost(input_tokens, output_tokens) if info is not None else None
        if cost is None:
            self.unpriced_tokens += n
        else:
            self.usd += cost

    def listener(self, info: Any = None) -> Any:
        """An event-bus subscriber counting one run's model usage."""

        def on_event(event: Event) -> None:
            if event.type == "model.message_complete":
                p = event.payload
                self.add(p.get("input_tokens"), p.get("output_tokens"), info)

        return on_event

    def remaining_seconds(self) -> float | None:
        if self.max_seconds is None:
            return None
        return self.max_seconds - (time.monotonic() - self.started)

    def exhausted(self) -> str | None:
        """A sentence naming the spent limit, or None."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"the tree used {self.tokens} tokens of its {self.max_tokens}-token budget"
        if self.max_usd is not None and self.usd >= self.max_usd:
            return f"the tree spent ${self.usd:.4f} of its ${self.max_usd:g} budget"
        left = self.remaining_seconds()
        if left is not None and left <= 0:
            return f"the tree ran longer than its {self.max_seconds:g}s budget"
        return None

    def hook(self, state: RunState) -> None:
        """``before_model_call``: stop this run when the tree's budget is spent."""
        reason = self.exhausted()
        if reason is not None:
            raise EndRun(reason, code="BUDGET_EXHAUSTED")

    def snapshot(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usd": round(self.usd, 6),
            "unpriced_tokens": self.unpriced_tokens,
            "max_tokens": self.max_tokens,
            "max_usd": self.max_usd,
            "max_seconds": self.max_seconds,
        }

    def count_recorded(self, store: Store, root_session: str) -> None:
        """Add the tokens recorded for a tree (a resumed one) to this budget."""
        pending = [root_session]
        while pending:
            sid = pending.pop()
            for step in store.list_steps(sid):
                self.tokens += (step.tokens_in or 0) + (step.tokens_out or 0)
            pending.extend(child.id for child in store.list_children(sid))


class ChildControl(RunControl):
    """A child's run control: it sees its parent's cancel request at every boundary, and
    can be cancelled on its own (a timeout, a budget stop). A parent's *pause* is not
    passed down: the parent pauses after the running children finish their task."""

    def __init__(self, parent: RunControl) -> None:
        self._own_cancel = False
        self.parent = parent
        super().__init__()

    @property
    def cancel_requested(self) -> bool:
        return self._own_cancel or self.parent.cancel_requested

    @cancel_requested.setter
    def cancel_requested(self, value: bool) -> None:
        self._own_cancel = value

    def cancel(self) -> None:
        self.cancel_requested = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
