"""The ``xclaw`` command line (typer + rich).

Commands load on first use. ``COMMANDS`` names each one's module, object, help panel and
one-line help, so ``xclaw --help`` lists them without importing a command module (it costs
typer's own start, ``bench/cli_startup.py`` measures it) and ``xclaw run ...`` imports only
run_cmd and what it needs. tests/cli/test_cli_surface.py loads every entry.

Three things hold for every command, here, once:
- usage mistakes (an unknown option, a value not among an option's choices, a missing
  argument) are one coded line, ``USAGE_INVALID: <what> Next: see `xclaw CMD --help`.``;
- help text is unwrapped: a docstring's paragraphs are reflowed to the terminal's width (a
  paragraph starting with ``\\b`` keeps its lines), so hard-wrapped source reads well at 80
  columns; on a terminal narrower than ``WIDE`` columns help takes click's two-column layout
  (option, then its text at the width left), where typer's panels would squeeze each
  option's text into a column a few words wide;
- the old option spellings of ``cli/options.OLD_SPELLINGS`` still parse (``--directory``,
  ``--dir`` mean ``--project``), unlisted in help;
- a command whose ``Entry`` names an extra (``pip install 'xclaw[gateway]'``) checks it is
  installed when it runs (not for ``--help``) and says which one is missing, as one coded line
  (``EXTRA_MISSING``, xclaw/core/extras.py).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import typer
import typer.main

# typer 0.29 carries its own click: its usage errors are caught here to be printed our way.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperCommand, TyperGroup

from xclaw.cli.options import normalize_option
from xclaw.core.extras import ExtraMissing, require


@dataclass(frozen=True)
class Entry:
    """A top-level command: ``module:attribute`` (a function or a ``typer.Typer``), its help
    panel in ``xclaw --help`` and its one line there; ``extra``, the optional dependencies
    each of its (sub)commands needs to run."""

    target: str
    panel: str
    help: str
    extra: str | None = None


START, SESSIONS, FACES, SETUP = "Start here", "Sessions", "Faces", "Setup and parts"
COMMANDS: dict[str, Entry] = {
    "demo": Entry(
        "xclaw.cli.demo_cmd:demo", START, "Build, break and fix a small site (no key needed)."
    ),
    "doctor": Entry("xclaw.cli.doctor_cmd:doctor", START, "Check the tools, config and data dir."),
    "run": Entry("xclaw.cli.run_cmd:run", START, "Run the coding agent on a project."),
    "resume": Entry(
        "xclaw.cli.run_cmd:resume", START, "Continue a session after a crash, stop or pause."
    ),
    "sessions": Entry("xclaw.cli.sessions_cmd:sessions", SESSIONS, "List recorded sessions."),
    "status": Entry(
        "xclaw.cli.sessions_cmd:status", SESSIONS, "The latest session of this project."
    ),
    "steps": Entry("xclaw.cli.sessions_cmd:steps", SESSIONS, "The steps of a session."),
    "rollback": Entry(
        "xclaw.cli.sessions_cmd:rollback", SESSIONS, "Rewind a session to before a step."
    ),
    "fork": Entry("xclaw.cli.sessions_cmd:fork", SESSIONS, "Start a new session from a step."),
    "export": Entry(
        "xclaw.cli.sessions_cmd:export", SESSIONS, "Export a session (Codex, Claude Code, JSONL)."
    ),
    "patch": Entry("xclaw.cli.patch_cmd:app", FACES, "Change jobs: review, then apply."),
    "page": Entry(
        "xclaw.cli.page_cmd:app", FACES, "The page agent: see a page, act on it.", "browser"
    ),
    "agents": Entry("xclaw.cli.agents_cmd:app", FACES, "Multi-agent runs: workers, a budget."),
    "serve": Entry(
        "xclaw.cli.serve_cmd:serve", FACES, "The gateway: web UI, chat, channels.", "gateway"
    ),
    "chat": Entry(
        "xclaw.cli.chat_cmd:chat", FACES, "Chat with a running `xclaw serve`.", "gateway"
    ),
    "chronos": Entry("xclaw.cli.chronos_cmd:app", FACES, "Scheduled jobs, webhooks, notices."),
    "bridge": Entry(
        "xclaw.cli.bridge_cmd:bridge",
        FACES,
        "Serve models over an OpenAI-compatible API.",
        "gateway",
    ),
    "eval": Entry("xclaw.cli.eval_cmd:eval_", FACES, "Measure a model on a coding dataset."),
    "models": Entry("xclaw.cli.models_cmd:app", SETUP, "Model presets, probes, local models."),
    "login": Entry(
        "xclaw.cli.login_cmd:login", SETUP, "Sign in to ChatGPT in xclaw's browser.", "browser"
    ),
    "config": Entry("xclaw.cli.config_cmd:app", SETUP, "Show the resolved configuration."),
    "tools": Entry("xclaw.cli.tools_cmd:app", SETUP, "List tools, or call one directly."),
    "protocol": Entry("xclaw.cli.protocol_cmd:app", SETUP, "The XML text protocol for models."),
    "memory": Entry(
        "xclaw.cli.memory_cmd:app", SETUP, "Long-term memory: list, search, forget.", "memory"
    ),
    "kb": Entry(
        "xclaw.cli.kb_cmd:app", SETUP, "Knowledge base: add, list, search documents.", "memory"
    ),
    "mcp": Entry(
        "xclaw.cli.mcp_cmd:app", SETUP, "MCP servers: list, trust, serve xclaw's tools.", "mcp"
    ),
    "plugins": Entry("xclaw.cli.plugins_cmd:app", SETUP, "Plugins: tools, services, hooks."),
    "skills": Entry("xclaw.cli.skills_cmd:app", SETUP, "Skills the agent loads when needed."),
}


WIDE = 100  # columns from which help is drawn in typer's rich panels


def narrow() -> bool:
    """Whether help takes the plain layout: the terminal (or ``$COLUMNS``) is under WIDE."""
    return shutil.get_terminal_size().columns < WIDE


def unwrap(text: str | None) -> str | None:
    """Help text with each paragraph on one line (the terminal wraps it), except paragraphs
    that start with ``\\b``, which keep their lines; anything after ``\\f`` is dropped."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text.partition("\f")[0]).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _reflow(command: Any, plain: bool) -> None:
    """``unwrap`` on a command's help and its options', and down its subcommands; the plain
    layout on a narrow terminal."""
    command.help = unwrap(command.help)
    if plain:
        command.rich_markup_mode = None
    for param in command.params:
        if getattr(param, "help", None):
            param.help = unwrap(param.help)
    for sub in getattr(command, "commands", {}).values():
        _reflow(sub, plain)


