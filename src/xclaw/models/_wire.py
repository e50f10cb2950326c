"""What every wire adapter shares: its identity, capability profile and streaming flag."""

from __future__ import annotations

from typing import Any

from xclaw.core.model import Model
from xclaw.models.presets import Capabilities, Preset


class WireModel(Model):
    """Base of the OpenAI Chat, OpenAI Responses and Anthropic adapters.

    Subclasses build ``self._client`` (an SDK client with ``max_retries=0``: retries and
    failover are ours) and answer ``respond``.
    """

    _client: Any

    def __init__(
        self, model: str, preset: Preset | None, *, default_label: str, stream: bool
    ) -> None:
        self.model = model
        self.preset = preset
        # Without a preset nothing is known about the model, so nothing is held back.
        self.profile = preset.profile(model) if preset else Capabilities(vision=True)
        self.label = preset.name if preset else default_label  # names it in errors
        self.name = f"{self.label}:{model}"
        self.stream = stream

    @property
    def base_url(self) -> str:
        """Where the client sends requests (a probe's cache key)."""
        return str(self._client.base_url).rstrip("/")

    @property
    def extra_headers(self) -> dict[str, str] | None:
        return dict(self.preset.headers) if self.preset and self.preset.headers else None

    async def aclose(self) -> None:
        await self._client.close()
