"""Helpers shared by CLI commands: approval mode, errors, the interrupt handler."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

import typer
from rich.console import Console

from xclaw.cli.approve import ConsoleApprover
from xclaw.core.errors import XclawError
from xclaw.core.state import RunControl
from xclaw.core.tooling import Approver
from xclaw.policy.approval import ModeApprover

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(err: XclawError, exit_code: int = 2) -> NoReturn:
    err_console.print(f"[red]{err.code}[/]: {err.message}" + (f" {err.hint}" if err.hint else ""))
    raise typer.Exit(exit_code)


def make_approver(mode: str | None) -> Approver:
    """ask (default on a terminal) | deny (default otherwise) | allow (explicit, warned)."""
    chosen = mode or ("ask" if sys.stdin.isatty() else "deny")
    if chosen == "ask":
        if not sys.stdin.isatty():
            err_console.print("[yellow]--approval ask needs a terminal; using deny.[/]")
            return ModeApprover("deny")
        return ConsoleApprover(console)
    if chosen == "allow":
        err_console.print(
            "[bold yellow]warning:[/] --approval allow approves every request, including "
            "commands outside the project and deletions."
        )
        return ModeApprover("allow")
    if chosen == "deny":
        return ModeApprover("deny")
    raise typer.BadParameter(f"unknown approval mode {chosen!r}; use ask, deny or allow")


def install_interrupt(control: RunControl) -> Callable[[], None]:
    """Ctrl+C once: pause at the next boundary. Twice: cancel the run."""
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        if control.interrupt() == "pause":
            err_console.print(
                "\n[yellow]pausing at the next safe point (Ctrl+C again to cancel)[/]"
            )
        else:
            err_console.print("\n[red]cancelling[/]")

    loop.add_signal_handler(signal.SIGINT, on_sigint)

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGINT)

    return remove
