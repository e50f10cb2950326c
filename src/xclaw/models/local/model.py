"""``LocalModel``: a GGUF file served by llama.cpp on loopback, spoken to as the OpenAI Chat
adapter it is.

It *is* an ``OpenAIChatModel`` (same wire code, same errors, and the model setup dresses it
like any API model: protocol, repair, sampling, compact tools), whose server starts on first
use. Resolving ``local:...`` checks the file and the runtime and starts nothing; the first
``respond`` gets a server from the process's ``ServerPool`` (load progress on stderr) and
points the client at it; ``aclose`` gives the server back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from xclaw.core.extras import require
from xclaw.core.model import ModelEvent, ModelRequest
from xclaw.models.local.catalog import LocalTarget, local_preset, resolve_target
from xclaw.models.local.progress import StderrLoadReporter
from xclaw.models.local.server import LlamaServer, ServerPool, ServerSettings, default_pool
from xclaw.models.openai_chat import OpenAIChatModel

__all__ = ["LocalModel", "local_model"]

# Where the client points until the server is up: a stable value, so what keys on the base
# URL before the first request (the protocol probe's cache) keys on the model, not a port.
UNSTARTED_URL = "http://127.0.0.1:0/v1"


class LocalModel(OpenAIChatModel):
    """See the module docstring."""

    def __init__(
        self,
        target: LocalTarget,
        *,
        stream: bool = True,
        timeout_s: float = 600.0,
        pool: ServerPool | None = None,
        settings: ServerSettings | None = None,
    ) -> None:
        super().__init__(
            target.name,
            base_url=UNSTARTED_URL,
            api_key=None,
            preset=local_preset(target),
            stream=stream,
            timeout_s=timeout_s,
        )
        self.target = target
        self.server_settings = settings or ServerSettings(
            target.path, n_ctx=target.context_window, max_tokens=target.max_output_tokens
        )
        self._pool = pool
        self._server: LlamaServer | None = None

    @property
    def server(self) -> LlamaServer | None:
        """The server this model holds, once it has been asked something."""
        return self._server

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await self._connect()
        async for event in super().respond(request):
            yield event

    async def _connect(self) -> None:
        if self._server is not None:
            return
        pool = self._pool or default_pool()
        server = await pool.acquire(self.server_settings, StderrLoadReporter(self.model))
        self._server = server
        self._client.base_url = f"{server.base_url}/v1"

    async def aclose(self) -> None:
        server, self._server = self._server, None
        try:
            await super().aclose()
        finally:
            if server is not None:
                (self._pool or default_pool()).release(server)


def local_model(rest: str, *, stream: bool = True, timeout_s: float = 600.0) -> LocalModel:
    """The model for ``local:REST``: checks the file and that ``xllamacpp`` is installed."""
    target = resolve_target(rest)
    require("local", "local models (--model local:..., llama.cpp's xllamacpp wheel)")
    return LocalModel(target, stream=stream, timeout_s=timeout_s)
