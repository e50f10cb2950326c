"""The ``xclaw`` command line (typer + rich)."""

from __future__ import annotations

import typer

from xclaw.cli import (
    agents_cmd,
    chronos_cmd,
    config_cmd,
    kb_cmd,
    mcp_cmd,
    memory_cmd,
    models_cmd,
    page_cmd,
    patch_cmd,
    plugins_cmd,
    protocol_cmd,
    skills_cmd,
    tools_cmd,
)
from xclaw.cli.bridge_cmd import bridge
from xclaw.cli.chat_cmd import chat
from xclaw.cli.demo_cmd import demo
from xclaw.cli.doctor_cmd import doctor
from xclaw.cli.eval_cmd import eval_
from xclaw.cli.login_cmd import login
from xclaw.cli.run_cmd import resume, run
from xclaw.cli.serve_cmd import serve
from xclaw.cli.sessions_cmd import export, fork, rollback, sessions, status, steps

app = typer.Typer(
    name="xclaw",
    help="xclaw — a local-first AI agent harness. Start with `xclaw demo`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(run)
app.command()(resume)
app.command()(sessions)
app.command()(status)
app.command()(steps)
app.command()(rollback)
app.command()(fork)
app.command()(export)
app.command()(demo)
app.command()(doctor)
app.command()(login)
app.command()(bridge)
app.command()(serve)
app.command()(chat)
app.command("eval")(eval_)
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(models_cmd.app, name="models")
app.add_typer(protocol_cmd.app, name="protocol")
app.add_typer(config_cmd.app, name="config")
app.add_typer(patch_cmd.app, name="patch")
app.add_typer(page_cmd.app, name="page")
app.add_typer(agents_cmd.app, name="agents")
app.add_typer(chronos_cmd.app, name="chronos")
app.add_typer(memory_cmd.app, name="memory")
app.add_typer(kb_cmd.app, name="kb")
app.add_typer(mcp_cmd.app, name="mcp")
app.add_typer(plugins_cmd.app, name="plugins")
app.add_typer(skills_cmd.app, name="skills")


def main() -> None:
    app()
