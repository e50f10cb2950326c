"""Provider presets, loaded from ``presets.yaml``: where a provider lives, how it
authenticates, which wire API it speaks and what its models can do.

Presets are data. What differs between models of one provider lives in ``models`` overrides
keyed by fnmatch patterns (the longest matching pattern wins), never in name checks in code:

    preset = get_preset("moonshot")
    preset.profile("moonshot-v1-8k").context_window   # 8192
    preset.prices("gpt-4o")                           # (2.5, 10.0) per million tokens
    preset.settings("qwen2.5-coder").protocol         # "auto", when the preset says so

``protocol`` (native | xml | auto) and ``sampling`` (temperature, top_p, seed, tool_choice)
are a preset's defaults for how its models are spoken to; ``models:`` in xclaw.yaml wins.

Your own presets live in ``~/.config/xclaw/models.yaml`` (``$XDG_CONFIG_HOME/xclaw``), in the
same shape: a new name adds a provider, a packaged name is changed key by key (a new model
under ``models:``, another ``base_url``), so a model is added without editing the package:

    # ~/.config/xclaw/models.yaml
    my-gateway:
      api: openai_chat
      base_url: https://llm.example.com/v1
      key_env: MY_GATEWAY_KEY
    openai:
      models:
        "gpt-6*": {capabilities: {context_window: 400000}, price_input: 5.0}

A mistake in it is a coded error naming the file, the line and the nearest valid key.

Keys come only from the environment, or from a ``.env`` file in the project (read by a tiny
parser here, never printed). Every secret-named value read from a ``.env`` file, and every key
handed out, is registered with the redactor like the environment's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from xclaw.config import (
    ConfigSource,
    ModelSettings,
    ProtocolName,
    SamplingSettings,
    deep_merge,
    explain_invalid,
    read_yaml_mapping,
)
from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir
from xclaw.redact import register_secret, register_secrets

__all__ = [
    "Capabilities",
    "ModelOverride",
    "Preset",
    "get_preset",
    "list_presets",
    "load_dotenv",
    "lookup_key",
    "user_presets_file",
]

Api = Literal["openai_chat", "openai_responses", "anthropic"]


class Capabilities(BaseModel):
    """What a model can do; adapters and the context assembler read it, never model names."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tools: bool = True
    parallel_tool_calls: bool = True
    vision: bool = False
    json_schema: bool = False
    strict_tools: bool = False
    reasoning: bool = False
    context_window: int = Field(128_000, ge=1)
    max_output_tokens: int | None = Field(None, ge=1)


class ModelOverride(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    capabilities: dict[str, Any] = Field(default_factory=dict)
    price_input: float | None = None
    price_output: float | None = None
    protocol: ProtocolName | None = None
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)


class Preset(BaseModel):
    """One provider. ``profile(model)`` and ``prices(model)`` apply the per-model overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str = ""
    api: Api
    base_url: str | None
    base_url_env: str | None = None  # only gateways read a base URL from the environment
    key_env: str | None = None
    key_required: bool = True
    headers: dict[str, str] = Field(default_factory=dict)
    auth: Literal["bearer", "copilot"] = "bearer"
    token_url: str | None = None  # copilot: where the GitHub token is exchanged
    default_model: str | None = None
    reasoning_echo_field: str | None = None  # chat field that sends reasoning back (DeepSeek)
    capabilities: Capabilities = Field(default_factory=Capabilities)
    price_input: float | None = None
    price_output: float | None = None
    protocol: ProtocolName | None = None  # unset: native
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    models: dict[str, ModelOverride] = Field(default_factory=dict)

    def _overrides(self, model: str) -> list[ModelOverride]:
        """Matching overrides, least specific first, so later ones win when merged."""
        hits = [(len(p), p) for p in self.models if fnmatchcase(model, p)]
        return [self.models[p] for _, p in sorted(hits)]

    def profile(self, model: str) -> Capabilities:
        merged = self.capabilities.model_dump()
        for override in self._overrides(model):
            merged.update(override.capabilities)
        try:
            return Capabilities.model_validate(merged)
        except ValidationError as err:
            raise ConfigError(
                f"preset {self.name!r} has an invalid profile for {model!r}: {err}",
                hint="Fix presets.yaml.",
            ) from None

    def settings(self, model: str) -> ModelSettings:
        """The preset's protocol and sampling settings for ``model``, overrides applied."""
        merged: dict[str, Any] = {"protocol": self.protocol, **self.sampling.request_settings()}
        for override in self._overrides(model):
            if override.protocol is not None:
                merged["protocol"] = override.protocol
            merged.update(override.sampling.request_settings())
        return ModelSettings.model_validate(merged)

    def prices(self, model: str) -> tuple[float | None, float | None]:
        """US dollars per million input and output tokens; None when unknown or free."""
        price_in, price_out = self.price_input, self.price_output
        for override in self._overrides(model):
            price_in = override.price_input if override.price_input is not None else price_in
            price_out = override.price_output if override.price_output is not None else price_out
        return price_in, price_out


