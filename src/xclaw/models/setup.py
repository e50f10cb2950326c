"""How a resolved API model is spoken to: its protocol, sampling settings and tool schemas.

``setup_model`` dresses each model of a chain once, in ``resolve_chain`` (the one model
factory every face uses):

    native  the API's tool channel; a call written as JSON text is repaired (``models.repair``)
    xml     the XML text protocol over plain chat messages: ``TextProtocolModel`` on a
            ``ChatTextTransport`` (``models.text``), for models whose tool channel fails
    auto    one probe (``models.probe``), cached per provider, model and base URL; then
            native or xml

Each field comes from the first of these that sets it: ``--protocol`` (the protocol only),
``models:`` in xclaw.yaml (patterns over ``provider:model``, the longest match first), the
preset's per-model override, the preset. With none: native when the profile says the model
has tools, else xml, and the server's own sampling defaults. Sampling settings
(temperature, top_p, seed, tool_choice) travel in ``ModelRequest.settings``
(``WithSettings``), and a model whose window is small gets compact tool schemas
(``CompactTools``, ``models.compact``). What is dressed is any model that carries a
``preset``, its ``model`` name and a ``profile`` (the wire adapters, local models); others
(scripted, chatgpt-web, test fakes) are returned unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from xclaw.config import ModelSettings, ProtocolName
from xclaw.core.model import Model, ModelEvent, ModelRequest
from xclaw.models.compact import is_small_window
from xclaw.models.presets import Capabilities, Preset
from xclaw.models.probe import ProbeCache, ProbeKey, detect_protocol
from xclaw.models.repair import RepairToolCalls
from xclaw.models.text.chat import ChatTextTransport
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.wrap import CompactTools, WithSettings, innermost

__all__ = ["AutoProtocol", "Plan", "plan_for", "settings_for", "setup_model", "xml_model"]

CHARS_PER_WINDOW_TOKEN = 2.5  # an XML chat starts afresh at about 60% of the window
MIN_CONVERSATION_CHARS = 10_000


def settings_for(
    spec: str, table: Mapping[str, ModelSettings], below: ModelSettings | None = None
) -> ModelSettings:
    """The settings for ``spec`` from ``models:`` (longest matching pattern wins, field by
    field) over ``below`` (the preset's)."""
    merged: dict[str, Any] = below.model_dump(exclude_none=True) if below else {}
    hits = sorted((len(p), p) for p in table if fnmatchcase(spec, p))
    for _, pattern in hits:
        merged.update(table[pattern].model_dump(exclude_none=True))
    return ModelSettings.model_validate(merged)


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``setup_model`` decided for one model (``xclaw models probe`` shows it)."""

    protocol: ProtocolName
    settings: ModelSettings
    window: int
    key: ProbeKey  # where an auto probe's answer is cached


def plan_for(
    model: Model, spec: str, table: Mapping[str, ModelSettings], protocol: ProtocolName | None
) -> Plan | None:
    """The protocol and settings for ``model``; None for a model that is not an API model."""
    adapter = innermost(model)
    preset = getattr(adapter, "preset", None)
    profile = getattr(adapter, "profile", None)
    name = getattr(adapter, "model", None)
    if not (isinstance(preset, Preset) and isinstance(profile, Capabilities)):
        return None
    if not isinstance(name, str):
        return None
    settings = settings_for(spec, table, preset.settings(name))
    chosen = protocol or settings.protocol or ("native" if profile.tools else "xml")
    url = getattr(adapter, "base_url", "")  # local models start on a new port each run
    key = ProbeKey(preset.name, name, url if isinstance(url, str) else "")
    return Plan(chosen, settings, profile.context_window, key)


def setup_model(
    model: Model,
    spec: str,
    table: Mapping[str, ModelSettings],
    *,
    protocol: ProtocolName | None = None,
    cache: ProbeCache | None = None,
) -> Model:
    """``model`` dressed for its protocol and settings (see the module docstring)."""
    plan = plan_for(model, spec, table, protocol)
    if plan is None:
        return model
    sampling = plan.settings.request_settings()
    base = WithSettings(model, sampling) if sampling else model
    native = RepairToolCalls(base)
    dressed: Model
    if plan.protocol == "native":
        dressed = native
    elif plan.protocol == "xml":
        dressed = xml_model(base, plan.window)
    else:
        xml = xml_model(base, plan.window)
        dressed = AutoProtocol(native, xml, base, plan.key, cache or ProbeCache())
    return CompactTools(dressed) if is_small_window(plan.window) else dressed


def xml_model(base: Model, window: int) -> TextProtocolModel:
    chars = max(MIN_CONVERSATION_CHARS, int(window * CHARS_PER_WINDOW_TOKEN))
    return TextProtocolModel(
        ChatTextTransport(base), name=f"{base.name} (xml)", max_conversation_chars=chars
    )


class AutoProtocol(Model):
    """Native or xml, as the cached probe says; the first request probes when nothing is
    cached yet. ``inner`` is the native path (what ``innermost`` follows)."""

    def __init__(
        self, native: Model, xml: Model, target: Model, key: ProbeKey, cache: ProbeCache
    ) -> None:
        self.inner = native
        self.xml = xml
        self.target = target  # what the probe asks: the adapter with the model's settings
        self.key = key
        self.cache = cache
        self.name = target.name
        self.detected: str | None = None
        self.chosen: Model | None = None
        self._lock = asyncio.Lock()

    async def choose(self) -> Model:
        async with self._lock:
            if self.chosen is None:
                entry = self.cache.get(self.key)
                if entry is None:
                    detected, said = await detect_protocol(self.target)
                    entry = self.cache.put(self.key, detected, model=self.name, **said)
                self.detected = str(entry["protocol"])
                self.chosen = self.inner if self.detected == "native" else self.xml
            return self.chosen

    @property
    def models(self) -> list[Model]:
        """The path it answers on; both until the probe chose (a chain, to the bridge)."""
        return [self.chosen] if self.chosen is not None else [self.inner, self.xml]

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        chosen = await self.choose()
        async for ev in chosen.respond(request):
            yield ev

    async def aclose(self) -> None:
        await self.inner.aclose()  # both paths end in the same adapter
