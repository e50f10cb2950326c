"""One skill: a folder with ``SKILL.md`` (YAML front matter + Markdown body), in the format
Claude Code and OpenClaw share (seed 003 ch. 10 §2.1).

Front matter: ``name``, ``description`` (the matching key), optional ``user-invocable``,
``metadata.openclaw.requires.{bins,anyBins,env}``, ``metadata.openclaw.install`` (hints shown
when something is missing; xclaw never runs them), ``metadata.openclaw.os``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from xclaw.core.errors import ConfigError

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 512 * 1024
SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RESOURCE_DIRS = ("scripts", "references", "assets")
_METADATA_KEYS = ("openclaw", "clawdbot", "clawdis")  # OpenClaw's names over its history
_PLATFORMS = {"darwin": "darwin", "linux": "linux", "win32": "win32", "windows": "win32"}


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    folder: Path  # realpath of the skill folder
    source: str  # "project", "claude", "user", "plugin:<id>", ...
    user_invocable: bool = True
    requires_bins: tuple[str, ...] = ()
    requires_any_bins: tuple[str, ...] = ()
    requires_env: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    install: tuple[dict[str, Any], ...] = ()
    emoji: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE

    def missing(self) -> list[str]:
        """What this machine lacks for the skill: ``bin:gh``, ``env:TOKEN``, ``os:darwin``."""
        out = [f"bin:{b}" for b in self.requires_bins if shutil.which(b) is None]
        if self.requires_any_bins and not any(shutil.which(b) for b in self.requires_any_bins):
            out.append("bin:" + "|".join(self.requires_any_bins))
        out += [f"env:{e}" for e in self.requires_env if not os.environ.get(e)]
        if self.platforms and _PLATFORMS.get(sys.platform, sys.platform) not in self.platforms:
            out.append("os:" + "|".join(self.platforms))
        return out

    def install_hints(self) -> list[str]:
        hints = []
        for spec in self.install:
            label = spec.get("label")
            if not label:
                kind = spec.get("kind", "")
                what = spec.get("formula") or spec.get("package") or spec.get("module") or ""
                label = f"{kind} {what}".strip()
            if label:
                hints.append(str(label))
        return hints

    def body(self) -> str:
        """The instructions, read when the skill is used, ``{baseDir}`` replaced."""
        return read_skill(self.folder, self.source)[1].replace("{baseDir}", str(self.folder))


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, str | int))
    return ()


def _openclaw_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    raw = meta.get("metadata")
    if isinstance(raw, str):  # some publish it as a one-line JSON string
        try:
            raw = yaml.safe_load(raw)
        except yaml.YAMLError:
            raw = None
    if not isinstance(raw, dict):
        return {}
    for key in _METADATA_KEYS:
        if isinstance(raw.get(key), dict):
            return dict(raw[key])
    for value in raw.values():  # forks rename the key; the shape is what counts
        if isinstance(value, dict) and {"requires", "install", "emoji"} & set(value):
            return dict(value)
    return {}


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return default


def read_skill(folder: Path, source: str) -> tuple[Skill, str]:
    """Parse ``folder/SKILL.md``: the skill and its raw body. ``ConfigError`` when invalid."""
    path = folder / SKILL_FILE
    try:
        raw = path.read_bytes()[: MAX_SKILL_BYTES + 1]
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror}", code="SKILL_INVALID") from None
    if len(raw) > MAX_SKILL_BYTES:
        raise ConfigError(f"{path} is larger than 512 KiB.", code="SKILL_INVALID")
    try:
        post = frontmatter.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, yaml.YAMLError, ValueError) as err:
        raise ConfigError(
            f"{path}: front matter is not valid YAML: {err}", code="SKILL_INVALID"
        ) from None
    meta = dict(post.metadata)
    name = str(meta.get("name") or folder.name).strip()
    description = " ".join(str(meta.get("description") or "").split())
    if not SKILL_NAME.match(name):
        raise ConfigError(f"{path}: skill name {name!r} is not valid", code="SKILL_INVALID")
    if not description:
        raise ConfigError(
            f"{path}: the front matter has no description",
            code="SKILL_INVALID",
            hint="Add `description:` saying what the skill does and when to use it.",
        )
    oc = _openclaw_metadata(meta)
    requires: dict[str, Any] = oc["requires"] if isinstance(oc.get("requires"), dict) else {}
    install = oc.get("install", meta.get("install"))
    skill = Skill(
        name=name,
        description=description[:1024],
        folder=Path(os.path.realpath(folder)),
        source=source,
        user_invocable=_bool(meta.get("user-invocable"), True),
        requires_bins=_strings(requires.get("bins")),
        requires_any_bins=_strings(requires.get("anyBins")),
        requires_env=_strings(requires.get("env")),
        platforms=tuple(_PLATFORMS.get(p, p) for p in _strings(oc.get("os"))),
        install=tuple(i for i in install if isinstance(i, dict))
        if isinstance(install, list)
        else (),
        emoji=str(oc.get("emoji") or ""),
        extra={k: v for k, v in meta.items() if k not in ("name", "description")},
    )
    return skill, post.content
