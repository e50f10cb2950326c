"""Observing the agents a factory makes (the gateway makes one per session)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from xclaw.core.events import EventBus
from xclaw.core.model import Model
from xclaw.core.tooling import Approver


class Observed(Protocol):
    """What tracing and metrics need of an agent: its event bus and its model."""

    @property
    def bus(self) -> EventBus: ...
    @property
    def model(self) -> Model: ...


A = TypeVar("A", bound=Observed)
Origin = TypeVar("Origin")
Attach = Callable[[Observed], object]


def observing(
    factory: Callable[[EventBus, Approver, Origin], A], *attach: Attach
) -> Callable[[EventBus, Approver, Origin], A]:
    """``factory`` whose every agent is handed to each ``attach`` (``Tracing.attach``,
    ``RunMetrics.attach``) before it runs. (``Origin``: whatever else the factory takes, the
    gateway's ``SessionOrigin``.)"""

    def make(bus: EventBus, approver: Approver, origin: Origin) -> A:
        agent = factory(bus, approver, origin)
        for fn in attach:
            fn(agent)
        return agent

    return make
