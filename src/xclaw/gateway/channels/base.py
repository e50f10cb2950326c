"""Chat channels: one small interface between a chat platform and the gateway.

An adapter turns a peer's text into an ACP message on that peer's session and the session's
frames into platform messages: the final reply (split to the platform's size limit), errors,
and approval requests as a message the same peer answers with ``/approve ID``,
``/approve-task ID`` or ``/deny ID``; ``/stop`` cancels the running turn. Deltas are not
relayed: a chat platform shows the finished reply. Sessions are one per peer by default
(``dm_scope="per-peer"``) or one for every direct message (``"shared"``), as OpenClaw offers.

A group chat whose members share one session (a Feishu group in ``chat`` scope) passes the
member who wrote each message as ``sender``: the chat's messages then run one at a time in
the order they came, and an approval (or ``/stop``) is taken only from the member whose
message started the turn that asks. A turn no member here started (one the gateway resumed
after a restart, or one sent from the web UI) is answered where it came from.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import unicodedata
from abc import ABC, abstractmethod
from collections import deque
from typing import TYPE_CHECKING, Literal

from xclaw.core.errors import XclawError
from xclaw.core.tooling import Answer
from xclaw.gateway.acp import (
    AcpMessage,
    ApprovalRequestFrame,
    ErrorFrame,
    ReplyFrame,
    ServerFrame,
)

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

log = logging.getLogger(__name__)
DmScope = Literal["per-peer", "shared"]
_ANSWERS: dict[str, Answer] = {"/approve": "once", "/approve-task": "task", "/deny": "deny"}
_WAITING_MAX = 20  # messages of a shared group chat queued behind its running turn
_ASKED_MAX = 256  # open approval ids remembered per peer
_RECHECK_S = 0.5  # a shared chat blocked by a turn it did not start looks again this often
# characters that belong to the one before them: a cut before one splits what is shown as
# one symbol (an accent, an emoji's skin tone or variation, the joined parts of an emoji)
_JOINERS = {"\u200d", "\ufe0e", "\ufe0f", *map(chr, range(0x1F3FB, 0x1F400))}


class ChannelError(XclawError, RuntimeError):
    """A chat platform refused to start or to serve (bad credentials, a webhook conflict)."""

    code = "CHANNEL_ERROR"


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts its limits."""
    return len(text.encode("utf-16-le")) // 2


def _fits(text: str, start: int, limit: int, utf16: bool) -> int:
    """The end of the longest run of ``text`` from ``start`` that is within ``limit``."""
    if not utf16:
        return min(len(text), start + limit)
    units, end = 0, start
    while end < len(text):
        units += 2 if ord(text[end]) > 0xFFFF else 1
        if units > limit:
            break
        end += 1
    return end


def _joined(text: str, cut: int) -> bool:
    """A cut at ``cut`` would split one shown symbol."""
    after, before = text[cut], text[cut - 1]
    return after in _JOINERS or before == "\u200d" or unicodedata.combining(after) != 0


