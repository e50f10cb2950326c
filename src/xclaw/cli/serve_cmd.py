"""``xclaw serve``: the gateway (web UI, ``xclaw chat``, channels) on one port."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from xclaw.cli.common import ProtocolOption, console, err_console, fail, show_sandbox
from xclaw.cli.options import ProjectOption, SandboxOption
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.extras import require

if TYPE_CHECKING:
    from xclaw.gateway.auth import GatewayAuth

__all__ = ["serve"]


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


def _interrupt(_sig: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8787,
    directory: ProjectOption = Path("."),
    model: Annotated[str | None, typer.Option("--model", "-m", help="provider:model")] = None,
    sandbox: SandboxOption = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="Bearer token file (made if missing).")
    ] = None,
    origin: Annotated[
        list[str] | None,
        typer.Option("--origin", help="Another allowed browser origin (repeatable)."),
    ] = None,
    approval_timeout: Annotated[
        float,
        typer.Option(
            "--approval-timeout",
            min=1.0,
            max=86_400.0,
            help="Seconds an approval prompt waits for an answer before it is denied.",
        ),
    ] = 300.0,
    log_format: Annotated[
        Literal["text", "json"] | None,
        typer.Option("--log-format", help="Default: $XCLAW_LOG_FORMAT, else text."),
    ] = None,
    memory: Annotated[
        bool,
        typer.Option(
            "--memory/--no-memory",
            help="Long-term memory: recall before each model call, memory.* tools, facts "
            "extracted after each turn (on by default).",
        ),
    ] = True,
    drain_timeout: Annotated[
        float,
        typer.Option(
            "--drain-timeout",
            min=0.0,
            max=3_600.0,
            help="On SIGTERM, seconds running turns may take to finish before they are "
            "interrupted (recorded, resumable).",
        ),
    ] = 30.0,
    lease_ttl: Annotated[
        float,
        typer.Option(
            "--lease-ttl",
            min=1.0,
            max=120.0,
            help="With Redis ($XCLAW_REDIS_URL): seconds a dead instance's sessions stay "
            "locked before another instance takes them over.",
        ),
    ] = 8.0,
    protocol: ProtocolOption = None,
) -> None:
    """Serve the gateway: the web UI, `xclaw chat` and the chat channels on one port.

    The web UI is at /, the WebSocket at /ws (for the UI and `xclaw chat`), Prometheus
    metrics at /metrics (with the token)."""
    if memory:  # the gateway extra: checked before this runs (cli/app.py COMMANDS)
        require("memory", "xclaw serve's long-term memory (on by default; --no-memory: off)")
    from xclaw.compose.assistant import build_assistant
    from xclaw.compose.coding import open_configured_store
    from xclaw.compose.settings import Overrides, resolve_config
    from xclaw.gateway.channels.configured import configured_channels
    from xclaw.gateway.fanout import make_fanout, redis_url
    from xclaw.gateway.gateway import Gateway
    from xclaw.gateway.server import GatewayServer, create_app
    from xclaw.obs.logs import configure_logging
    from xclaw.obs.logs import log_format as chosen_log_format
    from xclaw.obs.metrics import RunMetrics

    try:
        logs = chosen_log_format(log_format)
        root = directory.expanduser().resolve()
        token = _token(host, token_file)
        config = resolve_config(root)  # once: every session, channel and job follows it
        store = open_configured_store(config)
        flags = Overrides(model=model, protocol=protocol, sandbox=sandbox, memory=memory)
        assistant = build_assistant(config, root, flags, store=store)
        show_sandbox(assistant.sandbox)
        runtime, tracing = assistant.runtime, assistant.tracing
        gateway = Gateway(
            assistant.make_agent,
            store,
            workdir=root,
            approval_timeout=approval_timeout,
            fanout=make_fanout(redis_url(config), lease_ttl=lease_ttl),
        )
        channels = configured_channels(gateway, channel_env(root))
        from xclaw.cli.chronos_cmd import build_service

        chronos = build_service(
            root,
            store,
            config=config,
            channels={c.name: c for c in channels},
            model=model,
            sandbox=assistant.sandbox,
            protocol=protocol,
        )
        server = GatewayServer(
            create_app(
                gateway,
                _auth(host, token, origin or []),
                channels=channels,
                routers=[runtime.router(), *([chronos.router] if chronos is not None else [])],
                metrics=RunMetrics(),
            ),
            host,
            port,
            log_level="info",
            drain_grace=drain_timeout,
        )
    except (XclawError, OSError) as err:
        fail(err if isinstance(err, XclawError) else ConfigError(f"Cannot listen: {err}"))
    configure_logging(logs)
    console.print(
        f"xclaw gateway on {escape(server.url)}/ (WebSocket {escape(server.ws_url)}); "
        "Ctrl+C stops it.",
        soft_wrap=True,
    )
    if channels:
        console.print("chat channels: " + ", ".join(c.name for c in channels), soft_wrap=True)
    if gateway.fanout.distributed:
        console.print(
            f"sessions shared with the other instances through Redis (lease {lease_ttl:g}s)",
            soft_wrap=True,
        )
    # uvicorn re-raises the SIGTERM it drained on; end like Ctrl+C so the spans are flushed
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.server.run(sockets=[server.sock])
    except KeyboardInterrupt:
        pass
    finally:
        if tracing is not None:
            tracing.shutdown()  # the spans still batched go out before we exit
    console.print("gateway stopped")
