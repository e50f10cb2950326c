"""Small model wrappers that compose (STYLE 4): each changes one thing about a request.

``ModelWrapper`` keeps the inner model's name, forwards ``restore`` and ``aclose``, and exposes
``inner`` so ``innermost`` (and ``models.info``) can reach the adapter with its preset. It is
also a chain of one (``models``), so what looks through fallback chains (the bridge's
settings and chats, serialisation) looks through it too:

    WithSettings(inner, {"temperature": 0.2})   sampling defaults under the request's own
    CompactTools(inner)                         shorter tool schemas for small windows
    RepairToolCalls(inner)                      see xclaw.models.repair
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from xclaw.core.messages import Message
from xclaw.core.model import Model, ModelEvent, ModelRequest
from xclaw.models.compact import compact_specs

__all__ = ["CompactTools", "ModelWrapper", "WithSettings", "innermost"]


class ModelWrapper(Model):
    """A model around ``inner``; subclasses override ``respond``."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name

    @property
    def models(self) -> list[Model]:
        return [self.inner]

    def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self.inner.respond(request)

    def restore(self, messages: Sequence[Message]) -> None:
        self.inner.restore(messages)

    async def aclose(self) -> None:
        await self.inner.aclose()


def innermost(model: Model) -> Model:
    """The model under every wrapper, including a text-protocol model's chat transport."""
    seen = 0
    while seen < 16:  # wrappers never nest this deep; stay total on a cycle
        seen += 1
        inner = getattr(model, "inner", None)
        if not isinstance(inner, Model):
            inner = getattr(getattr(model, "transport", None), "model", None)
        if not isinstance(inner, Model):
            return model
        model = inner
    return model


class WithSettings(ModelWrapper):
    """Sends ``settings`` (temperature, top_p, seed, tool_choice ...) with every request; a
    setting the request carries itself (the bridge's clients send theirs) wins."""

    def __init__(self, inner: Model, settings: Mapping[str, Any]) -> None:
        super().__init__(inner)
        self.settings = dict(settings)

    def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        merged = {**self.settings, **request.settings}
        return self.inner.respond(replace(request, settings=merged))


class CompactTools(ModelWrapper):
    """Tool schemas with short descriptions and no titles, for models with small windows
    (the names, types, enums, bounds and required fields stay exactly as they were)."""

    def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if not request.tools:
            return self.inner.respond(request)
        return self.inner.respond(replace(request, tools=compact_specs(request.tools)))
