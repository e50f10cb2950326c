"""Subscriptions: an event on the bus starts a notification or an agent run.

``{events: [chronos.finished], source: hook:github, notify: team}`` sends every finished run of
that hook to the ``team`` target; ``task:`` instead starts a run whose task is the template
filled from the event (as delimited data). Runs started by a subscription never start
further subscription runs (no event loops between runs).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xclaw.chronos.notify import Notice, Notifier
from xclaw.chronos.runner import RunRequest
from xclaw.chronos.template import render, render_task
from xclaw.config import ChronosSubscriptionConfig
from xclaw.core.errors import ConfigError
from xclaw.core.events import EVENT_TYPES, Event

__all__ = ["Subscriptions"]

_SUB_PREFIX = "sub:"
Submit = Callable[[RunRequest, str], object]


class Subscriptions:
    def __init__(
        self,
        subs: list[ChronosSubscriptionConfig],
        notifier: Notifier,
        submit: Submit,
        directory: Path,
    ) -> None:
        for i, sub in enumerate(subs):
            unknown = [t for t in sub.events if t not in EVENT_TYPES]
            if unknown or (sub.notify is None) == (sub.task is None):
                raise ConfigError(
                    f"chronos.subscriptions[{i}] is invalid: "
                    + (f"unknown events {unknown}" if unknown else "give notify or task"),
                    code="CONFIG_INVALID",
                    hint="Use event types such as chronos.finished, chronos.failed, "
                    "webhook.received, approval.denied; and exactly one of notify: / task:.",
                )
            if sub.notify is not None and sub.notify not in notifier.targets:
                raise ConfigError(
                    f"chronos.subscriptions[{i}] notifies {sub.notify!r}, which is not a target.",
                    code="CONFIG_INVALID",
                    hint="Define it under chronos.targets.",
                )
        self.subs = subs
        self.notifier = notifier
        self.submit = submit
        self.directory = directory
        self._pending: set[asyncio.Task[Any]] = set()

    def on_event(self, event: Event) -> None:
        source = str(event.payload.get("source", ""))
        for i, sub in enumerate(self.subs):
            if event.type not in sub.events or (sub.source is not None and sub.source != source):
                continue
            context = {"event": {"type": event.type, "session_id": event.session_id}}
            context["event"].update(event.payload)
            if sub.notify is not None:
                self._notify(i, sub, event, context, source)
            elif sub.task is not None and not source.startswith(_SUB_PREFIX):
                self._run(i, sub, sub.task, context)

    def _notify(
        self,
        index: int,
        sub: ChronosSubscriptionConfig,
        event: Event,
        context: dict[str, Any],
        source: str,
    ) -> None:
        assert sub.notify is not None
        if event.type in ("notify.sent", "notify.failed") and source.startswith(_SUB_PREFIX):
            return  # a notification about a notification would chase its own tail
        failed = event.type in ("chronos.failed", "notify.failed", "approval.denied") or (
            event.payload.get("status") == "failed"
        )
        notice = Notice(
            title=f"xclaw {event.type} {source}".strip(),
            message=render(sub.message, context),
            level="WARNING" if failed else "INFO",
            source=f"{_SUB_PREFIX}{index}",
            session_id=event.session_id,
        )
        task = asyncio.get_running_loop().create_task(self.notifier.notify(sub.notify, notice))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _run(self, index: int, sub: ChronosSubscriptionConfig, task: str, context: Any) -> None:
        job_id = f"{_SUB_PREFIX}{index}"
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        request = RunRequest(
            job_id,
            f"event-{index}-{stamp}-{secrets.token_hex(3)}",
            render_task(task, context),
            self.directory,
            sub.model,
            sub.max_steps,
        )
        self.submit(request, "event")

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait for notifications still being sent (a stop); after ``timeout_s`` they are
        cancelled (a notification in its backoff would otherwise hold the stop)."""
        if not self._pending:
            return
        pending = set(self._pending)
        _, late = await asyncio.wait(pending, timeout=timeout_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
