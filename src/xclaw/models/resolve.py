"""Turn a ``--model`` spec (``provider:model``) into a ``Model``."""

from __future__ import annotations

from pathlib import Path

from xclaw.core.errors import ConfigError
from xclaw.core.model import Model
from xclaw.models.scripted import ScriptedModel

MODEL_HELP = (
    "Set one with --model scripted:PATH (a script of turns), XCLAW_MODEL, "
    "or 'model:' in xclaw.yaml."
)


def resolve_model(spec: str | None) -> Model:
    if not spec:
        raise ConfigError("No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP)
    provider, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(
            f"Model spec {spec!r} must look like provider:model.",
            code="MODEL_SPEC_INVALID",
            hint=MODEL_HELP,
        )
    if provider == "scripted":
        path = Path(rest).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"Script file {path} does not exist.",
                code="MODEL_SPEC_INVALID",
                hint="Point scripted: at a .yaml or .jsonl script.",
            )
        return ScriptedModel.from_file(path)
    raise ConfigError(
        f"Provider {provider!r} is not available in this build; API providers arrive with the "
        "model layer.",
        code="MODEL_PROVIDER_UNKNOWN",
        hint=MODEL_HELP,
    )