def split_text(text: str, limit: int, *, utf16: bool = False) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters (``utf16``: UTF-16 code units, as
    Telegram counts), cut at a line end when one is near, never inside a surrogate pair nor
    between a character and the mark or emoji part that goes with it."""
    pieces: list[str] = []
    start = 0
    while True:
        end = _fits(text, start, limit, utf16)
        if end >= len(text):
            break
        half = start + max((end - start) // 2, 1)
        cut = text.rfind("\n", half, end)
        if cut > 0:
            cut += 1
        else:
            cut = end
            floor = max(end - 32, start + 1)
            while cut > floor and _joined(text, cut):
                cut -= 1
            if _joined(text, cut):  # a run of joined marks longer than 32: cut anyway
                cut = end
        pieces.append(text[start:cut])
        start = cut
    if start < len(text) or not pieces:
        pieces.append(text[start:])
    return pieces


def render_frame(frame: ServerFrame) -> str | None:
    """What a chat peer is sent for a frame (None: nothing)."""
    match frame:
        case ReplyFrame():
            return frame.text or f"(the turn ended: {frame.status})"
        case ErrorFrame():
            return f"Error {frame.code}: {frame.message}"
        case ApprovalRequestFrame():
            task = f", /approve-task {frame.request_id}" if frame.grant_offered else ""
            return (
                f"Approval needed ({frame.risk}): {frame.summary}\n"
                f"Answer /approve {frame.request_id}{task} or /deny {frame.request_id}"
            )
        case _:
            return None


class PeerChannel:
    """The gateway ``Channel`` of one chat peer: frames are rendered and sent in order.

    ``ref`` is the platform's handle of the message the running turn answers (what a reply
    quotes); in a shared group chat it is the asking member's message."""

    def __init__(self, adapter: ChatAdapter, peer: str) -> None:
        self.name = adapter.name
        self.adapter = adapter
        self.peer = peer
        self.ref: str | None = None
        self.asker: str | None = None  # shared group chat: the member the running turn answers
        self.asked: dict[str, str | None] = {}  # open approval id -> who may answer it
        self._waiting: deque[tuple[str, AcpMessage, str | None]] = deque()
        self._recheck: asyncio.TimerHandle | None = None
        self._outbox: asyncio.Queue[tuple[list[str], str | None]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    # -- frames from the gateway ------------------------------------------------------------
    def send(self, frame: ServerFrame) -> None:
        text = render_frame(frame)
        if isinstance(frame, ApprovalRequestFrame):
            if len(self.asked) >= _ASKED_MAX:
                self.asked.pop(next(iter(self.asked)))
            self.asked[frame.request_id] = self.asker
            if self.asker is not None and text is not None:
                text = f"{self.adapter.mention(self.asker)}{text}\n(only the asker may answer)"
        elif isinstance(frame, ReplyFrame | ErrorFrame):  # one of these ends every turn
            self.asked.clear()
            if self.asker is not None or self._waiting:
                self.asker = None
                asyncio.get_running_loop().call_soon(self._pump)
        if text is not None:
            self._queue(text, self.ref)

    def say(self, text: str, ref: str | None = None) -> None:
        """A notice of the adapter's own (a refusal, a hint) to this peer."""
        self._queue(text, ref if ref is not None else self.ref)

    def _queue(self, text: str, ref: str | None) -> None:
        pieces = self.adapter.pieces(text)
        self._outbox.put_nowait((pieces, ref))
        self._kick()

    def nudge(self) -> None:
        """Let the adapter deliver what it holds back (QQ: a new message to reply to)."""
        self._outbox.put_nowait(([], self.ref))
        self._kick()

    def _kick(self) -> None:
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while not self._outbox.empty():
            pieces, ref = self._outbox.get_nowait()
            try:
                await self.adapter.deliver(self.peer, pieces, ref)
            except Exception as err:  # noqa: BLE001 - one failed send must not stop the rest
                log.warning("%s: could not send to a peer: %s", self.name, type(err).__name__)

    async def flushed(self) -> None:
        """Wait until every queued piece was handed to the platform (tests, shutdown)."""
        while self._sender is not None and not self._sender.done():
            await asyncio.shield(self._sender)

    # -- a shared group chat ----------------------------------------------------------------
    def enqueue(self, sender: str, message: AcpMessage, ref: str | None) -> None:
        if len(self._waiting) >= _WAITING_MAX:
            self.say(
                "Error CHANNEL_BUSY: too many messages wait in this chat; send it again later.",
                ref,
            )
            return
        self._waiting.append((sender, message, ref))
        self._pump()
        if self._waiting and self._waiting[-1][1] is message:  # not taken yet: say so
            more = len(self._waiting) - 1
            also = f" and {more} more before it" if more else ""
            self.say(f"Queued: this runs after the task running now{also}.", ref)

    def _pump(self) -> None:
        """Submit the next waiting message when no turn of the session runs."""
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        if self.asker is not None or not self._waiting:
            return
        gateway = self.adapter.gateway
        session_id = self.adapter.session_for(self.peer)
        sender, message, ref = self._waiting[0]
        try:
            # watched first: a turn a stopped gateway left waiting resumes now, before ours
            gateway.watch(gateway.open_session(self.name, message.caller, session_id), self)
        except XclawError as err:
            self._waiting.popleft()
            self.say(f"Error {err.code}: {err.message}", ref)
            return
        if gateway.is_running(session_id):  # a turn nobody here started: wait for its end
            self._recheck = asyncio.get_running_loop().call_later(_RECHECK_S, self._pump)
            return
        self._waiting.popleft()
        self.asker, self.ref = sender, ref
        try:
            gateway.submit(message, self)
        except XclawError as err:
            self.asker = None
            self.say(f"Error {err.code}: {err.message}", ref)
            asyncio.get_running_loop().call_soon(self._pump)


class ChatAdapter(ABC):
    """A chat platform. Subclasses implement ``start``, ``stop`` and ``send_text`` and call
    ``handle_text`` for every text message a peer sends."""

    name: str = "chat"
    limit: int = 4000  # characters per platform message
    utf16: bool = False  # ``limit`` counts UTF-16 code units (Telegram), not characters

    def __init__(self, gateway: Gateway, *, dm_scope: DmScope = "per-peer") -> None:
        self.gateway = gateway
        self.dm_scope = dm_scope
        self._peers: dict[str, PeerChannel] = {}
        gateway.register_channel(self.name)

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None:
        """Send one message (already within ``limit``) to ``peer`` on the platform;
        ``reply_to`` is the platform's handle of the message it answers, when known."""

    def pieces(self, text: str) -> list[str]:
        """``text`` as platform messages: split to the limit, blank pieces dropped."""
        pieces = split_text(text, self.limit, utf16=self.utf16)
        return [p for p in pieces if p.strip()] or pieces[:1]

    async def deliver(self, peer: str, pieces: list[str], ref: str | None) -> None:
        """Send one frame's pieces in order (QQ overrides this with its reply budget)."""
        for piece in pieces:
            try:
                await self.send_text(peer, piece, ref)
            except Exception as err:  # noqa: BLE001 - one failed piece must not stop the rest
                log.warning("%s: could not send to a peer: %s", self.name, type(err).__name__)

    def mention(self, sender: str) -> str:
        """Text that notifies ``sender`` in a group chat (Feishu: an @), or nothing."""
        return ""

    def channel_for(self, peer: str) -> PeerChannel:
        if peer not in self._peers:
            self._peers[peer] = PeerChannel(self, peer)
        return self._peers[peer]

    def session_for(self, peer: str) -> str:
        who = "dm" if self.dm_scope == "shared" else peer
        return f"{self.name}-{hashlib.sha256(who.encode()).hexdigest()[:16]}"

    def handle_text(
        self, peer: str, text: str, *, sender: str | None = None, ref: str | None = None
    ) -> None:
        """A peer's message: a command (/approve, /approve-task, /deny, /stop) or a task.

        ``sender``: the member who wrote it, when ``peer`` is a group chat whose members share
        one session (see the module doc). ``ref``: the platform's handle of this message."""
        channel = self.channel_for(peer)
        if sender is None and ref is not None:
            channel.ref = ref  # replies answer the peer's latest message
        words = text.strip().split()
        if words and words[0] in _ANSWERS and len(words) == 2:
            self._answer(channel, words[1].strip(",.;:"), _ANSWERS[words[0]], sender, ref)
        elif words == ["/stop"]:
            self._stop(channel, sender, ref)
        else:
            self._task(channel, text, sender, ref)

    def _answer(
        self,
        channel: PeerChannel,
        request_id: str,
        answer: Answer,
        sender: str | None,
        ref: str | None,
    ) -> None:
        if sender is not None and request_id in channel.asked:
            asker = channel.asked[request_id]
            if asker != sender:
                where = "" if asker is not None else " (it was not asked from this chat)"
                channel.say(
                    "Error APPROVAL_NOT_YOURS: only the member who asked for this task "
                    f"can answer it{where}.",
                    ref,
                )
                return
        if not self.gateway.answer(channel, request_id, answer):
            channel.say("Error APPROVAL_UNKNOWN: No such open question here.", ref)
            return
        channel.asked.pop(request_id, None)
        if sender is not None and ref is not None:
            channel.ref = ref  # the rest of the turn answers the asker's answer

    def _stop(self, channel: PeerChannel, sender: str | None, ref: str | None) -> None:
        session_id = self.session_for(channel.peer)
        if sender is not None and channel.asker != sender and self.gateway.is_running(session_id):
            channel.say("Error STOP_NOT_YOURS: only the member who asked can stop it.", ref)
            return
        if not self.gateway.stop(session_id):
            channel.say("Nothing is running.", ref)

    def _task(self, channel: PeerChannel, text: str, sender: str | None, ref: str | None) -> None:
        peer = channel.peer
        try:
            message = AcpMessage(
                channel=self.name,
                caller=f"{self.name}:{peer}" if sender is None else f"{self.name}:{peer}:{sender}",
                content=text,
                session_id=self.session_for(peer),
            )
        except ValueError:  # longer than a message may be, or an id too long
            channel.say("Error MESSAGE_INVALID: that message cannot be taken (too long).", ref)
            return
        if sender is not None:
            channel.enqueue(sender, message, ref)
            return
        try:
            self.gateway.submit(message, channel)
        except XclawError as err:
            channel.say(f"Error {err.code}: {err.message}", ref)
