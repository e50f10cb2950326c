"""Finding plugins without running them: entry points (group ``xclaw.plugins``) and folders
with a manifest (``<config dir>/plugins/*``, ``<project>/.xclaw/plugins/*``).

Nothing here imports a plugin's code: ``PluginCandidate.load_register`` does, and only the
loader calls it, for enabled plugins.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir
from xclaw.plugins.manifest import (
    DEFAULT_ENTRY,
    OPENCLAW_MANIFEST,
    PLUGIN_ID,
    PluginManifest,
    find_manifest,
    read_manifest,
)
from xclaw.plugins.state import PluginState, folder_digest, project_key

ENTRY_POINT_GROUP = "xclaw.plugins"
Source = Literal["builtin", "entry_point", "user", "project"]
Register = Callable[..., Any]


def user_plugin_dir() -> Path:
    return config_dir() / "plugins"


def project_plugin_dir(root: Path) -> Path:
    return root / ".xclaw" / "plugins"


@dataclass(slots=True)
class PluginCandidate:
    id: str
    source: Source
    manifest: PluginManifest | None = None
    folder: Path | None = None
    entry_point: EntryPoint | None = None
    root: Path | None = None  # the project of a project plugin
    version: str = ""
    error: str = ""  # why it cannot load at all (bad manifest, duplicate id)

    @property
    def key(self) -> str:
        """Its key in the user's plugin state."""
        if self.source == "project" and self.root is not None:
            return project_key(self.root, self.id)
        return self.id

    @property
    def title(self) -> str:
        return self.manifest.title if self.manifest else self.id

    @property
    def description(self) -> str:
        return self.manifest.description if self.manifest else ""

    def enabled(self, state: PluginState) -> tuple[bool, str]:
        """Whether to load it, and why not. Only the user's state can enable project code."""
        if self.error:
            return False, self.error
        if self.source == "builtin":
            return True, ""
        default = self.source == "entry_point" or bool(
            self.source == "user" and self.manifest and self.manifest.enabled_by_default
        )
        if not state.enabled.get(self.key, default):
            hint = f"xclaw plugins enable {self.id}"
            if self.source == "project":
                return False, f"project plugins run code; enable it yourself with `{hint}`"
            return False, f"disabled; enable with `{hint}`"
        if self.source == "project" and self.folder is not None:
            if state.digests.get(self.key) != folder_digest(self.folder):
                return False, (
                    "its files changed since you enabled it; review them and run "
                    f"`xclaw plugins enable {self.id}` again"
                )
        return True, ""

    def load_register(self) -> Register | None:
        """Import the plugin's code (the first time any of it runs) and return its
        ``register``; None for a manifest-only plugin (skills, no code)."""
        if self.source == "builtin":
            from xclaw.plugins import builtin

            return builtin.register
        if self.entry_point is not None:
            return _register_of(self.entry_point.load(), self.entry_point.value)
        return self._load_folder_entry()

    def config_schema(self, register: Register | None) -> dict[str, Any] | None:
        if self.manifest is not None and self.manifest.config_schema is not None:
            return self.manifest.config_schema
        schema = getattr(register, "config_schema", None)
        owner = sys.modules.get(getattr(register, "__module__", "") or "")
        schema = schema or getattr(owner, "CONFIG_SCHEMA", None)
        return schema if isinstance(schema, dict) else None

    def _load_folder_entry(self) -> Register | None:
        assert self.folder is not None and self.manifest is not None
        entry_name = self.manifest.entry or DEFAULT_ENTRY
        folder = Path(os.path.realpath(self.folder))
        entry = Path(os.path.realpath(folder / entry_name))
        if not entry.is_relative_to(folder):
            raise ConfigError(f"entry {entry_name!r} lies outside the plugin folder")
        if not entry.is_file():
            if self.manifest.entry is None and not self.manifest.contracts.tools:
                return None  # skills only (an OpenClaw index.ts is not run by xclaw)
            raise ConfigError(
                f"{entry_name} not found in {folder}"
                + (" (xclaw runs Python plugins, not index.ts)" if self._openclaw else "")
            )
        module = _import_file(f"xclaw_plugin_{re.sub(r'[^a-z0-9_]', '_', self.id)}", entry)
        return _register_of(module, str(entry))

    @property
    def _openclaw(self) -> bool:
        return self.folder is not None and (self.folder / OPENCLAW_MANIFEST).is_file()


def _import_file(name: str, entry: Path) -> ModuleType:
    """Import ``entry`` as package ``name`` rooted at its folder (relative imports work)."""
    spec = importlib.util.spec_from_file_location(
        name, entry, submodule_search_locations=[str(entry.parent)]
    )
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _register_of(obj: Any, where: str) -> Register:
    """A plugin is a ``register(api)`` function, or a module/object that has one."""
    fn = getattr(obj, "register", None)
    if callable(fn):
        return fn  # type: ignore[no-any-return]
    plugin = getattr(obj, "plugin", None)
    if callable(getattr(plugin, "register", None)):
        return plugin.register  # type: ignore[union-attr,no-any-return]
    if callable(obj) and not isinstance(obj, ModuleType | type):
        return obj  # type: ignore[no-any-return]
    raise ConfigError(f"{where} has no register(api) function")


def _entry_point_candidates() -> list[PluginCandidate]:
    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        version = f"{dist.name} {dist.version}" if dist is not None else ""
        cand = PluginCandidate(ep.name, "entry_point", entry_point=ep, version=version)
        if not PLUGIN_ID.match(ep.name):
            cand.error = f"entry point name {ep.name!r} is not a valid plugin id"
        found.append(cand)
    return found


def _folder_candidates(base: Path, source: Source, root: Path | None) -> list[PluginCandidate]:
    if not base.is_dir():
        return []
    found = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = find_manifest(folder)
        if path is None:
            continue
        try:
            manifest = read_manifest(path)
        except ConfigError as err:
            found.append(PluginCandidate(folder.name, source, folder=folder, error=err.message))
            continue
        found.append(
            PluginCandidate(
                manifest.id, source, manifest, folder, root=root, version=manifest.version
            )
        )
    return found


def discover(
    root: Path | None = None, *, user_dir: Path | None = None, builtin: bool = True
) -> list[PluginCandidate]:
    """Every plugin xclaw can see, in load order: built-in, entry points, user, project.
    A later plugin whose id is taken is kept in the list, marked with the error."""
    found = [PluginCandidate("builtin", "builtin")] if builtin else []
    found += _entry_point_candidates()
    found += _folder_candidates(user_dir or user_plugin_dir(), "user", None)
    if root is not None:
        found += _folder_candidates(project_plugin_dir(root), "project", root)
    seen: dict[str, Source] = {}
    for cand in found:
        if cand.id in seen and not cand.error:
            cand.error = f"id {cand.id!r} is already used by a {seen[cand.id]} plugin"
        seen.setdefault(cand.id, cand.source)
    return found
