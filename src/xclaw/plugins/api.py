"""``PluginApi``: the handle a plugin's ``register(api)`` receives (seed 003 ch. 10 §1.2).

Registrations are staged on the api and committed by the loader only when ``register`` returns
cleanly: a plugin that raises half-way leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from xclaw.tools.base import Tool

HookKind = Literal["before_model_call", "after_tools", "completion_gate", "request_view"]
HOOK_KINDS: tuple[str, ...] = get_args(HookKind)

ServiceFn = Callable[[], Awaitable[None] | None]


class PluginRegistrationError(ValueError):
    """A plugin asked for something the api refuses (bad name, unknown hook kind, ...)."""


@dataclass(frozen=True, slots=True)
class Service:
    """A background service started after registration and stopped when the runtime ends."""

    plugin_id: str
    name: str
    start: ServiceFn | None
    stop: ServiceFn | None


@dataclass(slots=True)
class PluginApi:
    """What one plugin may add: tools, services, loop hooks; and its validated ``config``."""

    plugin_id: str
    config: Mapping[str, Any] = field(default_factory=dict)
    plugin_dir: Path | None = None
    # Tool names the manifest declared (``contracts.tools``); None means undeclared.
    declared_tools: frozenset[str] | None = None
    tools: list[Tool] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    hooks: list[tuple[HookKind, Callable[..., Any]]] = field(default_factory=list)

    def register_tool(self, tool: Tool) -> Tool:
        """Add a tool (built with ``xclaw.tools.base.tool`` or any other ``Tool``)."""
        if not isinstance(tool, Tool):
            raise PluginRegistrationError(
                f"register_tool expects an xclaw Tool (made with @tool), got {type(tool).__name__}"
            )
        if self.declared_tools is not None and tool.name not in self.declared_tools:
            raise PluginRegistrationError(
                f"tool {tool.name!r} is not declared in the manifest's contracts.tools "
                f"({', '.join(sorted(self.declared_tools)) or 'none'})"
            )
        if any(t.name == tool.name for t in self.tools):
            raise PluginRegistrationError(f"tool {tool.name!r} is registered twice")
        self.tools.append(tool)
        return tool

    def register_service(
        self, name: str, start: ServiceFn | None = None, stop: ServiceFn | None = None
    ) -> None:
        """A service whose ``start`` runs when the runtime starts and ``stop`` when it ends
        (sync or async callables)."""
        if not name or any(s.name == name for s in self.services):
            raise PluginRegistrationError(f"service name {name!r} is empty or used twice")
        self.services.append(Service(self.plugin_id, name, start, stop))

    def register_hook(self, kind: HookKind, fn: Callable[..., Any]) -> None:
        """Add a loop hook (see ``xclaw.core.hooks``): before_model_call, after_tools,
        completion_gate or request_view."""
        if kind not in HOOK_KINDS:
            raise PluginRegistrationError(
                f"unknown hook kind {kind!r}; use one of {', '.join(HOOK_KINDS)}"
            )
        if not callable(fn):
            raise PluginRegistrationError(f"hook {kind} must be callable")
        self.hooks.append((kind, fn))
