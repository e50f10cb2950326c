"""Prometheus metrics from loop events (one subscriber for every session's bus).

    metrics = RunMetrics()              # its own registry: two gateways never mix counters
    metrics.attach(agent)               # the agent's bus feeds it; prices from its model
    metrics.exposition()                # text format for GET /metrics

Labels come from bounded sets: a tool name or error code is the model's to choose, so past
``MAX_LABEL_VALUES`` distinct values a label reads ``other`` (no unbounded series).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xclaw.core.events import Event
from xclaw.obs.pricing import PriceBook
from xclaw.obs.wiring import Observed

__all__ = ["CONTENT_TYPE", "MAX_LABEL_VALUES", "ConnectionCounter", "RunMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
MAX_LABEL_VALUES = 200
_SECONDS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_RUN_SECONDS = (0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600)
_RUN_ENDS = {"run.completed": "completed", "run.interrupted": "interrupted", "run.failed": "failed"}


class _Bounded:
    """A label's values, capped: a new value past the cap is reported as ``other``."""

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self.seen: set[str] = set()

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if value in self.seen:
            return value
        if len(self.seen) >= self.limit:
            return "other"
        self.seen.add(value)
        return value


class RunMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.prices = PriceBook()
        self._lock = threading.Lock()
        self._models: dict[str, str] = {}  # session -> its run's model
        self._llm_started: dict[str, float] = {}  # session -> model.message_sent time
        self._ran: set[tuple[str, int, str | None]] = set()  # calls that started
        self._tool = _Bounded()
        self._code = _Bounded()
        self._model = _Bounded()
        self._define(self.registry)

    def _define(self, r: CollectorRegistry) -> None:
        self.runs = Counter("xclaw_runs", "Finished runs by status.", ["status"], registry=r)
        self.runs_active = Gauge("xclaw_runs_active", "Runs in progress.", registry=r)
        self.tool_calls = Counter(
            "xclaw_tool_calls", "Tool calls by tool and outcome.", ["tool", "outcome"], registry=r
        )
        self.approvals = Counter(
            "xclaw_approvals", "Approval answers by decision.", ["decision"], registry=r
        )
        self.tokens = Counter(
            "xclaw_llm_tokens",
            "Model tokens by model and direction.",
            ["model", "direction"],
            registry=r,
        )
        self.cost = Counter(
            "xclaw_llm_cost_usd",
            "Model cost in US dollars by model (priced models only).",
            ["model"],
            registry=r,
        )
        self.run_seconds = Histogram(
            "xclaw_run_duration_seconds",
            "Run wall time by status.",
            ["status"],
            buckets=_RUN_SECONDS,
            registry=r,
        )
        self.llm_seconds = Histogram(
            "xclaw_llm_call_duration_seconds",
            "Model call latency by model.",
            ["model"],
            buckets=_SECONDS,
            registry=r,
        )
        self.tool_seconds = Histogram(
            "xclaw_tool_duration_seconds",
            "Tool execution time by tool.",
            ["tool"],
            buckets=_SECONDS,
            registry=r,
        )

        self.connections = Gauge(
            "xclaw_gateway_connections", "Open WebSocket connections.", registry=r
        )
        self.sessions = Gauge("xclaw_gateway_sessions", "Live gateway sessions.", registry=r)

    # -- wiring ----------------------------------------------------------------------------
    def attach(self, agent: Observed) -> Callable[[], None]:
        self.prices.learn(agent.model)
        return agent.bus.subscribe(self)

    def count_sessions(self, live: Callable[[], int]) -> None:
        """The sessions gauge reads ``live()`` at each scrape."""
        self.sessions.set_function(lambda: float(live()))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    # -- events ----------------------------------------------------------------------------
    def __call__(self, ev: Event) -> None:
        with self._lock:
            self._count(ev)

    def _count(self, ev: Event) -> None:
        p = ev.payload
        sid = ev.session_id
        if ev.type == "run.started":
            self._models[sid] = str(p.get("model") or "")
            self.runs_active.inc()
        elif ev.type in _RUN_ENDS:
            self._run_end(ev, _RUN_ENDS[ev.type])
        elif ev.type == "model.message_sent":
            self._llm_started[sid] = ev.timestamp
        elif ev.type == "model.message_complete":
            self._llm_end(ev)
        elif ev.type == "approval.resolved":
            self.approvals.labels(str(p.get("answer") or "unknown")[:20]).inc()
        elif ev.type == "tool.started":
            self._ran.add((sid, ev.turn, ev.tool_call_id))
        elif ev.type == "tool.completed":
            self._tool_end(ev)

    def _run_end(self, ev: Event, status: str) -> None:
        if self._models.pop(ev.session_id, None) is not None:
            self.runs_active.dec()
        self._llm_started.pop(ev.session_id, None)
        self._ran = {k for k in self._ran if k[0] != ev.session_id}
        self.runs.labels(status).inc()
        metrics: dict[str, Any] = ev.payload.get("metrics") or {}
        ms = metrics.get("duration_ms")
        if isinstance(ms, int | float):
            self.run_seconds.labels(status).observe(ms / 1000)

    def _llm_end(self, ev: Event) -> None:
        name = self._models.get(ev.session_id, "")
        model = self._model(name)
        started = self._llm_started.pop(ev.session_id, None)
        if started is not None:
            self.llm_seconds.labels(model).observe(max(0.0, ev.timestamp - started))
        tokens_in, tokens_out = ev.payload.get("input_tokens"), ev.payload.get("output_tokens")
        if isinstance(tokens_in, int):
            self.tokens.labels(model, "input").inc(tokens_in)
        if isinstance(tokens_out, int):
            self.tokens.labels(model, "output").inc(tokens_out)
        cost = self.prices.cost(name, tokens_in, tokens_out)
        if cost is not None:
            self.cost.labels(model).inc(cost)

    def _tool_end(self, ev: Event) -> None:
        p = ev.payload
        tool = self._tool(str(p.get("name") or ""))
        outcome = "ok" if p.get("ok") else self._code(str(p.get("error_code") or "error"))
        self.tool_calls.labels(tool, outcome).inc()
        key = (ev.session_id, ev.turn, ev.tool_call_id)
        ms = p.get("duration_ms")
        if key in self._ran and isinstance(ms, int | float):
            self._ran.discard(key)
            self.tool_seconds.labels(tool).observe(ms / 1000)


class ConnectionCounter:
    """ASGI middleware: +1 when a WebSocket is accepted, -1 when its handler returns
    (``app.add_middleware(ConnectionCounter, gauge=metrics.connections)``)."""

    def __init__(self, app: ASGIApp, gauge: Gauge) -> None:
        self.app = app
        self.gauge = gauge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        accepted = False

        async def counting_send(message: Message) -> None:
            nonlocal accepted
            if message["type"] == "websocket.accept" and not accepted:
                accepted = True
                self.gauge.inc()
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            if accepted:
                self.gauge.dec()
