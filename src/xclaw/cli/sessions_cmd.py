"""Session commands: sessions, status, steps, rollback, fork, export."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.common import console, fail
from xclaw.cli.options import (
    ProjectFilterOption,
    ProjectOption,
    ShownState,
    shown_phase,
    shown_state,
    stored_state,
)
from xclaw.core.errors import ConfigError, XclawError
from xclaw.redact import redact
from xclaw.store.base import SessionRecord, Store
from xclaw.store.children import child_links


def open_store() -> Store:
    """The session store, imported on use so `xclaw --help` stays quick."""
    from xclaw.store.open import open_store as open_configured

    return open_configured()


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _session(store: Store, session_id: str) -> SessionRecord:
    session = store.get_session(session_id)
    if session is None:
        raise ConfigError(
            f"There is no session {session_id!r}.",
            code="SESSION_NOT_FOUND",
            hint="List sessions with `xclaw sessions`.",
        )
    return session


def sessions(
    state: Annotated[ShownState | None, typer.Option(help="Only sessions in this state.")] = None,
    directory: ProjectFilterOption = None,
    search: Annotated[str | None, typer.Option("--search", help="Text in the task.")] = None,
    limit: Annotated[int, typer.Option(min=1)] = 30,
) -> None:
    """List recorded sessions, newest first (multi-agent children under their parent)."""
    root = str(directory.resolve()) if directory else None
    found = open_store().list_sessions(
        state=stored_state(state) if state else None,  # type: ignore[arg-type]
        root=root,
        text=search,
        limit=limit,
    )
    table = Table("id", "state", "phase", "updated", "root", "task")
    table.columns[0].no_wrap = True
    for s, depth in _as_tree(found):
        table.add_row(
            ("  " * (depth - 1) + "└ " if depth else "") + s.id,
            shown_state(s.state),
            shown_phase(s.phase),
            _when(s.updated_at),
            s.root,
            escape(redact(s.title or s.task)[:60]),
        )
    console.print(table if found else "no sessions")


def _as_tree(found: list[SessionRecord]) -> list[tuple[SessionRecord, int]]:
    """Multi-agent children right under their parent (when it is listed too), indented."""
    listed = {s.id for s in found}
    children: dict[str, list[SessionRecord]] = {}
    for s in found:
        if s.parent_session_id in listed:
            children.setdefault(s.parent_session_id, []).append(s)
    out: list[tuple[SessionRecord, int]] = []

    def add(s: SessionRecord, depth: int) -> None:
        out.append((s, depth))
        for child in sorted(children.get(s.id, []), key=lambda c: (c.created_at, c.id)):
            add(child, depth + 1)

    for s in found:
        if s.parent_session_id not in listed:
            add(s, 0)
    return out


def _processes(store: Store, session_id: str) -> list[dict[str, Any]]:
    """Processes the session started and did not stop, that are still alive."""
    started: dict[str, dict[str, Any]] = {}
    for entry in store.load_ledger(session_id):
        data = (entry.result or {}).get("data") or {}
        if entry.name == "process.start" and data.get("processId"):
            started[data["processId"]] = data
        elif entry.name == "process.stop":
            started.pop(str(entry.arguments.get("process_id")), None)
    from xclaw.sandbox.proctree import is_alive

    alive = []
    for proc in started.values():
        try:
            pid = int(proc["pid"])
        except (KeyError, TypeError, ValueError):
            continue
        if not is_alive(pid):  # gone, or a zombie nobody reaped yet
            continue
        alive.append(proc)
    return alive


def status(directory: ProjectOption = Path(".")) -> None:
    """The current (latest) session of this project: its state, phase and processes."""
    from xclaw.sandbox.orphans import reap_orphans

    reaped = reap_orphans()
    if reaped:
        console.print(f"stopped {reaped} sandboxed process(es) that a killed xclaw left behind")
    store = open_store()
    found = store.list_sessions(root=str(directory.resolve()), limit=1)
    if not found:
        console.print(f"no session for {directory.resolve()}")
        raise typer.Exit(0)
    s = found[0]
    phase = shown_phase(s.phase)
    at = f" · {phase}" if phase else ""
    console.print(f"[bold]{s.id}[/] {shown_state(s.state)}{at} · updated {_when(s.updated_at)}")
    console.print(f"task: {escape(redact(s.task))}")
    if s.meta.get("last_reason"):
        console.print(f"last stop: {escape(str(s.meta['last_reason']))}")
    if s.pending:
        decision = redact(json.dumps(s.pending, ensure_ascii=False))
        console.print(f"[yellow]waiting for your decision:[/] {escape(decision)}")
    for proc in _processes(store, s.id):
        urls = " ".join(proc.get("detectedUrls") or [])
        console.print(f"process {proc.get('processId')} pid {proc.get('pid')} {urls}")


def steps(session_id: Annotated[str, typer.Argument()]) -> None:
    """The steps of a session (ids s0001… are stable; use them with rollback and fork)."""
    try:
        store = open_store()
        _session(store, session_id)
    except XclawError as err:
        fail(err)
    table = Table("step", "type", "name", "status", "parent", "ms", "detail")
    table.columns[0].no_wrap = True
    _step_rows(store, table, session_id, "")
    console.print(table)


def _step_rows(store: Store, table: Table, session_id: str, indent: str) -> None:
    """A session's steps, then each multi-agent child as a subtree hung under the tool-call
    step that started it (child steps are named CHILD/s0001)."""
    for st in store.list_steps(session_id):
        ms = f"{(st.ended_at - st.started_at) * 1000:.0f}" if st.ended_at else ""
        detail = json.dumps(st.input or st.output or {}, ensure_ascii=False)[:70]
        table.add_row(
            indent + st.step_id,
            st.kind,
            st.name,
            st.status,
            st.parent_step_id or "",
            ms,
            escape(redact(detail)),
        )
    for link in child_links(store, session_id):
        child = link.session
        short = child.id.removeprefix(session_id)
        table.add_row(
            f"{indent}└ {short}",
            "child",
            link.worker,
            shown_state(child.state),
            link.step_id,
            f"{(child.updated_at - child.created_at) * 1000:.0f}",
            escape(redact(child.title or child.task)[:70]),
        )
        _step_rows(store, table, child.id, indent + "  " + short + "/")


def rollback(
    session_id: Annotated[str, typer.Argument()],
    step_id: Annotated[str, typer.Argument(help="Rewind to just before this step.")],
) -> None:
    """Rewind a session's transcript to before STEP (side effects cannot be undone)."""
    try:
        store = open_store()
        _session(store, session_id)
        report = store.rollback(session_id, step_id)
    except KeyError:
        fail(
            ConfigError(
                f"Session {session_id} has no step {step_id}.",
                code="STEP_NOT_FOUND",
                hint=f"See `xclaw steps {session_id}`.",
            )
        )
    except XclawError as err:
        fail(err)
    console.print(
        f"rewound {session_id} to before {step_id}: removed {report.removed_steps} "
        f"steps and {report.removed_items} transcript items"
    )
    if report.irreversible:
        console.print("[yellow]these side effects happened and were not undone:[/]")
        for e in report.irreversible:
            args = escape(redact(json.dumps(e.arguments, ensure_ascii=False))[:100])
            console.print(f"  {e.step_id} {e.name} {args}")
    console.print(f"continue with: xclaw resume {session_id}")