def _require_on_call(command: Any, extra: str, path: str) -> None:
    """Each (sub)command of ``command`` checks ``extra`` before it runs: after its options are
    parsed, so ``--help`` works without the extra."""
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            _require_on_call(sub, extra, f"{path} {name}")
        return
    callback = command.callback
    if callback is None:
        return

    @functools.wraps(callback)
    def checked(*args: Any, **kwargs: Any) -> Any:
        require(extra, path)
        return callback(*args, **kwargs)

    command.callback = checked


def load(name: str) -> Any:
    """The click command of ``COMMANDS[name]``, built from its module (imported now)."""
    entry = COMMANDS[name]
    module, _, attribute = entry.target.partition(":")
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: Any = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    command.short_help = entry.help
    command.rich_help_panel = entry.panel
    if entry.extra is not None:
        _require_on_call(command, entry.extra, f"xclaw {name}")
    _reflow(command, narrow())
    return command


def _stub(name: str) -> Any:
    """What ``xclaw --help`` lists for a command not loaded yet: its name, panel, line."""
    entry = COMMANDS[name]
    stub = TyperCommand(name, help=entry.help, short_help=entry.help)
    stub.rich_help_panel = entry.panel
    return stub


class XclawGroup(TyperGroup):
    """The top-level group: lazy commands, coded usage errors."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in COMMANDS:
            return found
        return _stub(cmd_name)  # listing only: resolve_command loads the real one

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if narrow():
            self.rich_markup_mode = None  # this invocation's group: built anew for each
        super().format_help(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The plain layout's command list, in the panels of the rich one."""
        panels: dict[str, list[tuple[str, str]]] = {}
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        for name in names:
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            panel = getattr(command, "rich_help_panel", None) or "Commands"
            panels.setdefault(panel, []).append((name, command.get_short_help_str(limit)))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name in COMMANDS and name not in self.commands:
            self.commands[name] = load(name)
        return super().resolve_command(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as err:
            if err.format_message():  # typer printed the rich help itself when it is ""
                typer.echo(err.format_message())
            sys.exit(2)
        except UsageError as err:
            _usage_error(err)
        except ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        except ExtraMissing as err:  # from an entry point before its own error handling
            from xclaw.cli.common import fail

            try:
                fail(err)
            except typer.Exit as stop:
                sys.exit(stop.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


def _usage_error(err: Any) -> NoReturn:
    """A usage mistake as one coded line, as every other error: what is wrong, then where
    the command's options are described."""
    from rich.console import Console
    from rich.markup import escape

    where = err.ctx.command_path if err.ctx is not None else "xclaw"
    message = " ".join(err.format_message().split()).replace(": Value error, ", ": ")
    if not message.endswith((".", "?", "!", ")")):
        message += "."
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[red]USAGE_INVALID[/]: {escape(message)} Next: see `{escape(where)} --help`."
    )
    sys.exit(err.exit_code)


def _version(value: bool) -> None:
    if value:
        from xclaw import __version__

        typer.echo(f"xclaw {__version__}")
        raise typer.Exit(0)


app = typer.Typer(
    name="xclaw",
    help="xclaw — a local-first AI agent harness. Start with `xclaw demo`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=XclawGroup,
    context_settings={"token_normalize_func": normalize_option},
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print xclaw's version and exit.", is_eager=True, callback=_version
    ),
) -> None:
    """xclaw — a local-first AI agent harness. Start with `xclaw demo`."""


def main() -> None:
    app()
