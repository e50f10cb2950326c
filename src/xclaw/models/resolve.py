"""Turn a ``--model`` spec into a ``Model``.

    scripted:PATH               a script of turns (no network)
    PROVIDER:MODEL              any preset (``xclaw models list``), e.g. deepseek:deepseek-chat
    local:NAME | local:PATH     a GGUF file served by llama.cpp (``xclaw models list-local``)
    openai-compatible:MODEL     a gateway at --base-url / $XCLAW_BASE_URL, key $XCLAW_API_KEY
    anthropic-compatible:MODEL  the same for the Anthropic Messages format
    A:X,B:Y                     a fallback chain: B answers when A is down

Every API model is wrapped in a ``FallbackModel`` (a chain of one when there is no comma),
because retries with backoff live there and the SDKs' own retries are off. Each model of the
chain is first set up for its protocol (native | xml | auto) and sampling settings, from
``protocol`` (``--protocol``), ``models:`` in xclaw.yaml and its preset (``models.setup``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast, get_args

from xclaw.config import ModelSettings, ProtocolName
from xclaw.core.errors import ConfigError
from xclaw.core.model import Model
from xclaw.models.fallback import FallbackModel
from xclaw.models.presets import Preset, get_preset, list_presets, lookup_key
from xclaw.models.scripted import ScriptedModel
from xclaw.models.setup import setup_model

__all__ = ["MODEL_HELP", "list_presets", "resolve_chain", "resolve_model", "resolve_one"]

MODEL_HELP = (
    "Set one with --model provider:model (see `xclaw models list`), --model scripted:PATH "
    "(a script of turns), XCLAW_MODEL, or 'model:' in xclaw.yaml."
)

# Where each wire API's adapter lives; imported only when a spec needs it.
_ADAPTERS = {
    "openai_chat": ("xclaw.models.openai_chat", "OpenAIChatModel"),
    "openai_responses": ("xclaw.models.openai_responses", "OpenAIResponsesModel"),
    "anthropic": ("xclaw.models.anthropic", "AnthropicModel"),
}


def resolve_model(
    spec: str | None,
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    project: Path | None = None,
    stream: bool = True,
    timeout_s: float = 600.0,
    protocol: str | None = None,
    model_settings: Mapping[str, ModelSettings] | None = None,
) -> Model:
    """The model for ``spec``. ``base_url`` overrides the preset's; keys come from ``env``
    (default: the process environment), then from ``project/.env`` (default: the cwd).
    ``protocol`` (native | xml | auto) overrides every other choice for each model of the
    chain; ``model_settings`` is the caller's resolved configuration's ``models:`` (None:
    no per-model settings; this never reads a configuration)."""
    chain = resolve_chain(
        spec,
        base_url=base_url,
        env=env,
        project=project,
        stream=stream,
        timeout_s=timeout_s,
        protocol=protocol,
        model_settings=model_settings,
    )
    if len(chain) == 1 and isinstance(chain[0], ScriptedModel):
        return chain[0]
    return FallbackModel(chain)


def resolve_chain(
    spec: str | None,
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    project: Path | None = None,
    stream: bool = True,
    timeout_s: float = 600.0,
    protocol: str | None = None,
    model_settings: Mapping[str, ModelSettings] | None = None,
) -> list[Model]:
    """Each model of a comma-separated chain, in order, set up for its protocol."""
    if not spec or not spec.strip():
        raise ConfigError("No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP)
    items = [s.strip() for s in spec.split(",")] if not spec.startswith("scripted:") else [spec]
    if any(not s for s in items):
        raise ConfigError(
            f"Model spec {spec!r} has an empty entry.", code="MODEL_SPEC_INVALID", hint=MODEL_HELP
        )
    chosen = check_protocol(protocol)
    settings = model_settings if model_settings is not None else {}
    return [
        setup_model(
            resolve_one(
                item,
                base_url=base_url,
                env=env,
                project=project,
                stream=stream,
                timeout_s=timeout_s,
            ),
            item,
            settings,
            protocol=chosen,
        )
        for item in items
    ]


def check_protocol(protocol: str | None) -> ProtocolName | None:
    """``--protocol`` as given, or a coded error for an unknown one."""
    if protocol is None or protocol in get_args(ProtocolName):
        return cast(ProtocolName | None, protocol)
    raise ConfigError(
        f"Unknown protocol {protocol!r}.",
        code="PROTOCOL_UNKNOWN",
        hint="Use --protocol native (the API's tool calls), xml (the XML text protocol) or "
        "auto (probe once, remembered per model).",
    )


def resolve_one(
    spec: str,
    *,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
    project: Path | None = None,
    stream: bool = True,
    timeout_s: float = 600.0,
) -> Model:
    provider, sep, rest = spec.partition(":")
    if provider == "chatgpt-web":  # the web page as a model; the mode is optional
        from xclaw.models.web import chatgpt_web_model

        return chatgpt_web_model(rest or None, base_url=base_url)
    if not sep or not rest:
        raise ConfigError(
            f"Model spec {spec!r} must look like provider:model.",
            code="MODEL_SPEC_INVALID",
            hint=MODEL_HELP,
        )
    if provider == "scripted":
        return _scripted(rest)
    if provider == "local":  # a GGUF file served by llama.cpp, started on first use
        from xclaw.models.local.model import local_model

        return local_model(rest, stream=stream, timeout_s=timeout_s)
    preset = get_preset(provider)
    if preset is None:
        known = ", ".join(p.name for p in list_presets())
        raise ConfigError(
            f"Unknown provider {provider!r}.",
            code="MODEL_PROVIDER_UNKNOWN",
            hint=f"Use one of: scripted, local, {known}.",
        )
    environ = os.environ if env is None else env
    url = _base_url(preset, base_url, environ)
    key = lookup_key(preset, env=environ, project=project if project is not None else Path.cwd())
    kwargs: dict[str, Any] = {
        "base_url": url,
        "api_key": key,
        "preset": preset,
        "stream": stream,
        "timeout_s": timeout_s,
    }
    if preset.auth == "copilot":
        kwargs["credentials"] = _copilot_credentials(preset, key, url, timeout_s)
    model: Model = _adapter(preset)(rest, **kwargs)
    return model


def _scripted(rest: str) -> Model:
    path = Path(rest).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"Script file {path} does not exist.",
            code="MODEL_SPEC_INVALID",
            hint="Point scripted: at a .yaml or .jsonl script.",
        )
    return ScriptedModel.from_file(path)


def _base_url(preset: Preset, explicit: str | None, environ: Mapping[str, str]) -> str:
    url = explicit or (environ.get(preset.base_url_env) if preset.base_url_env else None)
    url = url or preset.base_url
    if not url:
        raise ConfigError(
            f"{preset.name} needs a base URL.",
            code="MODEL_BASE_URL_MISSING",
            hint=f"Pass --base-url or set ${preset.base_url_env or 'XCLAW_BASE_URL'}.",
        )
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"Base URL {url!r} must start with http:// or https://.",
            code="MODEL_BASE_URL_INVALID",
            hint="Give the full URL, e.g. http://127.0.0.1:8000/v1.",
        )
    return url.rstrip("/")


def _adapter(preset: Preset) -> Any:
    module_name, class_name = _ADAPTERS[preset.api]
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ConfigError(
            f"The {preset.api} adapter ({module_name}) is not available in this build.",
            code="MODEL_PROVIDER_UNAVAILABLE",
            hint="Choose a provider that speaks openai_chat (xclaw models list).",
        ) from None


def _copilot_credentials(preset: Preset, token: str | None, url: str, timeout_s: float) -> Any:
    from xclaw.models.copilot import CopilotToken

    if not token or not preset.token_url:
        raise ConfigError(
            "Copilot needs a GitHub token.",
            code="MODEL_KEY_MISSING",
            hint=f"export {preset.key_env}=...",
        )
    return CopilotToken(
        token,
        token_url=preset.token_url,
        default_base_url=url,
        headers=preset.headers,
        timeout_s=min(timeout_s, 30.0),
    )
