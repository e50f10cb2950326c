"""``xclaw patch``: change jobs in an isolated worktree (run, show, apply, revert, list, clean)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape

from xclaw.cli.common import console, fail
from xclaw.core.errors import XclawError
from xclaw.core.events import Event, EventBus
from xclaw.patch import JobRecord, JobStore, Target
from xclaw.patch.engine import apply_job, revert_job
from xclaw.patch.job import MODES, Mode
from xclaw.patch.worktree import clean_interrupted, worktree_path

app = typer.Typer(help="Change jobs: the agent edits an isolated copy; you review and apply.")
_TARGET = re.compile(r"^(?P<file>[^:]+)(?::(?P<line>\d+))?$")


def _targets(where_list: list[str], instructions: list[str]) -> tuple[Target, ...]:
    """--target FILE[:LINE] "instruction" pairs (click reads the text as a positional)."""
    if len(where_list) != len(instructions):
        raise typer.BadParameter("give each --target FILE[:LINE] followed by its instruction")
    out = []
    for n, (where, instruction) in enumerate(zip(where_list, instructions, strict=True), 1):
        m = _TARGET.match(where)
        if m is None:
            raise typer.BadParameter(f"{where!r} is not FILE[:LINE]")
        line = int(m.group("line")) if m.group("line") else None
        out.append(Target(n, m.group("file"), instruction, line=line))
    return tuple(out)


def _progress(ev: Event) -> None:
    if ev.type == "tool.completed":
        mark = "ok" if ev.payload.get("ok") else str(ev.payload.get("error_code"))
        console.print(f"  {escape(str(ev.payload.get('name')))} … {escape(mark)}")
    elif ev.type == "tool.started":
        console.print(f"  {escape(str(ev.payload.get('name')))} …")


def _cleanup_hint(store: JobStore, record: JobRecord) -> str:
    """For an interrupted job that left its worktree: the command that removes it."""
    if record.status != "interrupted" or not worktree_path(store, record).exists():
        return ""
    return f"clean up: xclaw patch clean {record.spec.job_id}"


def _print(record: JobRecord, store: JobStore) -> None:
    console.print(f"job {record.spec.job_id}: [bold]{record.status}[/] {escape(record.summary)}")
    if record.reason:
        console.print(escape(record.reason))
    hint = _cleanup_hint(store, record)
    if hint:
        left = worktree_path(store, record)
        console.print(escape(f"{hint}  (its worktree is left at {left})"), soft_wrap=True)
    if record.diff:
        console.print(escape(record.diff), end="")
    for check in record.checks:
        console.print(
            f"check {escape(check['check_id'])}: {check['status']} ({check['duration_ms']} ms)"
        )


@app.command("run")
def run(
    instruction: Annotated[list[str], typer.Argument(help="One per --target, in order.")],
    target: Annotated[list[str], typer.Option("--target", help='FILE[:LINE] "instruction"')],
    directory: Annotated[
        Path, typer.Option("-C", "--project", help="The project (git top level).")
    ] = Path("."),
    model: Annotated[str | None, typer.Option("--model", help="Model spec.")] = None,
    mode: Annotated[
        Literal["review", "auto", "trusted-auto"],
        typer.Option(
            "--mode",
            help="review: you apply; auto and trusted-auto write your tree (patch.allow_modes).",
        ),
    ] = "review",
    include_local_changes: Annotated[bool, typer.Option("--include-local-changes")] = False,
) -> None:
    """Start a change job and wait for it; prints its diff and checks."""
    from xclaw.compose.patch import JobRequest, build_patch
    from xclaw.compose.settings import Overrides, resolve_config

    if mode not in MODES:
        raise typer.BadParameter(f"--mode must be one of {', '.join(MODES)}")
    try:
        cfg = resolve_config(directory)  # once: model, checks, limits, modes and sandbox
        bus = EventBus()
        bus.subscribe(_progress)
        request = JobRequest(_targets(target, instruction), _mode(mode), include_local_changes)
        job = build_patch(cfg, directory, Overrides(model=model), request, bus=bus)
        record = asyncio.run(job.run())
    except XclawError as err:
        fail(err)
    _print(record, job.store)


def _mode(raw: str) -> Mode:
    for m in MODES:
        if m == raw:
            return m
    raise typer.BadParameter(raw)


@app.command("show")
def show(job_id: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show a job: status, diff and checks (an interrupted one: how to clean up)."""
    try:
        store = JobStore()
        record = store.load(job_id)
    except XclawError as err:
        fail(err)
    if as_json:
        print(json.dumps({**record.to_dict(), "next": _cleanup_hint(store, record)}, indent=1))
    else:
        _print(record, store)


def _act(job_id: str, revert: bool) -> None:
    try:
        store = JobStore()
        record = store.load(job_id)
        asyncio.run(revert_job(record, store) if revert else apply_job(record, store))
    except XclawError as err:
        fail(err)
    console.print(f"job {job_id}: {record.status}")


@app.command("apply")
def apply(job_id: str) -> None:
    """Apply a reviewed job to the working tree (never the index)."""
    _act(job_id, revert=False)


@app.command("revert")
def revert(job_id: str) -> None:
    """Undo an applied job when its files still hold what it wrote."""
    _act(job_id, revert=True)


@app.command("clean")
def clean(job_id: str) -> None:
    """Remove what an interrupted job left behind (its worktree); the job stays interrupted."""
    try:
        store = JobStore()
        record = store.load(job_id)
        path = asyncio.run(clean_interrupted(record, store))
    except XclawError as err:
        fail(err)
    console.print(f"job {job_id}: {record.status}; removed {escape(str(path))}")


@app.command("list")
def list_jobs() -> None:
    """List change jobs; interrupted ones with their cleanup command."""
    store = JobStore()
    for record in store.list():
        line = f"{record.spec.job_id}  {record.status:11}  {record.spec.git_root}"
        hint = _cleanup_hint(store, record)
        console.print(escape(line + (f"  ({hint})" if hint else "")), soft_wrap=True)
    for job_id in store.refused():
        console.print(
            f"{job_id}  [red]refused[/]      PATCH_RECORD_TAMPERED: the stored record does not "
            "verify; it is never applied",
            soft_wrap=True,
        )
