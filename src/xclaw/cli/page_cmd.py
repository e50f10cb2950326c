"""``xclaw page``: the page agent (seed 002) from the command line.

``xclaw page snapshot URL|FILE [--json] [--viewport-only] [--headless] [--browser PATH]``
prints what the model would see of a page: the snapshot text, or with ``--json``
``{"text", "refs": [{"ref", "xpath", "role", "name"}], "stats": {"nodes", "interactive",
"truncated", "ms"}}``. The page opens in a fresh, non-persistent browser context (no profile,
nothing kept); ``XCLAW_BROWSER_ARGS`` adds Chromium flags.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from xclaw.cli.common import err_console, fail
from xclaw.core.errors import ConfigError, XclawError

app = typer.Typer(help="The page agent: see a page as the model does, or run a task on it.")


def target_url(target: str) -> str:
    """A URL as given; an existing file as the ``file://`` URL of its resolved path."""
    if "://" in target or target.startswith(("about:", "data:")):
        return target
    path = Path(target).expanduser()
    if path.exists():
        return path.resolve().as_uri()
    raise ConfigError(
        f"{target} is neither a URL nor an existing file.",
        code="PAGE_TARGET_INVALID",
        hint="Give a full URL (https://...) or the path of an HTML file.",
    )


@app.command("snapshot")
def snapshot(
    target: Annotated[str, typer.Argument(help="A URL, or an HTML file (opened as file://).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print text, refs and stats as one JSON object.")
    ] = False,
    viewport_only: Annotated[
        bool, typer.Option("--viewport-only", help="Keep only what is in the viewport.")
    ] = False,
    headless: Annotated[bool, typer.Option("--headless", help="No browser window.")] = False,
    browser: Annotated[
        str | None, typer.Option("--browser", help="Chromium/Chrome to use.")
    ] = None,
) -> None:
    """Print the page as the page agent's model sees it (first-round snapshot budgets)."""
    from xclaw.compose.page import PageFlags, snapshot_page
    from xclaw.page.snapshot import FIRST_ROUND

    options = replace(FIRST_ROUND, viewport_only=viewport_only)
    flags = PageFlags(headless=headless, browser=browser)
    try:
        snap = asyncio.run(snapshot_page(target_url(target), options, flags))
    except XclawError as err:
        fail(err)
    if as_json:
        sys.stdout.write(json.dumps(snap.to_json(), ensure_ascii=False) + "\n")
        return
    sys.stdout.write(snap.text + "\n")
    stats = snap.stats
    cut = ", truncated" if stats.truncated else ""
    err_console.print(
        f"[dim]{stats.nodes} nodes, {stats.interactive} interactive, {stats.ms:g} ms{cut}[/]"
    )


# ``xclaw page run URL "task"``: the WebAgent with the live view (in its own module).
from xclaw.cli.page_run import run as _run  # noqa: E402 - registered after the group exists

app.command("run")(_run)
