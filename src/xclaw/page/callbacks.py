"""``WebAgentCallbacks`` (seed 002: onRound, onText, onToolCall, onToolResult, onSnapshot,
onBeforeRecoverySnapshot, onMetrics).

Round, text and tool callbacks are fed from the loop's event bus; snapshot, recovery and
metrics callbacks come from the page run. A failing callback never stops the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xclaw.core.events import Event, Subscriber
from xclaw.core.messages import ToolResult
from xclaw.page.metrics import AgentLoopMetrics


@dataclass(slots=True)
class WebAgentCallbacks:
    on_round: Callable[[int], None] | None = None  # round index, from 0
    on_text: Callable[[str], None] | None = None
    on_tool_call: Callable[[str, dict[str, Any]], None] | None = None
    on_tool_result: Callable[[str, ToolResult], None] | None = None
    on_snapshot: Callable[[str], None] | None = None  # the first round's automatic snapshot
    on_before_recovery_snapshot: Callable[[str | None], None] | None = None  # new URL if any
    on_metrics: Callable[[AgentLoopMetrics], None] | None = None

    def snapshot(self, text: str) -> None:
        _safe(self.on_snapshot, text)

    def before_recovery_snapshot(self, new_url: str | None) -> None:
        _safe(self.on_before_recovery_snapshot, new_url)

    def metrics(self, metrics: AgentLoopMetrics) -> None:
        _safe(self.on_metrics, metrics)

    def listener(self) -> Subscriber:
        """A bus subscriber calling the round, text and tool callbacks."""
        return lambda ev: _dispatch(self, ev)


def _dispatch(cb: WebAgentCallbacks, ev: Event) -> None:
    p = ev.payload
    if ev.type == "model.message_sent":
        _safe(cb.on_round, ev.turn - 1)
    elif ev.type == "model.message_complete" and p.get("text"):
        _safe(cb.on_text, str(p["text"]))
    elif ev.type == "tool.proposed":
        _safe(cb.on_tool_call, str(p["name"]), dict(p.get("arguments") or {}))
    elif ev.type == "tool.completed":
        result = ToolResult(
            ok=bool(p.get("ok")),
            message=str(p.get("message", "")),
            data=dict(p.get("data") or {}),
            error_code=p.get("error_code"),
        )
        _safe(cb.on_tool_result, str(p["name"]), result)


def _safe(fn: Callable[..., None] | None, *args: Any) -> None:
    if fn is None:
        return
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a broken callback must not stop the agent
        return
