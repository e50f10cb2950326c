"""Plugin manifests: ``xclaw.plugin.json``, and the subset of ``openclaw.plugin.json`` that maps.

A manifest is a static declaration read without running any code (seed 003 ch. 10 §1.1):
xclaw learns what a plugin offers (tools, skills, config) before anyone enables it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xclaw.core.errors import ConfigError
from xclaw.core.validation import validation_detail

XCLAW_MANIFEST = "xclaw.plugin.json"
OPENCLAW_MANIFEST = "openclaw.plugin.json"
MANIFEST_NAMES = (XCLAW_MANIFEST, OPENCLAW_MANIFEST)  # first found wins
DEFAULT_ENTRY = "plugin.py"
MAX_MANIFEST_BYTES = 256 * 1024

PLUGIN_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class Contracts(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tools: list[str] = Field(default_factory=list)


class PluginManifest(BaseModel):
    """What a plugin declares. Unknown OpenClaw keys (activation, channels, ...) are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str = Field(pattern=PLUGIN_ID.pattern)
    name: str = ""
    version: str = ""
    description: str = ""
    config_schema: dict[str, Any] | None = Field(None, alias="configSchema")
    enabled_by_default: bool = Field(False, alias="enabledByDefault")
    contracts: Contracts = Field(default_factory=Contracts)
    skills: list[str] = Field(default_factory=list)
    # xclaw only: the Python file (inside the folder) whose ``register(api)`` runs.
    entry: str | None = None

    @property
    def title(self) -> str:
        return self.name or self.id


def find_manifest(folder: Path) -> Path | None:
    for name in MANIFEST_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def read_manifest(path: Path) -> PluginManifest:
    """Parse and validate one manifest file; ``ConfigError`` says what is wrong."""
    try:
        raw = path.read_bytes()[: MAX_MANIFEST_BYTES + 1]
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror}", code="PLUGIN_MANIFEST") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ConfigError(f"{path} is larger than 256 KiB.", code="PLUGIN_MANIFEST")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(
            f"{path} is not valid JSON: {err}", code="PLUGIN_MANIFEST", hint="Fix the manifest."
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object.", code="PLUGIN_MANIFEST")
    try:
        manifest = PluginManifest.model_validate(data)
    except ValidationError as err:
        detail = validation_detail(err, "(root)")
        raise ConfigError(
            f"{path} is not a valid plugin manifest: {detail}",
            code="PLUGIN_MANIFEST",
            hint="ids are lowercase letters, digits, '.', '_' or '-'.",
        ) from None
    if path.name == OPENCLAW_MANIFEST and manifest.entry is not None:
        manifest = manifest.model_copy(update={"entry": None})  # not an OpenClaw field
    return manifest
