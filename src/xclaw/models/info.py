"""What is known about a resolved model: its capability profile and prices (from presets)."""

from __future__ import annotations

from dataclasses import dataclass

from xclaw.core.model import Model
from xclaw.models.fallback import FallbackModel
from xclaw.models.presets import Capabilities, Preset
from xclaw.models.wrap import innermost


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    profile: Capabilities | None
    price_input: float | None  # US dollars per million tokens
    price_output: float | None

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        if self.price_input is None or self.price_output is None:
            return None
        if input_tokens is None and output_tokens is None:
            return None
        return (
            (input_tokens or 0) * self.price_input + (output_tokens or 0) * self.price_output
        ) / 1_000_000


def primary(model: Model) -> Model:
    """The first model of a chain (the one a run normally talks to), under its wrappers
    (protocol, settings: ``models.setup``)."""
    return innermost(model.models[0] if isinstance(model, FallbackModel) else model)


def model_info(model: Model) -> ModelInfo:
    first = primary(model)
    preset = getattr(first, "preset", None)
    name = str(getattr(first, "model", first.name))
    if not isinstance(preset, Preset):
        return ModelInfo(first.name, None, None, None)
    price_in, price_out = preset.prices(name)
    return ModelInfo(first.name, preset.profile(name), price_in, price_out)
