"""``xclaw kb``: index documents (Markdown, text, HTML, PDF), list, remove, search them.

The knowledge base lives in the memory store (``memory:`` in xclaw.yaml) under your user scope;
``--project DIR`` keeps a project's own knowledge base in that project's scope instead.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from xclaw.cli.common import console, err_console, fail
from xclaw.cli.options import existing_project
from xclaw.core.errors import XclawError

app = typer.Typer(help="Knowledge base: add, list, remove, search documents.", no_args_is_help=True)

ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "-C",
        "--project",
        help="Use this project's knowledge base, not your own.",
        callback=existing_project,
    ),
]


def _open_kb(project: Path | None, chunk_size: int | None = None) -> Any:
    """The knowledge base and its store, imported on use so `xclaw --help` stays quick."""
    from xclaw.compose.settings import resolve_config
    from xclaw.memory.kb import KnowledgeBase
    from xclaw.memory.runtime import default_scopes
    from xclaw.memory.settings import open_memory_store

    root = project.resolve() if project is not None else None
    store = open_memory_store(resolve_config(root or Path.cwd()))
    scopes = default_scopes(root)
    scope = scopes.project if root is not None and scopes.project else scopes.user
    extra = {"chunk_size": chunk_size} if chunk_size else {}
    return KnowledgeBase(store, scope, **extra)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


_STYLE = {"added": "green", "replaced": "cyan", "unchanged": "dim", "skipped": "yellow"}


@app.command("add")
def add(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to index.")],
    project: ProjectOption = None,
    chunk_size: Annotated[
        int | None, typer.Option(min=32, max=2000, help="Approximate tokens per chunk.")
    ] = None,
) -> None:
    """Index files and folders (Markdown, text, HTML, PDF).

    A changed file replaces its old chunks; an unchanged one is skipped."""
    try:
        kb = _open_kb(project, chunk_size)
        try:
            found = kb.discover(paths)
            reports = list(found.skipped)
            known = kb.documents_by_path()
            with Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err_console,
                transient=True,
            ) as progress:
                task = progress.add_task("indexing", total=len(found.files))
                for path in found.files:
                    progress.update(task, description=escape(f"indexing {path.name}"))
                    reports.append(kb.add_file(path, known=known))
                    progress.advance(task)
        finally:
            kb.store.close()
    except XclawError as err:
        fail(err)
    for r in reports:
        detail = f"{r.chunks} chunks" if r.status != "skipped" else f"{r.code}: {r.reason}"
        style = _STYLE[r.status]
        console.print(f"[{style}]{r.status:9}[/] {escape(r.path)}  {escape(detail)}")
    counts = {s: sum(1 for r in reports if r.status == s) for s in _STYLE}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing to index")


@app.command("list")
def list_documents(
    project: ProjectOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List indexed documents, newest first."""
    try:
        kb = _open_kb(project)
        try:
            docs = kb.documents()
        finally:
            kb.store.close()
    except XclawError as err:
        fail(err)
    if as_json:
        console.print_json(json.dumps([_doc(d) for d in docs], ensure_ascii=False))
        return
    table = Table("id", "added", "format", "chunks", "path")
    for d in docs:
        table.add_row(d.doc_id, _when(d.added_at), d.kind, str(d.chunks), escape(d.path))
    console.print(table if docs else "the knowledge base is empty")


def _doc(d: Any) -> dict[str, Any]:
    return {
        "doc_id": d.doc_id,
        "path": d.path,
        "format": d.kind,
        "sha256": d.sha256,
        "size": d.size,
        "chunks": d.chunks,
        "added_at": d.added_at,
        "title": d.title,
    }


@app.command("remove")
def remove(
    targets: Annotated[list[str], typer.Argument(help="Document ids or paths, as listed.")],
    project: ProjectOption = None,
) -> None:
    """Remove documents and all their chunks."""
    try:
        kb = _open_kb(project)
        try:
            removed = [d for t in targets for d in kb.remove(t)]
        finally:
            kb.store.close()
    except XclawError as err:
        fail(err)
    if not removed:
        fail(
            XclawError(
                f"No indexed document matches {', '.join(targets)}.",
                code="KB_NOT_FOUND",
                hint="See `xclaw kb list` for ids and paths.",
            )
        )
    for d in removed:
        console.print(f"removed {escape(d.path)} ({d.chunks} chunks)")


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in any language.")],
    project: ProjectOption = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50)] = 5,
    mode: Annotated[
        Literal["hybrid", "vector", "keyword"],
        typer.Option(help="hybrid: meaning and words; vector: meaning; keyword: words."),
    ] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Search the knowledge base; every passage comes with its citation."""
    try:
        kb = _open_kb(project)
        try:
            passages = kb.search(query, k, mode=mode)
        finally:
            kb.store.close()
    except XclawError as err:
        fail(err)
    if as_json:
        console.print_json(json.dumps([p.as_dict() for p in passages], ensure_ascii=False))
        return
    if not passages:
        console.print("no passage matches")
    for i, p in enumerate(passages, 1):
        heading = f" — {escape(p.heading)}" if p.heading else ""
        console.print(f"[bold][{i}] {escape(p.citation)}[/]{heading}  [dim]{p.score:.3f}[/]")
        console.print(escape(p.text if len(p.text) <= 600 else p.text[:600] + " …"))
