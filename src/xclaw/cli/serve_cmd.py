"""``xclaw serve``: the gateway (web UI, ``xclaw chat``, channels) on one port."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from xclaw.cli.common import console, err_console, fail
from xclaw.core.errors import ConfigError, XclawError

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.core.events import EventBus
    from xclaw.core.tooling import Approver
    from xclaw.gateway.auth import GatewayAuth
    from xclaw.store.base import Store

__all__ = ["agent_factory", "serve"]


def agent_factory(
    directory: Path, spec: str | None, sandbox: str | None, store: Store
) -> Callable[[EventBus, Approver], Agent]:
    """Each gateway session's agent: the configured (or given) model, store and sandbox."""
    from xclaw.cli.common import sandbox_factory
    from xclaw.coding.agent import Agent
    from xclaw.config import load_config
    from xclaw.models.resolve import MODEL_HELP, resolve_model

    cfg = load_config(directory)
    chosen = spec or cfg.model
    if not chosen:
        raise ConfigError("No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP)
    resolve_model(chosen, project=directory)  # a bad spec fails now, not at the first message
    box = sandbox_factory(sandbox, cfg)

    def make(bus: EventBus, approver: Approver) -> Agent:
        return Agent(
            resolve_model(chosen, project=directory),
            directory,
            approval=approver,
            limits=cfg.limits.to_limits(),
            bus=bus,
            store=store,
            model_spec=chosen,
            sandbox=box,
        )

    return make


def _token(host: str, token_file: Path | None) -> str:
    from xclaw.bridge.server import is_loopback
    from xclaw.gateway.auth import gateway_token_path, load_gateway_token

    path = token_file or gateway_token_path()
    if not is_loopback(host) and not path.exists():
        raise ConfigError(
            f"{host} is not a loopback address: the gateway (your agent, your files, your "
            "shell) would be reachable from other machines, and no token is configured yet.",
            code="GATEWAY_REMOTE_NEEDS_TOKEN",
            hint="Start `xclaw serve` once on 127.0.0.1 to make a token (or pass --token-file "
            "FILE), then bind again; put TLS in front of it.",
        )
    if not is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] listening on {escape(host)}: anyone who can reach it and "
            "holds the token drives your agent (files, shell). Traffic is plain HTTP; put TLS "
            "in front of it and add its address with --origin.",
            soft_wrap=True,
        )
    value, where, created = load_gateway_token(path)
    if created:
        console.print(f"Gateway token (shown this once; saved in {escape(str(where))}):")
        console.print(f"  {value}", soft_wrap=True, markup=False)
    else:
        console.print(f"Gateway token: in {escape(str(where))} (not shown).", soft_wrap=True)
    return value


def _auth(host: str, token: str, origins: list[str]) -> GatewayAuth:
    """Loopback: requests must name a loopback host (no DNS rebinding); else any host."""
    from xclaw.bridge.server import is_loopback
    from xclaw.gateway.auth import LOOPBACK_HOSTS, GatewayAuth

    hosts = (*LOOPBACK_HOSTS, host) if is_loopback(host) else None
    return GatewayAuth(token, origins=origins, hosts=hosts)


def channel_env(root: Path) -> dict[str, str]:
    """The process environment over the project's ``.env`` (as model keys are read)."""
    from xclaw.models.presets import load_dotenv

    return {**load_dotenv(root / ".env"), **os.environ}


def _log_to_stderr() -> None:
    from xclaw.gateway.auth import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8787,
    directory: Annotated[Path, typer.Option("-C", "--directory", help="Project root.")] = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    sandbox: Annotated[
        str | None, typer.Option("--sandbox", help="auto | bwrap | host | full (default auto)")
    ] = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="Bearer token file (made if missing).")
    ] = None,
    origin: Annotated[
        list[str] | None,
        typer.Option("--origin", help="Another allowed browser origin (repeatable)."),
    ] = None,
) -> None:
    """Serve the gateway: web UI at /, WebSocket at /ws (for the UI and `xclaw chat`)."""
    from xclaw.gateway.channels.configured import configured_channels
    from xclaw.gateway.gateway import Gateway
    from xclaw.gateway.server import GatewayServer, create_app
    from xclaw.store.sqlite import open_store

    try:
        root = directory.expanduser().resolve()
        token = _token(host, token_file)
        store = open_store()
        gateway = Gateway(agent_factory(root, model, sandbox, store), store, workdir=root)
        channels = configured_channels(gateway, channel_env(root))
        server = GatewayServer(
            create_app(gateway, _auth(host, token, origin or []), channels=channels),
            host,
            port,
            log_level="info",
        )
    except (XclawError, OSError) as err:
        fail(err if isinstance(err, XclawError) else ConfigError(f"Cannot listen: {err}"))
    _log_to_stderr()
    console.print(
        f"xclaw gateway on {escape(server.url)}/ (WebSocket {escape(server.ws_url)}); "
        "Ctrl+C stops it.",
        soft_wrap=True,
    )
    if channels:
        console.print("chat channels: " + ", ".join(c.name for c in channels), soft_wrap=True)
    try:
        server.server.run(sockets=[server.sock])
    except KeyboardInterrupt:
        pass
    console.print("gateway stopped")
