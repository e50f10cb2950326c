"""``ChronosService``: the scheduler, webhooks, notifications and subscriptions of one
process, built from the ``chronos`` section of the configuration.

In ``xclaw serve`` its ``router`` is mounted on the gateway app; the router's lifespan
starts and stops the scheduler with the app. ``xclaw chronos run`` drives it alone.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
from fastapi import APIRouter, FastAPI

from xclaw.chronos.clock import Clock, SystemClock
from xclaw.chronos.engine import ChronosEngine, Job
from xclaw.chronos.notify import (
    ChannelTarget,
    DeadLetterLog,
    FeishuBotTarget,
    Notice,
    Notifier,
    NotifyError,
    StdoutTarget,
    Target,
    TextSender,
    WebhookTarget,
)
from xclaw.chronos.runner import AgentRunner, RunRequest
from xclaw.chronos.schedule import Schedule
from xclaw.chronos.store import ChronosStore
from xclaw.chronos.subscriptions import Subscriptions
from xclaw.chronos.template import render_task
from xclaw.chronos.webhooks import Delivery, HookSpec, webhook_router
from xclaw.config import ChronosConfig, ChronosTargetConfig, XclawConfig
from xclaw.core.errors import ConfigError
from xclaw.core.events import Event, EventBus
from xclaw.core.model import Model
from xclaw.core.sandbox import SandboxSource
from xclaw.dirs import data_dir
from xclaw.redact import register_secret
from xclaw.store.base import Store

__all__ = ["ChronosService", "ServiceOptions", "build_jobs", "dead_letter_path"]

ModelFactory = Callable[[str | None, Path], Model]


def dead_letter_path() -> Path:
    return data_dir() / "chronos" / "dead-letters.jsonl"


@dataclass
class ServiceOptions:
    """What a caller may swap: the clock, the model factory, where output goes (tests)."""

    clock: Clock = field(default_factory=SystemClock)
    model_for: ModelFactory | None = None
    channels: Mapping[str, TextSender] = field(default_factory=dict)
    dead_letters: Path | None = None
    stdout: TextIO | None = None
    sandbox: SandboxSource = None
    notify_sleep: Callable[[float], Any] | None = None
    protocol: str | None = None  # --protocol for every run's model (models.setup)


def build_jobs(cfg: ChronosConfig, root: Path) -> list[Job]:
    jobs: list[Job] = []
    seen: set[str] = set()
    for job in cfg.jobs:
        if job.id in seen:
            raise ConfigError(f"chronos job id {job.id!r} is used twice.", code="CONFIG_INVALID")
        seen.add(job.id)
        jobs.append(
            Job(
                job.id,
                Schedule.parse(job.schedule, job.timezone),
                job.task,
                _directory(job.directory, root),
                job.model,
                job.channel,
                job.enabled,
                job.max_steps,
                job.missed,
            )
        )
    return jobs


def _directory(raw: str | None, root: Path) -> Path:
    path = (root / Path(raw).expanduser()).resolve() if raw else root
    if not path.is_dir():
        raise ConfigError(f"chronos directory {path} does not exist.", code="CONFIG_INVALID")
    return path


def _secret(env: Mapping[str, str], name: str | None, what: str) -> str | None:
    if name is None:
        return None
    value = env.get(name, "")
    if not value:
        raise ConfigError(
            f"{what} needs the variable {name}, which is not set.",
            code="CHRONOS_SECRET_MISSING",
            hint=f"Set {name} in the environment or in the project's .env.",
        )
    register_secret(value)
    return value


class _MissingChannel(Target):
    def __init__(self, name: str, channel: str) -> None:
        self.name = name
        self.channel = channel

    async def send(self, notice: Notice) -> None:
        raise NotifyError(f"chat channel {self.channel} is not running here", retryable=False)


class ChronosService:
    def __init__(
        self,
        config: XclawConfig,
        root: Path,
        env: Mapping[str, str],
        *,
        store: Store,
        chronos_store: ChronosStore,
        options: ServiceOptions | None = None,
    ) -> None:
        opts = options or ServiceOptions()
        cfg = config.chronos
        self.config = cfg
        self.root = root
        self.clock = opts.clock
        self.bus = EventBus()
        self.http = httpx.AsyncClient(timeout=15.0)
        self.chronos_store = chronos_store
        self.jobs = build_jobs(cfg, root)
        targets = {
            name: self._target(name, t, env, opts) for name, t in sorted(cfg.targets.items())
        }
        named = [(f"job {j.id}", j.channel) for j in cfg.jobs]
        named += [(f"hook {n}", h.channel) for n, h in cfg.hooks.items()]
        for who, channel in named:
            if channel is not None and channel not in targets:
                raise ConfigError(
                    f"chronos {who} names the target {channel!r}, which is not defined.",
                    code="CONFIG_INVALID",
                    hint="Define it under chronos.targets.",
                )
        self.notifier = Notifier(
            targets,
            DeadLetterLog(opts.dead_letters or dead_letter_path()),
            attempts=cfg.notify_attempts,
            backoff_s=cfg.notify_backoff_s,
            bus=self.bus,
        )
        if opts.notify_sleep is not None:
            self.notifier.sleep = opts.notify_sleep
        self.runner = AgentRunner(
            store,
            self.notifier,
            opts.model_for or _model_factory(config, opts.protocol),
            self.bus,
            opts.sandbox,
            config,
        )
        self.engine = ChronosEngine(
            self.jobs, chronos_store, self.runner, clock=self.clock, bus=self.bus
        )
        self.hooks = {
            name: HookSpec(name, h.auth, _secret(env, h.secret_env, f"hook {name}") or "", h)
            for name, h in cfg.hooks.items()
        }
        self.subscriptions = Subscriptions(
            cfg.subscriptions, self.notifier, self.engine.submit, root
        )
        self.bus.subscribe(self.subscriptions.on_event)

    def _target(
        self, name: str, t: ChronosTargetConfig, env: Mapping[str, str], opts: ServiceOptions
    ) -> Target:
        what = f"notify target {name}"
        if t.type == "stdout":
            return StdoutTarget(name, opts.stdout)
        if t.type == "channel":
            if not t.channel or not t.peer:
                raise ConfigError(f"{what} needs channel: and peer:.", code="CONFIG_INVALID")
            adapter = opts.channels.get(t.channel)
            if adapter is None:
                return _MissingChannel(name, t.channel)
            return ChannelTarget(name, adapter, t.peer)
        url = _secret(env, t.url_env, what)
        if url is None:
            raise ConfigError(f"{what} needs url_env:.", code="CONFIG_INVALID")
        secret = _secret(env, t.secret_env, what)
        kind = FeishuBotTarget if t.type == "feishu" else WebhookTarget
        return kind(name, url, secret, self.http)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self.engine.start()

    async def stop(self) -> None:
        await self.engine.stop(self.config.stop_timeout_s)
        await self.subscriptions.drain(self.config.stop_timeout_s)
        await self.http.aclose()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    @property
    def router(self) -> APIRouter:
        """``POST /hooks/<name>``; mounting it also runs the scheduler with the app."""
        return webhook_router(
            self.hooks,
            self.chronos_store,
            self.handle_delivery,
            clock=self.clock,
            lifespan=self.lifespan,
        )

    # -- deliveries --------------------------------------------------------------------------
    def handle_delivery(self, hook: HookSpec, delivery: Delivery) -> str | None:
        if delivery.event == "ping":  # GitHub's hello when the hook is created: no run
            return None
        source = f"hook:{hook.name}"
        info = {"source": source, "delivery": delivery.delivery_id, "event": delivery.event}
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%SZ")
        session_id = f"hook-{hook.name}-{stamp}-{secrets.token_hex(3)}"
        self.bus.emit(Event("webhook.received", session_id, 0, info))
        context = {
            "payload": delivery.payload,
            "hook": {"name": hook.name, "event": delivery.event, "delivery": delivery.delivery_id},
        }
        cfg = hook.config
        request = RunRequest(
            source,
            session_id,
            render_task(cfg.task, context),
            _directory(cfg.directory, self.root),
            cfg.model,
            cfg.max_steps,
            cfg.channel,
        )
        self.engine.submit(request, source)
        return session_id


def _model_factory(config: XclawConfig, protocol: str | None = None) -> ModelFactory:
    from xclaw.models.resolve import MODEL_HELP, resolve_model

    def make(spec: str | None, directory: Path) -> Model:
        chosen = spec or config.model
        if not chosen:
            raise ConfigError(
                "No model is configured.", code="MODEL_NOT_CONFIGURED", hint=MODEL_HELP
            )
        return resolve_model(
            chosen, project=directory, protocol=protocol, model_settings=config.models
        )

    return make
