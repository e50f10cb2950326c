"""``load_extensions``: what a surface calls once per runtime to add plugins and skills.

ext = load_extensions(root, base=coding_registry())
agent = Agent(model, root, ext.registry, hooks=ext.hooks,
              system_prompt=ext.system_prompt(SYSTEM_PROMPT))
async with ext:            # plugin services start ... and stop when the runtime ends
    await agent.run(task)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.hooks import Hooks, RequestView
from xclaw.plugins.discovery import PluginCandidate, discover
from xclaw.plugins.loader import PluginHost, PluginStatus, load_plugins
from xclaw.plugins.state import PluginState
from xclaw.skills.catalog import SkillCatalog, skill_dirs
from xclaw.skills.inject import SkillView, prompt_section, skill_tools
from xclaw.tools.base import Tool
from xclaw.tools.registry import ToolRegistry


@dataclass(slots=True)
class Extensions:
    """Loaded plugins (tools, hooks, services) and the skill catalog of one runtime."""

    host: PluginHost
    catalog: SkillCatalog
    hooks: Hooks  # the plugins' hooks, then the skill view

    @property
    def registry(self) -> ToolRegistry:
        return self.host.registry

    @property
    def plugins(self) -> list[PluginStatus]:
        return self.host.statuses

    def system_prompt(self, base: str) -> str:
        section = prompt_section(self.catalog)
        return f"{base}\n\n{section}" if section else base

    def problems(self) -> list[str]:
        """One line per plugin that failed, for the surface to show."""
        return [f"plugin {s.id}: {s.reason}" for s in self.plugins if s.state == "failed"]

    async def start(self) -> None:
        await self.host.start()

    async def stop(self) -> None:
        await self.host.stop()

    async def __aenter__(self) -> Extensions:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def load_extensions(
    root: Path | None,
    base: ToolRegistry | Iterable[Tool] | None = None,
    *,
    state: PluginState | None = None,
    user_plugins: Path | None = None,
    extra_skill_dirs: Iterable[tuple[str, Path]] = (),
) -> Extensions:
    """Load the enabled plugins and the skills for a run on ``root``.

    ``base``: the tools the surface starts from (``coding_registry(...)``), a registry is
    extended in place; without it the built-in plugin registers the coding tools. Plugin
    imports happen here, for enabled plugins only; services start with ``await ext.start()``
    (or ``async with ext``).
    """
    state = state or PluginState.load()
    if base is None:
        registry = ToolRegistry()
    else:
        registry = base if isinstance(base, ToolRegistry) else ToolRegistry(base)
    candidates = discover(root, user_dir=user_plugins, builtin=base is None)
    given = registry.names()
    host = load_plugins(candidates, state, registry)
    if base is not None:  # the surface's tools came through the built-in plugin
        host.statuses.insert(0, _builtin_status(given))
    folders = [*skill_dirs(root), *extra_skill_dirs]
    folders += [(f"plugin:{pid}", folder) for pid, folder in host.skill_dirs]
    catalog = SkillCatalog.discover(folders)
    if len(catalog):
        for t in skill_tools(catalog):
            if host.registry.get(t.name) is None:
                host.registry.register(t)
    views: list[RequestView] = [SkillView(catalog)] if len(catalog) else []
    return Extensions(host, catalog, host.hooks.merged(Hooks(request_view=views)))


def _builtin_status(tools: list[str]) -> PluginStatus:
    return PluginStatus(PluginCandidate("builtin", "builtin"), "loaded", tools=tools)
