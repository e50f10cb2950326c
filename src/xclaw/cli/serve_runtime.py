"""What `xclaw serve` adds to every session's agent: plugins and skills, MCP servers' tools and
long-term memory — loaded once per process, started and stopped with the app.

Each session gets its own copy of the tool registry (so one session's browser or MCP binding
never reaches another) and its own recall/extraction state over the one shared memory store.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI

from xclaw.core.hooks import Hooks
from xclaw.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from xclaw.config import XclawConfig
    from xclaw.core.model import Model
    from xclaw.memory.base import MemoryStore
    from xclaw.memory.runtime import MemoryRuntime
    from xclaw.plugins.extensions import Extensions

log = logging.getLogger("xclaw.serve")


@dataclass(slots=True)
class SessionExtras:
    """The registry, hooks, prompt and window reserve one session's agent is built with."""

    registry: ToolRegistry
    hooks: Hooks
    system_prompt: str
    prompt_reserve: int = 0
    memory: MemoryRuntime | None = None


@dataclass(slots=True)
class ServeRuntime:
    root: Path
    config: XclawConfig
    extensions: Extensions
    memory_store: MemoryStore | None = None
    mcp_tools: list[str] = field(default_factory=list)

    def for_session(self, model: Model, base_prompt: str) -> SessionExtras:
        registry = ToolRegistry(list(self.extensions.registry))
        hooks = self.extensions.hooks
        reserve = 0
        memory = None
        if self.memory_store is not None:
            from xclaw.memory.runtime import default_scopes, open_memory

            memory = open_memory(
                self.config,
                default_scopes(self.root),
                model=model,
                store=self.memory_store,
                warm_up=False,
            )
            for t in memory.tools():
                if registry.get(t.name) is None:
                    registry.register(t)
            hooks = hooks.merged(memory.hooks())
            reserve = memory.reserve_tokens
        return SessionExtras(
            registry, hooks, self.extensions.system_prompt(base_prompt), reserve, memory
        )

    def router(self) -> APIRouter:
        """Mounted by ``create_app``: its lifespan starts plugin services and MCP servers
        before the first session and stops them (and closes memory) at shutdown."""

        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            hub = await self._start_mcp()
            await self.extensions.start()
            try:
                yield
            finally:
                await self.extensions.stop()
                if hub is not None:
                    await hub.aclose()
                if self.memory_store is not None:
                    self.memory_store.close()

        return APIRouter(lifespan=lifespan)

    async def _start_mcp(self) -> Any:
        section = self.config.mcp
        if not section:
            return None
        from xclaw.core.errors import XclawError
        from xclaw.mcp.runtime import McpHub

        try:
            hub = McpHub.from_config(self.root, section)
        except XclawError as err:
            log.warning("no MCP servers: %s", err)
            return None
        for t in await hub.tools(lambda text: log.warning("mcp: %s", text)):
            if self.extensions.registry.get(t.name) is None:
                self.extensions.registry.register(t)
                self.mcp_tools.append(t.name)
            else:
                log.warning("%s is already a tool; the MCP one is left out", t.name)
        return hub


def serve_runtime(root: Path, config: XclawConfig, *, memory: bool) -> ServeRuntime:
    """Plugins and skills of ``root`` over the coding tools, and the memory store when on."""
    from xclaw.coding.toolset import coding_registry
    from xclaw.plugins.extensions import load_extensions

    extensions = load_extensions(root, coding_registry())
    for problem in extensions.problems():
        log.warning("%s", problem)
    store = None
    if memory:
        from xclaw.memory.runtime import warm_up_in_background
        from xclaw.memory.settings import open_memory_store

        store = open_memory_store(config)
        if store.count():  # with memories, the first recall needs the embedding model
            warm_up_in_background(store)
    return ServeRuntime(root, config, extensions, store)
