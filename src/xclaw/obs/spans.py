"""Spans from loop events: an ``EventBus`` subscriber that never touches the loop.

One trace per run::

    agent.run                       run.started -> run.completed | interrupted | failed
      ├─ llm.call                   model.message_sent -> model.message_complete
      ├─ approval.wait              approval.required -> approval.resolved
      └─ tool.exec                  tool.started -> tool.completed (+ its measured duration)

A call refused before it ran (policy, user, bad arguments) still gets a ``tool.exec`` span,
from its proposal to its result, with the refusal as its outcome. Start and end times are the
events' own timestamps, so a span shows when things happened, not when the subscriber ran.
Other events of the run (retries, fail-overs, protocol errors, gate refusals) become span
events on the run. Each session has its own open run, so one builder can watch many buses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from xclaw.core.events import Event
from xclaw.obs import attributes as attrs

__all__ = ["PriceLookup", "SpanBuilder"]

PriceLookup = Callable[[str, int | None, int | None], float | None]
"""(model name, input tokens, output tokens) -> US dollars, or None when unpriced."""

RUN, LLM, TOOL, APPROVAL = "agent.run", "llm.call", "tool.exec", "approval.wait"


def _ns(timestamp: float) -> int:
    return int(timestamp * 1_000_000_000)


def _key(ev: Event) -> str:
    """The ledger's idempotency key of a call (``turn:call_id``), its step in the store."""
    return f"{ev.turn}:{ev.tool_call_id}"


@dataclass
class _Run:
    span: Span
    parent: otel_context.Context
    model: str
    llm: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)
    tool_started: dict[str, float] = field(default_factory=dict)
    approvals: dict[str, Span] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    proposed: dict[str, Event] = field(default_factory=dict)