def fork(
    session_id: Annotated[str, typer.Argument()],
    step_id: Annotated[str, typer.Argument(help="Copy the history up to and including it.")],
) -> None:
    """Start a new session from a session's history up to STEP; the original is untouched."""
    try:
        store = open_store()
        _session(store, session_id)
        from xclaw.core.state import new_session_id

        new = store.fork(session_id, step_id, new_session_id())
    except KeyError:
        fail(
            ConfigError(
                f"Session {session_id} has no step {step_id}.",
                code="STEP_NOT_FOUND",
                hint=f"See `xclaw steps {session_id}`.",
            )
        )
    except XclawError as err:
        fail(err)
    console.print(f"forked {session_id} at {step_id} into [bold]{new.id}[/]")
    console.print(f"continue with: xclaw resume {new.id}")


def export(
    session_id: Annotated[str, typer.Argument()],
    fmt: Annotated[
        Literal["codex", "claude-code", "jsonl"],
        typer.Option(
            "--format",
            help="codex: a Codex CLI rollout (`codex resume` lists it); claude-code: a Claude "
            "Code transcript; jsonl: xclaw's own.",
        ),
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="File to write; a directory takes the file under the name the format's tool "
            "looks for (codex: -o ~/.codex/sessions puts it where `codex resume` lists it).",
        ),
    ] = None,
) -> None:
    """Export a session transcript (secrets redacted, no protocol text or tool catalogue)."""
    try:
        store = open_store()
        session = _session(store, session_id)
    except XclawError as err:
        fail(err)
    from xclaw.store.export import export_name, export_session

    lines = export_session(fmt, session, store.load_items(session_id))
    text = "\n".join(lines) + "\n"
    if output is not None and output.is_dir():
        output = output / export_name(fmt, session)
        output.parent.mkdir(parents=True, exist_ok=True)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        console.print(f"wrote {len(lines)} lines to {output}")
