"""Typed runtime events (names from seed 000 §6.2, plus model text deltas and multi-agent).

Surfaces subscribe to an ``EventBus``; they observe, they never drive state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventType = Literal[
    "browser.started",
    "browser.auth_required",
    "browser.takeover_required",
    "conversation.created",
    "conversation.mode_selected",
    "conversation.reply_read",
    "run.started",
    "model.message_sent",
    "model.streaming",
    "model.message_complete",
    "model.failover",
    "model.retry",
    "protocol.invalid",
    "tool.proposed",
    "approval.required",
    "approval.resolved",
    "tool.started",
    "tool.output",
    "tool.completed",
    "gate.refused",
    "run.completed",
    "run.interrupted",
    "run.failed",
    # Chronos (seed 003 ch. 11): unattended runs and what happens around them.
    "approval.denied",
    "chronos.fired",
    "chronos.skipped",
    "chronos.finished",
    "chronos.failed",
    "webhook.received",
    "notify.sent",
    "notify.failed",
    # Multi-agent (xclaw.agents): the route chosen before the orchestrator runs, and the
    # children a parent run starts and collects.
    "agents.routed",
    "agents.child_started",
    "agents.child_finished",
]

EVENT_TYPES: tuple[str, ...] = EventType.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Event:
    type: EventType
    session_id: str
    turn: int
    payload: dict[str, Any] = field(default_factory=dict)
    tool_call_id: str | None = None
    timestamp: float = field(default_factory=time.time)


Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers. A failing subscriber never breaks the run."""

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    @property
    def active(self) -> bool:
        return bool(self._subscribers)

    def emit(self, event: Event) -> None:
        for fn in self._subscribers:
            try:
                fn(event)
            except Exception:  # noqa: BLE001 - a broken view must not stop the agent
                continue
