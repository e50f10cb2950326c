"""One model as the bridge serves it: its queue, protocol resends and conversation tracking.

**Serialisation.** A browser drives one chat at a time, so a model that is browser-backed (a
``TextProtocolModel`` whose transport says ``browser_backed = True``), that holds a chat
(``chats.ChatHolder``), or that asks for it with ``serialize = True``, answers one request at
a time: the others wait in a FIFO queue of bounded length (``SerialGate``), and a request
that finds it full is refused with 429 and a ``Retry-After`` estimated from recent answer
times. Other models answer concurrently.

**Protocol resends.** A reply that breaks the tool protocol (``ProtocolViolation``, mostly
from text-protocol models) is answered with the protocol's feedback and asked again, as the
agent loop does, up to ``MAX_RESENDS`` times, and only while nothing has reached the client.

**Conversations.** Each HTTP request carries the whole conversation, but a chat-holding model
keeps one chat per conversation on its side; ``chats.ChatBook`` puts the right one in front
before each answer (a continuation goes on in its chat, anything else gets a new chat).

**Stop sequences** are applied here, to every model (``stops.StopCut``), so the conversation
remembered is the answer as the client received it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

from xclaw.bridge.chats import ChatBook, chat_holders
from xclaw.bridge.errors import BridgeError
from xclaw.bridge.params import honoured_settings
from xclaw.bridge.reply import TokenCount, TurnSummary, token_count
from xclaw.bridge.stops import StopCut
from xclaw.core.errors import ProtocolViolation
from xclaw.core.limits import Limits
from xclaw.core.messages import Message, TextPart
from xclaw.core.model import Model, ModelEvent, ModelRequest

__all__ = ["MAX_RESENDS", "SerialGate", "ServedModel", "needs_serial"]

MAX_RESENDS = Limits().max_protocol_errors


def needs_serial(model: Model) -> bool:
    """Browser-backed or ``serialize = True`` (also inside a fallback chain's ``models``)."""
    if getattr(model, "serialize", False) is True:
        return True
    transport = getattr(model, "transport", None)
    if getattr(transport, "browser_backed", False) is True:
        return True
    inner = getattr(model, "models", None)
    return isinstance(inner, list) and any(isinstance(m, Model) and needs_serial(m) for m in inner)


class SerialGate:
    """One request at a time; at most ``capacity`` more wait, in arrival order."""

    def __init__(self, model_id: str, capacity: int) -> None:
        self.model_id = model_id
        self.capacity = capacity
        self.waiting = 0
        self._lock = asyncio.Lock()
        self._mean_s = 5.0  # a guess until the first answer was timed

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._lock.locked() and self.waiting >= self.capacity:
            raise self._full()
        self.waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        started = time.monotonic()
        try:
            yield
        finally:
            self._lock.release()
            self._mean_s = 0.7 * self._mean_s + 0.3 * (time.monotonic() - started)

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def _full(self) -> BridgeError:
        wait = max(1, math.ceil(self._mean_s * (self.waiting + 1)))
        return BridgeError(
            429,
            "BRIDGE_QUEUE_FULL",
            f"Model {self.model_id!r} answers one request at a time and {self.waiting} "
            "requests are already waiting.",
            hint=f"Retry in about {wait} s, or start the bridge with a longer --queue.",
            kind="rate_limit_error",
            headers={"Retry-After": str(wait)},
        )


class ServedModel:
    """A model under its public id: its gate (if serialised), the settings it honours, and
    which chat holds which conversation (for chat-holding models)."""

    def __init__(self, model_id: str, model: Model, *, queue: int) -> None:
        self.id = model_id
        self.model = model
        holders = chat_holders(model)
        self.chats = ChatBook(holders) if holders else None
        # One chat at a time: a chat-holding model is serialised even off a browser.
        serial = needs_serial(model) or self.chats is not None
        self.gate = SerialGate(model_id, queue) if serial else None

    @property
    def honoured(self) -> frozenset[str]:
        """The settings it keeps, asked each time: a wrapper may settle its path late (a
        protocol probe on the first request)."""
        return honoured_settings(self.model)

    @asynccontextmanager
    async def turn(
        self, request: ModelRequest, stop: Sequence[str] = ()
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        """Wait for a turn (serialised models), then yield the answer's events, cut at the
        first of ``stop``."""
        if self.gate is None:
            async with self._events_of(request, stop) as events:
                yield events
            return
        async with self.gate.slot(), self._events_of(request, stop) as events:
            yield events

    def tokens(self, turn: TurnSummary, request: ModelRequest) -> TokenCount:
        return token_count(turn, request, self.model.name)

    @asynccontextmanager
    async def _events_of(
        self, request: ModelRequest, stop: Sequence[str]
    ) -> AsyncIterator[AsyncIterator[ModelEvent]]:
        events = self._answer(request, StopCut(stop))
        try:
            yield events
        finally:
            await _close(events)

    async def _answer(self, request: ModelRequest, cut: StopCut) -> AsyncIterator[ModelEvent]:
        if self.chats is not None:
            await self.chats.prepare(request)
        summary = TurnSummary()
        completed = False
        try:
            async for event in _with_resends(self.model, request):
                for kept in cut.feed(event):
                    summary.add(kept)
                    yield kept
            for kept in cut.flush():
                summary.add(kept)
                yield kept
            completed = True
        finally:
            if self.chats is not None:  # the client sends back what it got: the cut answer
                self.chats.answered(request, summary.message() if completed else None)


async def _with_resends(model: Model, request: ModelRequest) -> AsyncIterator[ModelEvent]:
    messages = list(request.messages)
    for attempt in range(MAX_RESENDS + 1):
        emitted = False
        stream = model.respond(replace(request, messages=messages))
        try:
            async for event in stream:
                emitted = True
                yield event
            return
        except ProtocolViolation as err:
            if emitted or attempt == MAX_RESENDS:
                raise
            if err.reply_text:
                messages.append(Message("assistant", (TextPart(err.reply_text),)))
            messages.append(Message.user(err.feedback or str(err)))
        finally:
            await _close(stream)


async def _close(stream: AsyncIterator[ModelEvent]) -> None:
    """End a model's answer now (an HTTP stream, a browser wait), not when it is collected."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
