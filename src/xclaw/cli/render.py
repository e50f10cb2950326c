"""The live view: prints runtime events as they arrive. It observes; it never drives."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from xclaw.core.events import Event
from xclaw.core.model import Model
from xclaw.core.state import RunResult
from xclaw.redact import LineRedactor, redact, redact_json


def _safe(text: str) -> str:
    """Redacted and escaped for rich markup: everything the model or a tool said."""
    return escape(redact(text))


def summarize_args(arguments: dict[str, Any], limit: int = 100) -> str:
    parts = []
    # redact_json first: a value under a secret's name (``password``) is masked by its key.
    for key, value in redact_json(arguments).items():
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
        # Streamed text is shown a whole line at a time, so redaction sees a key in one piece
        # (and a private key spanning lines as one block): model text, and each tool stream.
        self._model_text = LineRedactor()
        self._tool_text: dict[tuple[str | None, str], LineRedactor] = {}
        self._streamed = False

    def __call__(self, ev: Event) -> None:
        handler = getattr(self, "on_" + ev.type.replace(".", "_"), None)
        if handler is not None:
            handler(ev)

    def on_run_started(self, ev: Event) -> None:
        p = ev.payload
        self.console.print(f"[bold]▶ run {ev.session_id}[/] · model {_safe(str(p['model']))}")

    def on_model_streaming(self, ev: Event) -> None:
        self._streamed = True
        for line in self._model_text.feed(str(ev.payload.get("delta", ""))):
            self.console.print(f"[dim]│ {escape(line)}[/]")

    def on_model_message_complete(self, ev: Event) -> None:
        if self._streamed:
            for line in self._model_text.flush():
                self.console.print(f"[dim]│ {escape(line)}[/]")
            self._streamed = False
            return
        text = str(ev.payload.get("text") or "").strip()
        if text and ev.payload.get("tool_calls"):
            # Redacted before shortening: a cut key no longer matches its pattern.
            self.console.print(f"[dim]turn {ev.turn}: {escape(redact(text)[:300])}[/]")

    def on_tool_proposed(self, ev: Event) -> None:
        args = summarize_args(ev.payload.get("arguments") or {})
        # A call the model wrote as JSON text, read from there (xclaw.models.repair).
        how = " [yellow](repaired from the reply text)[/]" if ev.payload.get("repaired") else ""
        self.console.print(f"[cyan]→ {ev.payload['name']}[/] [dim]{_safe(args)}[/]{how}")

    def on_tool_output(self, ev: Event) -> None:
        if not self.show_output:
            return
        stream = str(ev.payload.get("stream", "stdout"))
        text = self._tool_text.setdefault((ev.tool_call_id, stream), LineRedactor())
        self._print_output(stream, text.feed(str(ev.payload.get("text", ""))))

    def _print_output(self, stream: str, lines: list[str]) -> None:
        style = "red" if stream == "stderr" else "dim"
        for line in lines:
            # Redacted whole; split on carriage returns only for display (progress bars).
            for piece in line.splitlines() or [line]:
                self.console.print(f"  [{style}]│ {escape(piece)}[/]")

    def on_tool_completed(self, ev: Event) -> None:
        for key in [k for k in self._tool_text if k[0] == ev.tool_call_id]:
            self._print_output(key[1], self._tool_text.pop(key).flush())
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

    def on_browser_started(self, ev: Event) -> None:
        p = ev.payload
        where = _safe(str(p.get("executable") or p.get("browser") or "the browser"))
        self.console.print(f"[dim]browser started: {where}[/]")

    def on_browser_auth_required(self, ev: Event) -> None:
        self.console.print("[yellow]the ChatGPT page is signed out: run `xclaw login`[/]")

    def on_conversation_created(self, ev: Event) -> None:
        p = ev.payload
        what = p.get("note") or (f"conversation {p['url']}" if p.get("url") else "")
        if what:
            self.console.print(f"[dim]{_safe(str(what))}[/]")

    def on_conversation_mode_selected(self, ev: Event) -> None:
        p = ev.payload
        line = f"mode: {p.get('selected') or 'unchanged'} (asked {p.get('requested')})"
        if p.get("warning"):  # not the mode asked for, or not confirmed: the user must know
            self.console.print(f"[yellow]! {_safe(line)}: {_safe(str(p['warning']))}[/]")
            return
        self.console.print(f"[dim]{_safe(line)} — {_safe(str(p.get('reason', '')))}[/]")

    def on_conversation_reply_read(self, ev: Event) -> None:
        p = ev.payload
        if p.get("source") != "clipboard":
            self.console.print(
                f"[dim]reply read from the page text ({_safe(str(p.get('why')))}), "
                f"{p.get('chars', 0)} characters[/]"
            )

    def on_model_failover(self, ev: Event) -> None:
        p = ev.payload
        self.console.print(
            f"[yellow]! failover {_safe(str(p.get('from')))} → {_safe(str(p.get('to')))}:[/] "
            f"{_safe(str(p.get('reason')))}"
        )

    def on_model_retry(self, ev: Event) -> None:
        p = ev.payload
        if p.get("partial"):  # the stream dropped mid-reply: what was shown is void
            for line in self._model_text.flush():
                self.console.print(f"[dim]│ {escape(line)}[/]")
            self._streamed = False
            self.console.print(
                f"[yellow]! the reply stream dropped after {p.get('discarded_chars', 0)} "
                f"characters ({_safe(str(p.get('reason')))}); that partial reply is discarded "
                f"and the turn asked again (attempt {p.get('attempt')})[/]"
            )
            return
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
        from xclaw.models.info import model_info  # prices: the presets, read when needed

        cost = model_info(model).cost(m.input_tokens, m.output_tokens) if model else None
        if cost is not None:
            tokens += f" · ≈${cost:.4f}"
    console.print(
        f"[dim]session {result.session_id} · {m.rounds} turns · {m.tool_calls} tool calls "
        f"({m.failed_calls} failed) · {m.duration_ms / 1000:.1f}s{tokens}[/]"
    )
