"""Results of an eval: per case and in total; the JSON file (atomic, redacted) and the table.

JSON schema ``xclaw.eval/1``::

    {schema, dataset, path, model, threshold, duration_s,
     summary: {cases, passed, failed, skipped, pass_rate, input_tokens, output_tokens,
               cost_usd, duration_s, meets_threshold},
     cases: [{id, tags, model, status, run_status, reason, failures: [{code, message}],
              tools_called, tool_calls: [{name, ok, error_code, duration_ms}], turns,
              input_tokens, output_tokens, cost_usd, duration_s, approvals_denied,
              session_id, reply, workdir, started_at, finished_at}]}

``pass_rate`` counts passed cases among those that ran (skipped cases are left out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from xclaw.evals.checks import Failure
from xclaw.evals.dataset import Status
from xclaw.redact import redact, redact_json
from xclaw.tools.atomic import atomic_write_bytes

SCHEMA = "xclaw.eval/1"


@dataclass(slots=True)
class CaseResult:
    id: str
    tags: list[str]
    model: str
    status: Status | None = None  # None while running; "passed" unless a failure was added
    run_status: str | None = None
    reason: str = ""
    failures: list[Failure] = field(default_factory=list)
    tools_called: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    duration_s: float = 0.0
    approvals_denied: list[str] = field(default_factory=list)
    session_id: str | None = None
    reply: str = ""
    workdir: str | None = None
    started_at: float = 0.0  # wall clock (epoch seconds): when the case began and ended
    finished_at: float = 0.0

    def fail(self, *failures: Failure) -> None:
        if failures:
            self.failures.extend(failures)
            self.status = "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tags": self.tags,
            "model": self.model,
            "status": self.status,
            "run_status": self.run_status,
            "reason": self.reason,
            "failures": [f.to_dict() for f in self.failures],
            "tools_called": self.tools_called,
            "tool_calls": self.tool_calls,
            "turns": self.turns,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "duration_s": round(self.duration_s, 3),
            "approvals_denied": self.approvals_denied,
            "session_id": self.session_id,
            "reply": self.reply,
            "workdir": self.workdir,
            "started_at": round(self.started_at, 3),
            "finished_at": round(self.finished_at, 3),
        }


@dataclass(slots=True)
class EvalReport:
    dataset: str
    path: str
    model: str | None
    cases: list[CaseResult]
    duration_s: float

    def count(self, status: Status) -> int:
        return sum(1 for c in self.cases if c.status == status)

    @property
    def pass_rate(self) -> float:
        ran = len(self.cases) - self.count("skipped")
        return self.count("passed") / ran if ran else 0.0

    def totals(self) -> tuple[int | None, int | None, float | None]:
        def total(values: list[Any]) -> Any:
            known = [v for v in values if v is not None]
            return sum(known) if known else None

        return (
            total([c.input_tokens for c in self.cases]),
            total([c.output_tokens for c in self.cases]),
            total([c.cost_usd for c in self.cases]),
        )

    def to_dict(self, threshold: float) -> dict[str, Any]:
        tokens_in, tokens_out, cost = self.totals()
        return {
            "schema": SCHEMA,
            "dataset": self.dataset,
            "path": self.path,
            "model": self.model,
            "threshold": threshold,
            "duration_s": round(self.duration_s, 3),
            "summary": {
                "cases": len(self.cases),
                "passed": self.count("passed"),
                "failed": self.count("failed"),
                "skipped": self.count("skipped"),
                "pass_rate": round(self.pass_rate, 4),
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "cost_usd": cost,
                "duration_s": round(self.duration_s, 3),
                "meets_threshold": self.pass_rate >= threshold,
            },
            "cases": [c.to_dict() for c in self.cases],
        }


def write_results(report: EvalReport, path: Path, threshold: float) -> None:
    """The results as JSON, secrets masked, replacing ``path`` atomically."""
    data = redact_json(report.to_dict(threshold))
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))


def _num(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _cost(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


_MARK = {"passed": "[green]pass[/]", "failed": "[red]FAIL[/]", "skipped": "[yellow]skip[/]"}


def print_report(console: Console, report: EvalReport, threshold: float) -> None:
    """One row per case (status, tokens, cost, time, tools), totals, then why cases failed."""
    table = Table(title=f"xclaw eval · {escape(report.dataset)}", show_footer=True)
    tokens_in, tokens_out, cost = report.totals()
    rate = f"{report.count('passed')}/{len(report.cases) - report.count('skipped')}"
    table.add_column("case", footer="total", overflow="ellipsis")
    table.add_column("result", footer=f"{rate} = {report.pass_rate:.0%}", no_wrap=True)
    table.add_column(
        "tokens in/out", justify="right", footer=f"{_num(tokens_in)}/{_num(tokens_out)}"
    )
    table.add_column("cost", justify="right", footer=_cost(cost), no_wrap=True)
    table.add_column("time", justify="right", footer=f"{report.duration_s:.1f}s", no_wrap=True)
    table.add_column("tools", justify="right", no_wrap=True)
    for c in report.cases:
        table.add_row(
            escape(c.id),
            _MARK.get(c.status or "", "?"),
            f"{_num(c.input_tokens)}/{_num(c.output_tokens)}",
            _cost(c.cost_usd),
            f"{c.duration_s:.1f}s",
            str(len(c.tools_called)),
        )
    console.print(table)
    for c in report.cases:  # one line each, cut to the terminal: the JSON has them whole
        if c.failures:
            first = c.failures[0]
            more = f" (+{len(c.failures) - 1} more)" if len(c.failures) > 1 else ""
            line = f"{first.code}{more}: {first.message.splitlines()[0]}"
        elif c.status == "skipped":
            line = c.reason
        else:
            continue
        console.print(
            f"[bold]{escape(c.id)}[/] {escape(redact(line))}", no_wrap=True, overflow="ellipsis"
        )
    verdict = "[green]meets[/]" if report.pass_rate >= threshold else "[red]is below[/]"
    console.print(f"pass rate {report.pass_rate:.1%} {verdict} the threshold {threshold:.0%}")