class SpanBuilder:
    """Subscribe an instance to a bus (``bus.subscribe(builder)``)."""

    def __init__(self, tracer: Tracer, price: PriceLookup | None = None) -> None:
        self.tracer = tracer
        self.price = price
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()  # buses of several sessions may emit from threads
        self._handlers: dict[str, Callable[[_Run, Event], None]] = {
            "model.message_sent": self._llm_start,
            "model.message_complete": self._llm_end,
            "tool.proposed": self._proposed,
            "approval.required": self._approval_start,
            "approval.resolved": self._approval_end,
            "tool.started": self._tool_start,
            "tool.completed": self._tool_end,
        }

    def __call__(self, ev: Event) -> None:
        with self._lock:
            if ev.type == "run.started":
                self._run_start(ev)
                return
            run = self._runs.get(ev.session_id)
            if run is None:
                return  # an event outside a run (chronos, patch checks): no trace to join
            if ev.type in ("run.completed", "run.interrupted", "run.failed"):
                self._run_end(run, ev)
            elif ev.type in self._handlers:
                self._handlers[ev.type](run, ev)
            elif ev.type not in ("model.streaming", "tool.output"):  # volume, not milestones
                run.span.add_event(
                    ev.type, self._base(ev) | attrs.from_payload(ev.payload), _ns(ev.timestamp)
                )

    # -- the run ---------------------------------------------------------------------------
    def _run_start(self, ev: Event) -> None:
        old = self._runs.pop(ev.session_id, None)
        if old is not None:  # its end never came (a crash in between): close it as such
            self._close(old, ev.timestamp, "superseded by a new run")
        model = str(ev.payload.get("model") or "")
        span = self.tracer.start_span(
            RUN,
            otel_context.Context(),  # a root: each run is its own trace
            SpanKind.INTERNAL,
            self._base(ev)
            | {
                "gen_ai.request.model": attrs.text(model),
                "xclaw.task": attrs.text(str(ev.payload.get("task") or "")),
            },
            start_time=_ns(ev.timestamp),
        )
        self._runs[ev.session_id] = _Run(span, trace.set_span_in_context(span), model)

    def _run_end(self, run: _Run, ev: Event) -> None:
        del self._runs[ev.session_id]
        status = ev.type.removeprefix("run.")
        reason = str(ev.payload.get("reason") or "")
        metrics: dict[str, Any] = ev.payload.get("metrics") or {}
        span = run.span
        ending: dict[str, attrs.AttrValue] = {
            "xclaw.run.status": status,
            "xclaw.run.reason": attrs.text(reason),
        }
        span.set_attributes(ending | attrs.from_payload(metrics, "xclaw.run."))
        reply = ev.payload.get("reply")
        if reply:
            span.set_attribute("xclaw.run.reply", attrs.text(str(reply)))
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, attrs.text(reason, 500)))
        self._close(run, ev.timestamp, f"run {status}")

    def _close(self, run: _Run, timestamp: float, why: str) -> None:
        """Ends what is still open (a call cut off by the run's end), then the run."""
        end = _ns(timestamp)
        for child in [run.llm, *run.tools.values(), *run.approvals.values()]:
            if child is not None:
                child.set_status(Status(StatusCode.ERROR, f"not finished: {why}"))
                child.end(end)
        run.span.end(end)

    def _child(self, run: _Run, name: str, ev: Event, extra: dict[str, attrs.AttrValue]) -> Span:
        return self.tracer.start_span(
            name,
            run.parent,
            SpanKind.INTERNAL,
            self._base(ev) | extra,
            start_time=_ns(ev.timestamp),
        )

    @staticmethod
    def _base(ev: Event) -> dict[str, attrs.AttrValue]:
        base: dict[str, attrs.AttrValue] = {
            "xclaw.session.id": ev.session_id,
            "xclaw.turn": ev.turn,
        }
        if ev.tool_call_id is not None:
            base["xclaw.tool.call_id"] = attrs.text(ev.tool_call_id, 200)
            base["xclaw.step.key"] = attrs.text(_key(ev), 220)
        return base

    # -- model calls -----------------------------------------------------------------------
    def _llm_start(self, run: _Run, ev: Event) -> None:
        if run.llm is not None:
            run.llm.end(_ns(ev.timestamp))
        extra: dict[str, attrs.AttrValue] = {"gen_ai.request.model": attrs.text(run.model)}
        if isinstance(ev.payload.get("messages"), int):
            extra["xclaw.llm.messages"] = ev.payload["messages"]
        run.llm = self._child(run, LLM, ev, extra)

    def _llm_end(self, run: _Run, ev: Event) -> None:
        span, run.llm = run.llm, None
        if span is None:
            return
        p = ev.payload
        tokens_in, tokens_out = p.get("input_tokens"), p.get("output_tokens")
        values: dict[str, Any] = {
            "gen_ai.usage.input_tokens": tokens_in,
            "gen_ai.usage.output_tokens": tokens_out,
            "xclaw.llm.time_to_first_token_ms": p.get("first_event_ms"),
            "xclaw.llm.stop_reason": p.get("stop_reason"),
            "xclaw.llm.tool_calls": p.get("tool_calls"),
        }
        if self.price is not None:
            values["xclaw.llm.cost_usd"] = self.price(run.model, tokens_in, tokens_out)
        span.set_attributes(attrs.present(values))
        span.end(_ns(ev.timestamp))

    # -- approvals and tool calls ----------------------------------------------------------
    def _proposed(self, run: _Run, ev: Event) -> None:
        run.proposed[_key(ev)] = ev

    def _approval_start(self, run: _Run, ev: Event) -> None:
        p = ev.payload
        extra = attrs.from_payload(
            {
                "tool.name": p.get("name"),
                "tool.risk": p.get("risk"),
                "approval.reason": p.get("reason"),
                "approval.summary": p.get("summary"),
                "approval.grant": p.get("grant"),
            }
        )
        run.approvals[_key(ev)] = self._child(run, APPROVAL, ev, extra)

    def _approval_end(self, run: _Run, ev: Event) -> None:
        answer = str(ev.payload.get("answer") or "")
        run.answers[_key(ev)] = answer
        span = run.approvals.pop(_key(ev), None)
        if span is not None:
            span.set_attribute("xclaw.approval.answer", answer)
            span.end(_ns(ev.timestamp))

    def _tool_start(self, run: _Run, ev: Event) -> None:
        key = _key(ev)
        p = ev.payload
        extra = self._tool_attrs(run, key, str(p.get("name") or ""))
        extra |= attrs.from_payload(
            {"tool.risk": p.get("risk"), "tool.decision": p.get("decision")}
        )
        run.tools[key] = self._child(run, TOOL, ev, extra)
        run.tool_started[key] = ev.timestamp

    def _tool_attrs(self, run: _Run, key: str, name: str) -> dict[str, attrs.AttrValue]:
        out: dict[str, attrs.AttrValue] = {"xclaw.tool.name": attrs.text(name, 200)}
        proposed = run.proposed.pop(key, None)
        if proposed is not None:
            out["xclaw.tool.arguments"] = attrs.value(proposed.payload.get("arguments") or {}) or ""
        if key in run.answers:
            out["xclaw.approval.answer"] = run.answers[key]
        return out

    def _tool_end(self, run: _Run, ev: Event) -> None:
        key = _key(ev)
        p = ev.payload
        span = run.tools.pop(key, None)
        started = run.tool_started.pop(key, None)
        if span is None:  # refused before it ran: the span covers proposal to refusal
            begun = run.proposed.get(key)
            start_ev = begun if begun is not None else ev
            extra = self._tool_attrs(run, key, str(p.get("name") or ""))
            extra["xclaw.tool.decision"] = "deny" if run.answers.get(key) == "deny" else "refused"
            span = self._child(run, TOOL, start_ev, extra)
        ok = bool(p.get("ok"))
        code = p.get("error_code")
        raw = p.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        values: dict[str, Any] = {
            "xclaw.tool.ok": ok,
            "xclaw.tool.outcome": "ok" if ok else str(code or "error"),
            "xclaw.tool.duration_ms": p.get("duration_ms"),
            "xclaw.tool.exit_code": data.get("exit_code")
            if isinstance(data.get("exit_code"), int)
            else None,
        }
        span.set_attributes(attrs.present(values))
        if not ok:
            span.set_status(
                Status(StatusCode.ERROR, attrs.text(str(p.get("message") or code), 500))
            )
        run.answers.pop(key, None)
        duration = p.get("duration_ms")
        if started is not None and isinstance(duration, int | float) and duration > 0:
            span.end(_ns(started + duration / 1000))  # batched results are reported together
        else:
            span.end(_ns(ev.timestamp))
