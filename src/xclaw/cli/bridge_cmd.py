"""``xclaw bridge``: serve configured models over an OpenAI-compatible HTTP API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from xclaw.cli.common import ProtocolOption, console, err_console, fail
from xclaw.cli.run_cmd import BrowserOption, HeadlessOption
from xclaw.cli.web import browser_flags
from xclaw.core.errors import ConfigError, XclawError

if TYPE_CHECKING:
    from xclaw.bridge.token import BridgeToken
    from xclaw.config import ModelSettings
    from xclaw.core.model import Model

_MODEL_HELP = (
    "provider:model to serve (repeat it, or give a comma list); NAME=provider:model serves it "
    "as NAME. Default: the configured model."
)


def parse_model_specs(values: Sequence[str]) -> dict[str, str]:
    """Public model id -> spec. Each value is a spec or a comma list of them; ``NAME=SPEC``
    names one. A ``scripted:PATH`` value is taken whole (a path may hold a comma)."""
    specs: dict[str, str] = {}
    for value in values:
        items = [value] if "scripted:" in value else value.split(",")
        for item in (i.strip() for i in items):
            name, sep, spec = item.partition("=")
            model_id, spec = (
                (name.strip(), spec.strip()) if sep and ":" not in name else (item, item)
            )
            if not model_id or not spec:
                raise ConfigError(
                    f"Model entry {item!r} is empty.",
                    code="MODEL_SPEC_INVALID",
                    hint="Use --model provider:model or --model NAME=provider:model.",
                )
            if model_id in specs:
                raise ConfigError(
                    f"Model {model_id!r} is given twice.",
                    code="MODEL_SPEC_INVALID",
                    hint="Serve each model once; name copies with NAME=provider:model.",
                )
            specs[model_id] = spec
    return specs


def announce_token(token_file: Path | None) -> BridgeToken:
    """Load or make the token; print it only on the start that made it."""
    from xclaw.bridge.token import load_or_create_token

    token = load_or_create_token(token_file)
    where = escape(str(token.path))
    if token.created:
        console.print(
            f"Bridge token (shown this once; saved in {where}):\n  {token.value}", soft_wrap=True
        )
    else:
        console.print(f"Bridge token: in {where} (not shown).", soft_wrap=True)
    return token


def _check_host(host: str, allow_remote: bool) -> None:
    from xclaw.bridge.server import is_loopback

    if is_loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"{host} is not a loopback address; the bridge would be reachable from other machines.",
            code="BRIDGE_REMOTE_REFUSED",
            hint="Bind 127.0.0.1 (the default), or pass --allow-remote if you mean it.",
        )
    err_console.print(
        f"[bold yellow]warning:[/] listening on {escape(host)}: anyone who can reach this "
        "address and holds the token can use your models (and your provider keys' quota). "
        "Traffic is plain HTTP; put TLS in front of it.",
        soft_wrap=True,
    )


def _configured_model(spec: str | None) -> list[str]:
    from xclaw.models.resolve import MODEL_HELP

    if not spec:
        raise ConfigError("No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP)
    return [spec]


def _resolve_all(
    specs: dict[str, str],
    base_url: str | None,
    protocol: str | None = None,
    settings: Mapping[str, ModelSettings] | None = None,
) -> dict[str, Model]:
    from xclaw.models.resolve import resolve_model

    return {
        model_id: resolve_model(spec, base_url=base_url, protocol=protocol, model_settings=settings)
        for model_id, spec in specs.items()
    }


def bridge(
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8765,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Endpoint of an OpenAI- or Anthropic-compatible gateway."),
    ] = None,
    queue: Annotated[
        int,
        typer.Option(
            "--queue", min=0, help="Requests that may wait for a one-at-a-time (browser) model."
        ),
    ] = 8,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="Bearer token file (made if missing).")
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow a non-loopback --host.")
    ] = False,
    headless: HeadlessOption = False,
    browser_path: BrowserOption = None,
    protocol: ProtocolOption = None,
) -> None:
    """Serve models over an OpenAI-compatible API (/v1/chat/completions, /v1/responses),
    token required."""
    from xclaw.bridge import create_app
    from xclaw.bridge.server import bind, make_server
    from xclaw.compose.settings import resolve_config

    try:
        _check_host(host, allow_remote)
        browser_flags(headless, browser_path)
        config = resolve_config(Path.cwd())  # once: the models and their settings
        specs = parse_model_specs(model or _configured_model(config.model))
        models = _resolve_all(specs, base_url, protocol, config.models)
        sock = bind(host, port)
        token = announce_token(token_file)
    except XclawError as err:
        fail(err)
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"xclaw bridge on http://{escape(shown)}:{port}/v1 serving: "
        f"{escape(', '.join(models))} (Ctrl+C stops it)",
        soft_wrap=True,
    )
    server = make_server(create_app(models, token.value, queue=queue))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    console.print("bridge stopped")
