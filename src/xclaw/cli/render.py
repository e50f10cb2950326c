"""The live view: prints runtime events as they arrive. It observes; it never drives."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from xclaw.core.events import Event
from xclaw.core.model import Model
from xclaw.core.state import RunResult
from xclaw.models.info import model_info
from xclaw.redact import redact


def _safe(text: str) -> str:
    """Redacted and escaped for rich markup: everything the model or a tool said."""
    return escape(redact(text))


def summarize_args(arguments: dict[str, Any], limit: int = 100) -> str:
    parts = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        # Redact before shortening: a cut key no longer matches its pattern.
        text = redact(text).replace("\n", "⏎")
        if len(text) > 40:
            text = text[:37] + "…"
        parts.append(f"{key}={text}")
    out = " ".join(parts)
    return out if len(out) <= limit else out[: limit - 1] + "…"


class LiveView:
    def __init__(self, console: Console, *, show_output: bool = True) -> None:
        self.console = console
        self.show_output = show_output
        self._line = ""  # streamed model text not yet shown (shown a whole line at a time)
        self._streamed = False

    def __call__(self, ev: Event) -> None:
        handler = getattr(self, "on_" + ev.type.replace(".", "_"), None)
        if handler is not None:
            handler(ev)

    def on_run_started(self, ev: Event) -> None:
        p = ev.payload
        self.console.print(f"[bold]▶ run {ev.session_id}[/] · model {_safe(str(p['model']))}")

    def on_model_streaming(self, ev: Event) -> None:
        # Whole lines only, so redaction sees a key in one piece.
        self._streamed = True
        self._line += str(ev.payload.get("delta", ""))
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            self.console.print(f"[dim]│ {_safe(line)}[/]")

    def on_model_message_complete(self, ev: Event) -> None:
        if self._streamed:
            if self._line:
                self.console.print(f"[dim]│ {_safe(self._line)}[/]")
            self._line, self._streamed = "", False
            return
        text = str(ev.payload.get("text") or "").strip()
        if text and ev.payload.get("tool_calls"):
            self.console.print(f"[dim]turn {ev.turn}: {_safe(text[:300])}[/]")

    def on_tool_proposed(self, ev: Event) -> None:
        args = summarize_args(ev.payload.get("arguments") or {})
        self.console.print(f"[cyan]→ {ev.payload['name']}[/] [dim]{_safe(args)}[/]")

    def on_tool_output(self, ev: Event) -> None:
        if not self.show_output:
            return
        style = "red" if ev.payload.get("stream") == "stderr" else "dim"
        for line in str(ev.payload.get("text", "")).rstrip("\n").splitlines():
            self.console.print(f"  [{style}]│ {_safe(line)}[/]")

    def on_tool_completed(self, ev: Event) -> None:
        p = ev.payload
        ms = p.get("duration_ms", 0)
        if p.get("ok"):
            self.console.print(f"  [green]✓[/] {_safe(str(p['message']))} [dim]({ms} ms)[/]")
            urls = (p.get("data") or {}).get("detectedUrls")
            if urls:
                self.console.print(f"  [bold green]url[/] {_safe(', '.join(urls))}")
        else:
            code = p.get("error_code") or "ERROR"
            self.console.print(f"  [red]✗ {code}[/] {_safe(str(p['message']))}")

    def on_model_failover(self, ev: Event) -> None:
        p = ev.payload
        self.console.print(
            f"[yellow]! failover {_safe(str(p.get('from')))} → {_safe(str(p.get('to')))}:[/] "
            f"{_safe(str(p.get('reason')))}"
        )

    def on_model_retry(self, ev: Event) -> None:
        p = ev.payload
        self.console.print(
            f"[yellow]! retrying {_safe(str(p.get('model')))} in {p.get('delay_s')}s:[/] "
            f"{_safe(str(p.get('reason')))}"
        )

    def on_approval_resolved(self, ev: Event) -> None:
        self.console.print(f"  [yellow]approval: {ev.payload.get('answer')}[/]")

    def on_gate_refused(self, ev: Event) -> None:
        self.console.print(f"[yellow]! completion refused:[/] {_safe(str(ev.payload['reminder']))}")

    def on_protocol_invalid(self, ev: Event) -> None:
        self.console.print(f"[yellow]! protocol error {ev.payload.get('code')}[/]")


def print_summary(console: Console, result: RunResult, model: Model | None = None) -> None:
    m = result.metrics
    colour = {"completed": "green", "interrupted": "yellow", "failed": "red"}[result.status]
    console.rule(f"[{colour}]{result.status}[/]")
    if result.reply:
        console.print(_safe(result.reply))
    if result.reason:
        console.print(f"[{colour}]reason:[/] {_safe(result.reason)}")
    if result.changed_files:
        console.print("[bold]changed files:[/] " + _safe(", ".join(result.changed_files)))
    for proc in result.kept_processes:
        urls = ", ".join(proc.get("detectedUrls") or [])
        console.print(
            f"[bold]still running:[/] {proc.get('processId')} pid {proc.get('pid')} {urls}"
        )
    for rec in getattr(model, "failovers", []):
        console.print(
            f"[yellow]failover:[/] {_safe(str(rec.get('from')))} → {_safe(str(rec.get('to')))} "
            f"({_safe(str(rec.get('reason')))})"
        )
    tokens = ""
    if m.input_tokens is not None or m.output_tokens is not None:
        tokens = f" · tokens in {m.input_tokens or 0} out {m.output_tokens or 0}"
        cost = model_info(model).cost(m.input_tokens, m.output_tokens) if model else None
        if cost is not None:
            tokens += f" · ≈${cost:.4f}"
    console.print(
        f"[dim]session {result.session_id} · {m.rounds} turns · {m.tool_calls} tool calls "
        f"({m.failed_calls} failed) · {m.duration_ms / 1000:.1f}s{tokens}[/]"
    )
