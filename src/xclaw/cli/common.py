"""Helpers shared by CLI commands: approval mode, errors, the interrupt handler."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Literal, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from xclaw.cli.approve import ConsoleApprover
from xclaw.cli.options import ProtocolChoice
from xclaw.core.errors import XclawError
from xclaw.core.state import RunControl
from xclaw.core.tooling import Approver
from xclaw.policy.approval import ModeApprover
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.compose.sandbox import SandboxPlan
    from xclaw.config import XclawConfig

ProtocolOption = Annotated[
    ProtocolChoice | None,
    typer.Option(
        "--protocol",
        help="How tool calls travel: native (the API's tool calls, with text-call repair), "
        "xml (the XML text protocol in plain chat messages) or auto (probe once, remembered "
        "per model). Default: `protocol:` in xclaw.yaml's models:, else the preset, else native.",
    ),
]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(err: XclawError, exit_code: int = 2) -> NoReturn:
    # Messages quote what went wrong (a provider's reply, a path, a value): redacted, and
    # escaped so a bracket in them is text, not rich markup.
    text = err.message + (f" {err.hint}" if err.hint else "")
    err_console.print(f"[red]{escape(err.code)}[/]: {escape(redact(text))}")
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


_D = TypeVar("_D")


def interrupted_choice(
    retry: bool, skip: bool, approval: str | None, default: _D
) -> Literal["ask", "retry", "skip"] | _D:
    """How a resume settles calls cut off by a crash: a flag, else "ask" on a terminal (unless
    the approval mode answers for the user), else ``default``."""
    if retry:
        return "retry"
    if skip:
        return "skip"
    if sys.stdin.isatty() and approval in (None, "ask"):
        return "ask"
    return default


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


def show_sandbox(plan: SandboxPlan) -> None:
    """The command's sandbox choice in the live view (a warning for host mode)."""
    if plan.warning:
        console.print(f"[bold yellow]warning:[/] {plan.warning}")
    else:
        console.print(f"[dim]sandbox: {plan.mode}[/]")


def sandbox_factory(flag: str | None, cfg: XclawConfig) -> SandboxPlan:
    """Choose the sandbox once (so a bad choice fails before the run), show it, and return
    the plan that gives each session its own sandbox."""
    from xclaw.compose.sandbox import plan_sandbox

    plan = plan_sandbox(cfg, flag)
    show_sandbox(plan)
    return plan
