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
    """What is known about the model a run normally talks to (a chain's first)."""
    return _info(primary(model))


def window_info(model: Model) -> ModelInfo:
    """The model whose context window bounds every request to ``model``.

    A failover chain is budgeted to the smallest known window of its models: the budget
    fits the conversation before the request is sent, and a failover happens inside the
    send, so a request fitted to a larger first model would overflow a smaller backup just
    when it is needed. Models without a known profile do not count; when none is known, the
    first model's info (no profile: no budget)."""
    if not isinstance(model, FallbackModel) or len(model.models) == 1:
        return model_info(model)
    infos = [_info(innermost(m)) for m in model.models]
    known = [i for i in infos if i.profile is not None]
    if not known:
        return infos[0]
    return min(known, key=lambda i: i.profile.context_window if i.profile else 0)


def _info(model: Model) -> ModelInfo:
    preset = getattr(model, "preset", None)
    name = str(getattr(model, "model", model.name))
    if not isinstance(preset, Preset):
        return ModelInfo(model.name, None, None, None)
    price_in, price_out = preset.prices(name)
    return ModelInfo(model.name, preset.profile(name), price_in, price_out)
