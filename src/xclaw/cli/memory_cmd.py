"""``xclaw memory``: see, search, forget, export and re-embed long-term memories.

Without ``--scope`` a command sees your user scope and the current project's; pass
``--scope kind:id`` (repeatable) to choose, e.g. ``--scope session:20261130-120000-abc123``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.common import console, fail
from xclaw.core.errors import XclawError

app = typer.Typer(
    help="Long-term memory: list, show, search, forget, export.", no_args_is_help=True
)

ScopeOption = Annotated[
    list[str] | None,
    typer.Option("--scope", help="kind:id, repeatable (default: your user and this project)."),
]
KindOption = Annotated[
    list[str] | None, typer.Option("--kind", help="fact, chunk, ... (default: all).")
]


def _store() -> Any:
    from xclaw.compose.settings import resolve_config
    from xclaw.memory.settings import open_memory_store

    return open_memory_store(resolve_config(Path.cwd()))


def _scopes(raw: list[str] | None) -> list[Any]:
    from xclaw.memory.base import Scope
    from xclaw.memory.runtime import default_scopes

    if raw:
        return [Scope.parse(s) for s in raw]
    return default_scopes(Path.cwd()).visible


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _item_dict(item: Any) -> dict[str, Any]:
    return {
        "id": item.id,
        "scope": item.scope.key,
        "kind": item.kind,
        "text": item.text,
        "source": item.source,
        "metadata": item.metadata,
        "created_at": item.created_at,
        "embed_model": item.embed_model,
        "dim": item.dim,
    }


@app.command("list")
def list_memories(
    scope: ScopeOption = None,
    kind: KindOption = None,
    limit: Annotated[int, typer.Option(min=1)] = 50,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List memories, newest first."""
    try:
        store = _store()
        try:
            items = store.list(scopes=_scopes(scope), kinds=kind, limit=limit, offset=offset)
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    if as_json:
        typer.echo(json.dumps([_item_dict(i) for i in items], ensure_ascii=False, indent=2))
        return
    table = Table("id", "scope", "kind", "saved", "text")
    for item in items:
        text = item.text if len(item.text) <= 100 else item.text[:100] + "…"
        table.add_row(
            item.id, escape(item.scope.key), item.kind, _when(item.created_at), escape(text)
        )
    console.print(table)
    if not items:
        console.print("[dim]No memories in these scopes.[/]")


@app.command()
def show(memory_id: str, scope: ScopeOption = None) -> None:
    """Show one memory with its provenance."""
    try:
        store = _store()
        try:
            item = store.get(memory_id, scopes=_scopes(scope))
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    if item is None:
        fail(
            XclawError(
                f"There is no memory {memory_id} in these scopes.",
                code="MEMORY_NOT_FOUND",
                hint="List them with `xclaw memory list`, or pass --scope.",
            )
        )
    typer.echo(json.dumps(_item_dict(item), ensure_ascii=False, indent=2))


@app.command()
def search(
    query: str,
    scope: ScopeOption = None,
    kind: KindOption = None,
    k: Annotated[int, typer.Option("-k", min=1, max=50)] = 5,
    mode: Annotated[
        Literal["hybrid", "vector", "keyword"],
        typer.Option(help="hybrid: meaning and words; vector: meaning; keyword: words."),
    ] = "hybrid",
) -> None:
    """Search memories as recall does."""
    try:
        store = _store()
        try:
            hits = store.search(query, scopes=_scopes(scope), k=k, mode=mode, kinds=kind)
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    table = Table("score", "id", "scope", "text")
    for hit in hits:
        table.add_row(
            f"{hit.score:.3f}", hit.item.id, escape(hit.item.scope.key), escape(hit.item.text)
        )
    console.print(table)


@app.command()
def forget(memory_ids: list[str], scope: ScopeOption = None) -> None:
    """Delete memories by id (only within the scopes given)."""
    try:
        store = _store()
        try:
            removed = store.delete(memory_ids, scopes=_scopes(scope))
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    console.print(f"Forgot {removed} of {len(memory_ids)} memories.")
    if removed < len(memory_ids):
        raise typer.Exit(1)


@app.command()
def export(
    scope: ScopeOption = None,
    kind: KindOption = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="JSONL file.")] = None,
) -> None:
    """Export memories as JSON lines (stdout, or a file written atomically)."""
    from xclaw.tools.atomic import atomic_write_bytes

    try:
        store = _store()
        try:
            items, offset = [], 0
            while page := store.list(scopes=_scopes(scope), kinds=kind, limit=1000, offset=offset):
                items += page
                offset += len(page)
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    lines = "".join(json.dumps(_item_dict(i), ensure_ascii=False) + "\n" for i in items)
    if output is None:
        typer.echo(lines, nl=False)
        return
    atomic_write_bytes(output, lines.encode("utf-8"))
    console.print(f"Exported {len(items)} memories to {escape(str(output))}.")


@app.command()
def reembed() -> None:
    """Rebuild every vector made by another embedding model than the configured one."""
    try:
        store = _store()
        try:
            stale = store.stale_count()
            done = store.reembed() if stale else 0
        finally:
            store.close()
    except XclawError as err:
        fail(err)
    console.print(f"Re-embedded {done} memories with {store.embed_model} ({store.dim} dimensions).")
