"""``FallbackModel``: retries with backoff, then the next model in a chain.

Per model, ``ModelUnavailable`` (429, 5xx, timeouts, dropped connections) is retried up to
``retries`` times with capped exponential backoff and jitter. A server's ``retry-after`` is
honoured when it fits under ``max_delay_s``; a longer one means "not soon", so the chain fails
over at once instead of sleeping. ``ModelRequestRejected`` fails over without retrying: the
same request will not get better, but another provider may well accept it (a capability or a
key difference).

A stream is only ever retried or failed over *before* it has yielded anything: once deltas
reached the caller, replaying them from another model would show the user two different
beginnings. A failure after the first event is raised as is, so the loop fails the turn.

Each failover is recorded in ``failovers`` and passed to ``on_event`` as
``{"type": "model.failover", "from", "to", "reason", "code"}`` (retries likewise as
``"model.retry"``). When every model fails, one error lists each model's cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from xclaw.core.errors import ModelError, ModelRequestRejected, ModelUnavailable
from xclaw.core.model import Model, ModelEvent, ModelRequest
from xclaw.models._http import backoff_delay

__all__ = ["FallbackModel"]

OnEvent = Callable[[dict[str, Any]], None]


class FallbackModel(Model):
    """A chain of models answering as one."""

    def __init__(
        self,
        models: Sequence[Model],
        *,
        retries: int = 2,
        base_delay_s: float = 0.5,
        max_delay_s: float = 8.0,
        jitter: bool = True,
        on_event: OnEvent | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not models:
            raise ValueError("FallbackModel needs at least one model")
        self.models = list(models)
        self.retries = retries
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.jitter = jitter
        self.on_event = on_event
        self._sleep = sleep
        self.name = ",".join(m.name for m in self.models)
        self.failovers: list[dict[str, Any]] = []
        self.retried: list[dict[str, Any]] = []

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        causes: list[tuple[Model, ModelError]] = []
        for position, model in enumerate(self.models):
            attempt = 0
            while True:
                started = False
                try:
                    async for event in model.respond(request):
                        started = True
                        yield event
                    return
                except (ModelUnavailable, ModelRequestRejected) as err:
                    if started:
                        raise
                    delay = self._retry_delay(err, attempt)
                    if delay is None:
                        causes.append((model, err))
                        break
                    self._record(
                        self.retried,
                        "model.retry",
                        model=model.name,
                        attempt=attempt + 1,
                        delay_s=round(delay, 3),
                        reason=err.message,
                        code=err.code,
                    )
                    await self._sleep(delay)
                    attempt += 1
            if position + 1 < len(self.models):
                self._failover(model, self.models[position + 1], causes[-1][1])
        raise _all_failed(causes)

    def _failover(self, failed: Model, following: Model, cause: ModelError) -> None:
        fields = {"from": failed.name, "to": following.name}
        self._record(
            self.failovers, "model.failover", **fields, reason=cause.message, code=cause.code
        )

    def _retry_delay(self, err: ModelError, attempt: int) -> float | None:
        """Seconds to wait before retrying ``err``, or None to move on."""
        if not isinstance(err, ModelUnavailable) or attempt >= self.retries:
            return None
        delay = backoff_delay(
            attempt,
            base_delay_s=self.base_delay_s,
            max_delay_s=self.max_delay_s,
            jitter=self.jitter,
        )
        if err.retry_after_s is not None:
            if err.retry_after_s > self.max_delay_s:
                return None
            delay = max(delay, err.retry_after_s)
        return delay

    def _record(self, log: list[dict[str, Any]], kind: str, **fields: Any) -> None:
        record = {"type": kind, **fields}
        log.append(record)
        if self.on_event is not None:
            self.on_event(record)

    async def aclose(self) -> None:
        for model in self.models:
            await model.aclose()


def _all_failed(causes: list[tuple[Model, ModelError]]) -> ModelError:
    """One model: its own error, code and hint intact. Several: one error naming each cause;
    unavailable if any cause was, since then waiting may help."""
    if len(causes) == 1:
        return causes[0][1]
    listing = "; ".join(f"{model.name}: [{err.code}] {err.message}" for model, err in causes)
    message = f"every model in the chain failed — {listing}"
    hint = "Check the keys and base URLs (xclaw doctor), or retry later."
    if any(isinstance(err, ModelUnavailable) for _, err in causes):
        return ModelUnavailable(message, code="MODEL_CHAIN_FAILED", hint=hint)
    return ModelRequestRejected(message, code="MODEL_CHAIN_FAILED", hint=hint)
