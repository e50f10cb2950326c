"""Loading enabled plugins into one registry and one set of hooks; running their services.

One failing plugin (import error, exception in ``register``, invalid config, a service that
cannot start or stop, a hook that raises) is disabled with its reason and never takes the
process down. Its tools leave the registry and its hooks stop running.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import jsonschema

from xclaw.core.errors import EndRun
from xclaw.core.hooks import Hooks
from xclaw.plugins.api import PluginApi, Service
from xclaw.plugins.discovery import PluginCandidate
from xclaw.plugins.state import PluginState
from xclaw.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from xclaw.core.messages import Message
    from xclaw.core.state import RunState, ToolCallRecord

log = logging.getLogger("xclaw.plugins")
SERVICE_TIMEOUT_S = 30.0


def _drop_tool(registry: ToolRegistry, name: str) -> None:
    # The registry may be a subclass (the browser one binds its session), so the plugin's
    # tools leave that very instance.
    registry.unregister(name)


@dataclass(slots=True)
class PluginStatus:
    candidate: PluginCandidate
    state: Literal["loaded", "disabled", "failed"]
    reason: str = ""
    tools: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def active(self) -> bool:
        return self.state == "loaded"


def config_errors(schema: Mapping[str, Any] | None, config: Mapping[str, Any]) -> list[str]:
    """Every way ``config`` breaks ``schema`` (JSON Schema, draft from ``$schema``)."""
    if schema is None:
        return []
    schema = dict(schema)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        return [f"the manifest's configSchema is not a valid JSON Schema: {err.message}"]
    errors = sorted(cls(schema).iter_errors(dict(config)), key=lambda e: list(e.path))
    return [f"{'/'.join(str(p) for p in e.path) or '(config)'}: {e.message}" for e in errors]


class PluginHost:
    """The loaded plugins of one runtime: their tools (in ``registry``), hooks and services."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.statuses: list[PluginStatus] = []
        self.hooks = Hooks()
        self.services: list[Service] = []
        self.skill_dirs: list[tuple[str, Path]] = []  # (plugin id, folder)
        self._started: list[Service] = []

    # -- loading ----------------------------------------------------------------------------
    def load(self, candidate: PluginCandidate, state: PluginState) -> PluginStatus:
        enabled, why = candidate.enabled(state)
        if not enabled:
            status = PluginStatus(candidate, "failed" if candidate.error else "disabled", why)
            self.statuses.append(status)
            return status
        try:
            api = self._register(candidate, state.config.get(candidate.id, {}))
        except Exception as err:  # noqa: BLE001 - any plugin error disables only that plugin
            status = PluginStatus(candidate, "failed", _describe(err))
            log.warning("plugin %s disabled: %s", candidate.id, status.reason)
            self.statuses.append(status)
            return status
        status = PluginStatus(candidate, "loaded")
        self._commit(status, api)
        self.statuses.append(status)
        return status

    def _register(self, candidate: PluginCandidate, config: Mapping[str, Any]) -> PluginApi:
        register = candidate.load_register()
        problems = config_errors(candidate.config_schema(register), config)
        if problems:
            raise _PluginFailure("invalid config: " + "; ".join(problems))
        manifest = candidate.manifest
        declared = manifest.contracts.tools if manifest else []
        api = PluginApi(
            candidate.id,
            config=dict(config),
            plugin_dir=candidate.folder,
            declared_tools=frozenset(declared) if declared else None,
        )
        if register is not None:
            out = register(api)
            if inspect.isawaitable(out):
                if inspect.iscoroutine(out):
                    out.close()
                raise _PluginFailure(
                    "register(api) must be synchronous; do async work in a service's start"
                )
        taken = [t.name for t in api.tools if self.registry.get(t.name) is not None]
        if taken:
            raise _PluginFailure(f"tool name already registered: {', '.join(taken)}")
        return api

    def _commit(self, status: PluginStatus, api: PluginApi) -> None:
        for t in api.tools:
            self.registry.register(t)
            status.tools.append(t.name)
        self.services += api.services
        status.services = [s.name for s in api.services]
        for kind, fn in api.hooks:
            getattr(self.hooks, kind).append(_guarded(kind, fn, status, self))
            status.hooks.append(kind)
        manifest, folder = status.candidate.manifest, status.candidate.folder
        if manifest is not None and folder is not None:
            for rel in manifest.skills:
                skills = (folder / rel).resolve()
                if skills.is_relative_to(folder.resolve()) and skills.is_dir():
                    self.skill_dirs.append((status.id, skills))

    def disable(self, status: PluginStatus, reason: str) -> None:
        """Take a loaded plugin out: its tools leave the registry, its hooks go quiet."""
        if status.state == "failed":
            return
        status.state, status.reason = "failed", reason
        for name in status.tools:
            _drop_tool(self.registry, name)
        log.warning("plugin %s disabled: %s", status.id, reason)

    def status(self, plugin_id: str) -> PluginStatus | None:
        return next((s for s in self.statuses if s.id == plugin_id), None)

    # -- services ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Start every service in registration order; a failure disables its plugin."""
        for service in self.services:
            status = self.status(service.plugin_id)
            if status is None or not status.active:
                continue
            try:
                await _call(service.start)
            except Exception as err:  # noqa: BLE001 - isolate the plugin, keep the runtime
                await self._stop_plugin(service.plugin_id)
                self.disable(status, f"service {service.name} failed to start: {_describe(err)}")
                continue
            self._started.append(service)

    async def stop(self) -> None:
        """Stop every started service, last started first; failures are recorded."""
        while self._started:
            service = self._started.pop()
            await self._stop_one(service)

    async def _stop_plugin(self, plugin_id: str) -> None:
        for service in [s for s in reversed(self._started) if s.plugin_id == plugin_id]:
            self._started.remove(service)
            await self._stop_one(service)

    async def _stop_one(self, service: Service) -> None:
        try:
            await _call(service.stop)
        except Exception as err:  # noqa: BLE001 - one stop failing must not skip the others
            status = self.status(service.plugin_id)
            if status is not None:
                self.disable(status, f"service {service.name} failed to stop: {_describe(err)}")

    async def __aenter__(self) -> PluginHost:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class _PluginFailure(Exception):
    """A plugin broke a loading rule; the message is the whole reason."""