@cache
def _packaged() -> dict[str, dict[str, Any]]:
    """presets.yaml as data (parsed once; anchors resolved)."""
    text = resources.files("xclaw.models").joinpath("presets.yaml").read_text(encoding="utf-8")
    raw: dict[str, dict[str, Any]] = yaml.safe_load(text)
    return raw


def user_presets_file() -> Path:
    """Your presets: ``models.yaml`` beside your ``xclaw.yaml``."""
    return config_dir() / "models.yaml"


_PRESETS = TypeAdapter(dict[str, Preset])
# The merged presets by the user file's (path, contents): edited, it is read again.
_loaded: dict[tuple[str, bytes | None], dict[str, Preset]] = {}


def _load_presets() -> dict[str, Preset]:
    path = user_presets_file()
    try:
        raw: bytes | None = path.read_bytes()
    except OSError:
        raw = None
    key = (str(path), raw)
    found = _loaded.get(key)
    if found is None:
        found = _merge(path, raw)
        _loaded.clear()  # one user file at a time is enough
        _loaded[key] = found
    return found


def _merge(path: Path, raw: bytes | None) -> dict[str, Preset]:
    packaged = _packaged()
    try:
        presets = _PRESETS.validate_python({n: {"name": n, **b} for n, b in packaged.items()})
    except ValidationError as err:
        raise ConfigError(f"presets.yaml is invalid: {err}", hint="Fix presets.yaml.") from None
    if raw is None:
        return presets
    mine = read_yaml_mapping(path, raw)
    bodies: dict[str, Any] = {}
    for name, body in mine.items():
        if not isinstance(body, dict):
            raise ConfigError(
                f"{path}: preset {name!r} must be a mapping of settings, not {body!r}.",
                code="CONFIG_VALUE_INVALID",
                hint="Give it api:, base_url: and key_env: (see `xclaw models list`), then "
                "run the command again.",
            )
        below = packaged.get(str(name), {})
        bodies[str(name)] = {**deep_merge(below, body), "name": str(name)}
    try:
        added = _PRESETS.validate_python(bodies)
    except ValidationError as err:
        text = raw.decode("utf-8")
        source = ConfigSource(str(path), mine, path, text)
        raise explain_invalid(err, dict[str, Preset], [source]) from None
    return {**presets, **added}


def list_presets() -> list[Preset]:
    """Every preset: presets.yaml's in file order, then those only your models.yaml adds
    (``xclaw models list``)."""
    return list(_load_presets().values())


def get_preset(name: str) -> Preset | None:
    return _load_presets().get(name)


def load_dotenv(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a ``.env`` file: ``#`` comments, ``export`` and quotes allowed.
    Values of secret-named variables are registered with the redactor as they are read.

    A deliberately small parser: no interpolation, no multi-line values."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if name.isidentifier():
            values[name] = value
    register_secrets(values)
    return values


def lookup_key(
    preset: Preset,
    *,
    env: Mapping[str, str] | None = None,
    project: Path | None = None,
) -> str | None:
    """The preset's key from the environment, else from ``project/.env``.

    A required key that is missing is a ``ConfigError`` naming the variable (never a value)."""
    if preset.key_env is None:
        return None
    environ = os.environ if env is None else env
    value = environ.get(preset.key_env)
    if not value and project is not None:
        value = load_dotenv(project / ".env").get(preset.key_env)
    if value:
        register_secret(value)  # whatever its variable is called, it is a key
        return value
    if preset.key_required:
        raise ConfigError(
            f"{preset.name} needs an API key in ${preset.key_env}, and it is not set.",
            code="MODEL_KEY_MISSING",
            hint=f"export {preset.key_env}=... (or put it in the project's .env file).",
        )
    return None
