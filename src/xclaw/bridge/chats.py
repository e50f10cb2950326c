"""Which far-side chat answers which client: conversation identity from the request alone.

An OpenAI client sends its whole history every time and carries no conversation id, while a
model such as the ChatGPT page holds one chat on its side. The bridge keys each conversation
by what the client will send back: its tools plus every message up to and including the
answer it was given (``conversation_key``). A request whose history up to its last assistant
message has a known key continues that conversation: the chat it lives in is reopened if
another one is showing. Any other request (a first message, a rewritten or branched history,
a changed tool list) starts a new chat, whose opening message restates the protocol, the
client's tools and a summary of the steps so far. Two clients never share a chat; when two
conversations reach the very same key they are told apart by nothing, so both move to new
chats instead of risking one's message landing in the other's.

Models take part through ``ChatHolder``, found through wrappers (a fallback chain) by
``ModelChain``, both structural: the bridge never asks for a concrete model class.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from xclaw.core.errors import XclawError
from xclaw.core.messages import Message
from xclaw.core.model import Model, ModelRequest
from xclaw.core.tooling import ToolSpec
from xclaw.redact import redact

__all__ = ["ChatBook", "ChatHolder", "ModelChain", "chat_holders", "conversation_key"]

log = logging.getLogger("xclaw.bridge")

# Conversations remembered per model; a client gone for longer starts a new chat.
MAX_CONVERSATIONS = 256


@runtime_checkable
class ChatHolder(Protocol):
    """A model whose far side keeps one chat at a time (``TextProtocolModel``)."""

    def current_chat(self) -> Any:
        """What ``switch_chat`` needs to come back to the open chat; None if it cannot."""
        ...

    async def switch_chat(self, chat: Any) -> None:
        """Send the next message to ``chat`` (from ``current_chat``), or with None to a new
        chat that opens with the protocol, the tools and a summary of earlier steps."""
        ...


@runtime_checkable
class ModelChain(Protocol):
    """A model answering through others (``FallbackModel``)."""

    @property
    def models(self) -> Sequence[Model]: ...


def chat_holders(model: Model) -> list[ChatHolder]:
    """The chat-holding models in ``model``, itself included, through any chain."""
    if isinstance(model, ChatHolder):
        return [model]
    if isinstance(model, ModelChain):
        return [holder for inner in model.models for holder in chat_holders(inner)]
    return []


def conversation_key(tools: Sequence[ToolSpec], messages: Sequence[Message]) -> str:
    """What identifies a conversation as a client sends it back (tools, text, calls, results)."""
    shape = {
        "tools": [[t.name, t.description, t.parameters] for t in tools],
        "messages": [
            [
                m.role,
                m.text,
                [[c.call_id, c.name, c.arguments] for c in m.tool_calls],
                [[r.call_id, r.result.message] for r in m.tool_results],
            ]
            for m in messages
        ],
    }
    encoded = json.dumps(shape, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def _history_key(request: ModelRequest) -> str | None:
    """The key of the conversation ``request`` continues; None for a first message."""
    messages = request.messages
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return conversation_key(request.tools, messages[: last + 1]) if last >= 0 else None


_SHARED = ("shared",)  # two conversations ended at the same key: neither may continue there


class ChatBook:
    """For one served model: which chats hold which conversations (see the module)."""

    def __init__(self, holders: Sequence[ChatHolder], capacity: int = MAX_CONVERSATIONS) -> None:
        self.holders = list(holders)
        self.capacity = capacity
        self._chats: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._showing: str | None = None  # the conversation the holders' open chats hold
        self.chats_started = 0
        self.chats_reopened = 0

    async def prepare(self, request: ModelRequest) -> None:
        """Before the model answers ``request``: put its conversation's chat in front."""
        key = _history_key(request)
        chats = self._chats.pop(key, None) if key is not None else None
        if key is not None and key == self._showing and chats is not None and chats != _SHARED:
            return  # the open chat holds this conversation: only the new input goes out
        self._showing = None
        known = chats if chats is not None and chats != _SHARED else (None,) * len(self.holders)
        for holder, chat in zip(self.holders, known, strict=True):
            await self._switch(holder, chat)

    def answered(self, request: ModelRequest, answer: Message | None) -> None:
        """After it: the conversation now ends with ``answer`` (None: the turn failed, so
        what its chat holds is unknown and nothing may continue there)."""
        self._showing = None
        if answer is None:
            return
        key = conversation_key(request.tools, [*request.messages, answer])
        if key in self._chats:
            self._chats[key] = _SHARED
            return
        self._chats[key] = tuple(holder.current_chat() for holder in self.holders)
        self._showing = key
        while len(self._chats) > self.capacity:
            self._chats.popitem(last=False)

    async def _switch(self, holder: ChatHolder, chat: Any) -> None:
        if chat is not None:
            try:
                await holder.switch_chat(chat)
                self.chats_reopened += 1
                return
            except XclawError as err:  # deleted or unreachable: a new chat carries the steps
                log.warning(
                    "bridge: could not reopen a chat (%s); starting a new one", redact(err.code)
                )
        await holder.switch_chat(None)
        self.chats_started += 1