def _describe(err: BaseException) -> str:
    if isinstance(err, _PluginFailure):
        return str(err)
    text = getattr(err, "message", None) or str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


async def _call(fn: Callable[[], Any] | None) -> None:
    if fn is None:
        return
    async with asyncio.timeout(SERVICE_TIMEOUT_S):
        out = fn()
        if inspect.isawaitable(out):
            await out


def _guarded(kind: str, fn: Callable[..., Any], status: PluginStatus, host: PluginHost) -> Any:
    """The plugin's hook, silent once the plugin is out, and taking it out when it raises
    (``EndRun`` passes: ending a run is what hooks may do)."""

    def failed(err: Exception) -> None:
        host.disable(status, f"{kind} hook raised {_describe(err)}")

    if kind == "request_view":
        return _guarded_view(fn, status, failed)
    if kind == "completion_gate":
        return _guarded_gate(fn, status, failed)

    async def observer(state: RunState, *rest: list[ToolCallRecord]) -> None:
        if not status.active:
            return
        try:
            out = fn(state, *rest)
            if inspect.isawaitable(out):
                await out
        except EndRun:
            raise
        except Exception as err:  # noqa: BLE001
            failed(err)

    return observer


def _guarded_view(
    fn: Callable[..., Any], status: PluginStatus, failed: Callable[[Exception], None]
) -> Callable[[RunState, Sequence[Message]], Sequence[Message]]:
    def view(state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        if not status.active:
            return messages
        try:
            return fn(state, messages)  # type: ignore[no-any-return]
        except EndRun:
            raise
        except Exception as err:  # noqa: BLE001
            failed(err)
            return messages

    return view


def _guarded_gate(
    fn: Callable[..., Any], status: PluginStatus, failed: Callable[[Exception], None]
) -> Callable[[RunState], str | None]:
    def gate(state: RunState) -> str | None:
        if not status.active:
            return None
        try:
            return fn(state)  # type: ignore[no-any-return]
        except EndRun:
            raise
        except Exception as err:  # noqa: BLE001
            failed(err)
            return None

    return gate


def load_plugins(
    candidates: Iterable[PluginCandidate], state: PluginState, registry: ToolRegistry
) -> PluginHost:
    """Load every enabled candidate, in order, adding their tools to ``registry`` (in place:
    a subclass such as the browser registry keeps its own ``bind``)."""
    host = PluginHost(registry)
    for candidate in candidates:
        host.load(candidate, state)
    return host
