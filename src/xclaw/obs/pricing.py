"""Model prices for spans and metrics, learnt from the agents being observed (presets' data)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xclaw.core.model import Model
    from xclaw.models.info import ModelInfo


class PriceBook:
    """Model name (as the run reports it) -> its prices; unknown or unpriced: no cost."""

    def __init__(self) -> None:
        self._known: dict[str, ModelInfo] = {}
        self._lock = threading.Lock()

    def learn(self, model: Model) -> None:
        from xclaw.models.info import model_info

        info = model_info(model)
        with self._lock:
            self._known[model.name] = info

    def cost(self, name: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
        info = self._known.get(name)
        return info.cost(input_tokens, output_tokens) if info is not None else None
