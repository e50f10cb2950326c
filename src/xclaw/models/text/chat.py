"""``ChatTextTransport``: any API model as a text transport for the XML protocol.

The blueprint's "an API model without native tools becomes a model through
``TextProtocolModel(transport, protocol)``": this transport keeps the conversation as plain
chat messages (user text, assistant text) and sends all of it to the provider's adapter with
no tools, so the model answers in text and the protocol parses it.

    model = TextProtocolModel(ChatTextTransport(adapter), name="deepseek:deepseek-chat (xml)")

A message that opens with ``<agent_protocol>`` restates everything (the protocol, the task and,
after a resume, the steps so far), so it starts the chat afresh; so does
``start_conversation()``, which ``TextProtocolModel`` calls when the chat grew too long. A send
that fails leaves the chat as it was, so a retry sends the same messages again. The usage of
the last reply is kept in ``last_usage`` for the run's token counts.
"""

from __future__ import annotations

import asyncio

from xclaw.core.messages import Message, TextPart
from xclaw.core.model import Model, ModelRequest, TextDelta, Usage
from xclaw.models.text.protocol_render import PROTOCOL_OPEN

__all__ = ["ChatTextTransport"]


class ChatTextTransport:
    """Sends text to ``model`` as chat messages and returns its whole text reply."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.history: list[Message] = []
        self.last_usage: Usage | None = None
        self._lock = asyncio.Lock()

    async def send(self, text: str) -> str:
        async with self._lock:  # a chat takes one message at a time
            if text.startswith(PROTOCOL_OPEN):
                self.history.clear()
            asked = [*self.history, Message.user(text)]
            chunks: list[str] = []
            usage: Usage | None = None
            async for ev in self.model.respond(ModelRequest(asked, ())):
                if isinstance(ev, TextDelta):
                    chunks.append(ev.text)
                elif isinstance(ev, Usage):
                    usage = ev
            reply = "".join(chunks)
            self.history = [*asked, Message("assistant", (TextPart(reply),))]
            self.last_usage = usage
            return reply

    async def start_conversation(self) -> None:
        self.history.clear()

    async def aclose(self) -> None:
        await self.model.aclose()
