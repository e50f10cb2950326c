"""The QQ bot channel (official QQ bot API v2): C2C and group @ messages over the bot gateway.

A small httpx + websockets client rather than the official ``qq-botpy`` SDK: botpy hard-codes
its API and token hosts (no clean base-URL override for a loopback fake) and still centres on
guild (频道) bots.

Flow: an app access token from ``token_url`` (``{appId, clientSecret}`` → ``{access_token,
expires_in}``, refreshed a minute before it expires), ``GET {api_base}/gateway`` for the
WebSocket URL, then op 10 Hello → op 2 Identify (or op 6 Resume when a session is known),
op 1 heartbeats carrying the last sequence, op 0 dispatches (READY, RESUMED,
C2C_MESSAGE_CREATE, GROUP_AT_MESSAGE_CREATE), op 7 Reconnect → reconnect and resume,
op 9 Invalid Session → reconnect and identify afresh.

Replies are passive messages: ``POST /v2/users/{openid}/messages`` or
``/v2/groups/{group_openid}/messages`` carrying the ``msg_id`` being answered and a ``msg_seq``
that grows with every reply to it. QQ's rules (bot.q.qq.com, 发送消息): a message may be
answered at most 5 times, within 60 minutes in a direct chat (C2C) and 5 minutes in a group;
proactive messages (no ``msg_id``) stopped on 2025-04-21 (before: 4 a month). So every
message a peer sends is a reply source with a budget and a deadline (``reply_margin`` before
QQ's). A reply that does not fit goes out as far as the budget allows, and its last reply
says how many parts wait; a turn still running when its message's window is about to close
says so while it still can. What waits is sent as the answer to the peer's next message
(``/more`` asks for it without starting a task), or of an event QQ lets a bot answer with
``event_id`` (the bot added as a friend or to a group, messages switched back on). With
``proactive=True`` (bots that still have the quota) what does not fit is sent proactively.

A peer is a user's openid (C2C). In a group, ``group_scope="member"`` (the default) makes each
member of each group a peer ``{group_openid}:{member_openid}``, so only the member who asked
can answer an approval; ``"group"`` makes the whole group one peer (its openid): one shared
conversation where any member may answer. Replies always go to the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

import httpx
from pydantic import BaseModel, Field, SecretStr
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from xclaw.gateway.channels.base import ChannelError, ChatAdapter, DmScope
from xclaw.redact import register_secret

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

log = logging.getLogger(__name__)
# websockets logs every frame at DEBUG, and Identify/Resume frames carry the access token:
# its own logger stays at INFO whatever the root level is.
_ws_log = logging.getLogger(f"{__name__}.websocket")
_ws_log.setLevel(logging.INFO)

INTENT_GROUP_AND_C2C = 1 << 25  # GROUP_AT_MESSAGE_CREATE, C2C_MESSAGE_CREATE, friend/group events
_REFRESH_MARGIN = 60.0  # seconds before expiry a token is renewed
_ERRORS = (OSError, ConnectionClosed, InvalidHandshake, httpx.HTTPError, ValueError, KeyError)

Kind = Literal["c2c", "group"]
_ID_MAX = 512  # longest message id, event id or openid taken from a dispatch
_SOURCES_MAX = 8  # recent messages remembered per peer to reply to
_HELD_MAX = 40  # parts held back per peer for its next message
# events QQ lets a bot answer with their ``event_id`` (send.md), and where the answer goes
_EVENTS: dict[str, Kind] = {
    "FRIEND_ADD": "c2c",
    "C2C_MSG_RECEIVE": "c2c",
    "GROUP_ADD_ROBOT": "group",
    "GROUP_MSG_RECEIVE": "group",
}


class QQSettings(BaseModel):
    """What the QQ channel needs (from the QQ open platform's bot page), and QQ's limits on
    passive replies (the defaults are QQ's; tests shorten the windows)."""

    app_id: str
    client_secret: SecretStr
    api_base: str = "https://api.sgroup.qq.com"
    token_url: str = "https://bots.qq.com/app/getAppAccessToken"
    intents: int = INTENT_GROUP_AND_C2C
    group_scope: Literal["member", "group"] = "member"
    reconnect_delay: float = 1.0  # seconds, doubled per failure up to 60
    reply_budget: int = Field(default=5, ge=2, le=5)  # replies to one message
    group_window: float = Field(default=300.0, gt=0)  # seconds a group message may be answered
    c2c_window: float = Field(default=3600.0, gt=0)  # seconds a direct message may be answered
    event_window: float = Field(default=300.0, gt=0)  # seconds an event may be answered
    reply_margin: float = Field(default=20.0, ge=0)  # stop replying this long before QQ does
    proactive: bool = False  # send what does not fit as proactive messages (XCLAW_QQ_PROACTIVE)


@dataclass
class _Source:
    """A message (``msg_id``) or event (``event_id``) that may still be answered."""

    field: Literal["msg_id", "event_id"]
    id: str
    deadline: float  # monotonic time after which no reply is sent
    used: int = 0  # msg_seq of the last reply sent (or tried) to it


class _Reconnect(Exception):
    """The server asked for a new connection (op 7 / op 9, or heartbeats went unanswered)."""


class QQAdapter(ChatAdapter):
    """A QQ bot: every C2C or group @ message is a task or an approval answer."""

    name = "qq"
    limit = 2000

    def __init__(
        self, gateway: Gateway, settings: QQSettings, *, dm_scope: DmScope = "per-peer"
    ) -> None:
        super().__init__(gateway, dm_scope=dm_scope)
        self.settings = settings
        self.ready = asyncio.Event()  # set on READY / RESUMED, cleared when the link drops
        self.session_id: str | None = None
        self.seq: int | None = None
        self._token: str | None = None
        self._expires = 0.0
        self._token_lock = asyncio.Lock()
        self._http: httpx.AsyncClient | None = None
        self._runner: asyncio.Task[None] | None = None
        self._ws: ClientConnection | None = None
        self._targets: dict[str, tuple[Kind, str]] = {}  # peer -> where its replies go
        self._sources: dict[str, list[_Source]] = {}  # peer -> what it may be answered on
        self._held: dict[str, list[str]] = {}  # peer -> parts waiting for a reply source
        self._watchdogs: set[asyncio.Task[None]] = set()
        self._acked = True
        self._why: str | None = None

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        if self._runner is not None and not self._runner.done():
            return
        self._client()
        self._runner = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        for dog in list(self._watchdogs):
            dog.cancel()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None
        for channel in self._peers.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(channel.flushed(), 5)
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        self.ready.clear()

    # -- auth -------------------------------------------------------------------------------
    async def access_token(self) -> str:
        """The app access token, renewed when less than a minute of it is left."""
        async with self._token_lock:
            if self._token is None or time.monotonic() >= self._expires - _REFRESH_MARGIN:
                body = {
                    "appId": self.settings.app_id,
                    "clientSecret": self.settings.client_secret.get_secret_value(),
                }
                response = await self._client().post(self.settings.token_url, json=body)
                response.raise_for_status()
                data = response.json()
                if "access_token" not in data:
                    raise ValueError(f"QQ gave no access token (code {data.get('code')})")
                self._token = str(data["access_token"])
                register_secret(self._token)
                self._expires = time.monotonic() + float(data.get("expires_in", 7200))
            return self._token

    async def _headers(self) -> dict[str, str]:
        return {
            "Authorization": f"QQBot {await self.access_token()}",
            "X-Union-Appid": self.settings.app_id,
        }

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=15.0)
        return self._http

    # -- sending ----------------------------------------------------------------------------
    async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None:
        """One message now: a passive reply while the peer has a message to answer, else a
        proactive one when ``proactive`` is on; raises :class:`ChannelError` otherwise."""
        source = self._usable(peer)
        if source is not None:
            refused = await self._reply(peer, source, text)
            if refused is None:
                return
        elif self.settings.proactive:
            refused = await self._post(peer, {"content": text, "msg_type": 0})
            if refused is None:
                return
        else:
            refused = "no message of this peer may be answered now"
        raise ChannelError(f"QQ did not take the message: {refused}.", code="QQ_REPLY_REFUSED")

    async def deliver(self, peer: str, pieces: list[str], ref: str | None) -> None:
        """A frame's parts after what was held back, within QQ's reply rules; what does not
        fit is held for the peer's next message (and said so while a reply still can)."""
        queue = [*self._held.pop(peer, []), *pieces]
        try:
            queue = await self._flush(peer, queue)
        except httpx.HTTPError as err:
            log.warning(
                "qq: sending failed (%s); %d parts wait for the next message",
                type(err).__name__,
                len(queue),
            )
        if queue:
            if len(queue) > _HELD_MAX:
                queue = [*queue[: _HELD_MAX - 1], "(the rest of this reply was too long to hold)"]
            self._held[peer] = queue
            log.info("qq: %d parts wait for the peer's next message", len(queue))

    async def _flush(self, peer: str, queue: list[str]) -> list[str]:
        """Sends from the front of ``queue`` while QQ allows; returns what is left (the list
        is consumed as it goes, so an exception leaves only the unsent parts in it)."""
        budget = self.settings.reply_budget
        while queue:
            source = self._usable(peer)
            if source is None:
                if self.settings.proactive and await self._proactive(peer, queue[0]):
                    queue.pop(0)
                    continue
                return queue
            if budget - source.used == 1 and len(queue) > 1:
                # the last reply this message allows: it says that more waits
                while self.settings.proactive and len(queue) > 1:
                    if not await self._proactive(peer, queue[0]):
                        break
                    queue.pop(0)
                if len(queue) > 1:
                    await self._reply(peer, source, self._waits(len(queue), peer))
                    source.used = budget
                    return queue
            refused = await self._reply(peer, source, queue[0])
            if refused is None:
                queue.pop(0)
                continue
            # the part or the message? A short notice on the same message tells which.
            note = f"(QQ refused a part of this reply and it is left out: {refused})"
            if await self._reply(peer, source, note) is None:
                log.warning("qq: a part of a reply was refused: %s", refused)
                queue.pop(0)
            else:
                log.info("qq: a message can take no more replies: %s", refused)
                source.used = budget
        return queue

    def _waits(self, parts: int, peer: str) -> str:
        kind = self._targets.get(peer, ("c2c", peer))[0]
        window = self.settings.group_window if kind == "group" else self.settings.c2c_window
        return (
            f"({parts} more parts of this reply wait: QQ lets a bot answer one message only "
            f"{self.settings.reply_budget} times within {_duration(window)}. "
            "Send /more to get them.)"
        )

    def _usable(self, peer: str) -> _Source | None:
        """The newest message (or event) of ``peer`` that may still be answered."""
        now = time.monotonic()
        for source in reversed(self._sources.get(peer, [])):
            if source.used < self.settings.reply_budget and now < source.deadline:
                return source
        return None

    async def _reply(self, peer: str, source: _Source, text: str) -> str | None:
        """A passive reply on ``source``: None when QQ took it, else why not."""
        source.used += 1  # a msg_seq is never used twice, even by a request that failed
        body = {"content": text, "msg_type": 0, source.field: source.id, "msg_seq": source.used}
        return await self._post(peer, body)

    async def _proactive(self, peer: str, text: str) -> bool:
        refused = await self._post(peer, {"content": text, "msg_type": 0})
        if refused is not None:
            log.info("qq: a proactive message was refused: %s", refused)
        return refused is None

    async def _post(self, peer: str, body: dict[str, Any]) -> str | None:
        kind, openid = self._targets.get(peer, ("c2c", peer))
        path = (
            f"/v2/groups/{openid}/messages" if kind == "group" else f"/v2/users/{openid}/messages"
        )
        url = self.settings.api_base.rstrip("/") + path
        response = await self._client().post(url, json=body, headers=await self._headers())
        if response.status_code == 401:  # the token was revoked early: renew once
            self._token = None
            response = await self._client().post(url, json=body, headers=await self._headers())
        if response.is_success:
            return None
        return _refusal(response)

    # -- the gateway connection -------------------------------------------------------------
    async def _run(self) -> None:
        delay = self.settings.reconnect_delay
        while True:
            try:
                await self._connect_once()
                delay = self.settings.reconnect_delay
            except _Reconnect as why:
                log.info("qq: reconnecting (%s)", why)
                delay = self.settings.reconnect_delay
            except _ERRORS as err:
                log.warning("qq: gateway connection failed: %s", type(err).__name__)
                delay = min(delay * 2, 60.0)
            finally:
                self.ready.clear()
                self._ws = None
            await asyncio.sleep(delay)

    async def _connect_once(self) -> None:
        base = self.settings.api_base.rstrip("/")
        response = await self._client().get(f"{base}/gateway", headers=await self._headers())
        response.raise_for_status()
        url = str(response.json()["url"])
        async with connect(url, logger=_ws_log, max_size=None) as ws:
            self._ws = ws
            self._why = None
            hello = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if hello.get("op") != 10:
                raise ValueError("QQ gateway did not say hello")
            interval = float(hello["d"]["heartbeat_interval"]) / 1000
            await self._greet(ws)
            self._acked = True
            beat = asyncio.get_running_loop().create_task(self._heartbeat(ws, interval))
            try:
                async for raw in ws:
                    self._on_frame(json.loads(raw))
            finally:
                beat.cancel()
                with contextlib.suppress(asyncio.CancelledError, *_ERRORS):
                    await beat
            if self._why is not None:
                raise _Reconnect(self._why)

    async def _greet(self, ws: ClientConnection) -> None:
        token = f"QQBot {await self.access_token()}"
        if self.session_id is not None and self.seq is not None:
            frame: dict[str, Any] = {
                "op": 6,
                "d": {"token": token, "session_id": self.session_id, "seq": self.seq},
            }
        else:
            frame = {
                "op": 2,
                "d": {
                    "token": token,
                    "intents": self.settings.intents,
                    "shard": [0, 1],
                    "properties": {"$os": "linux", "$browser": "xclaw", "$device": "xclaw"},
                },
            }
        await ws.send(json.dumps(frame))

    async def _heartbeat(self, ws: ClientConnection, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if not self._acked:  # the last beat was never answered: a dead link
                self._close_for("heartbeat not acknowledged")
                return
            self._acked = False
            await ws.send(json.dumps({"op": 1, "d": self.seq}))

    def _on_frame(self, frame: dict[str, Any]) -> None:
        op = frame.get("op")
        if op == 11:
            self._acked = True
        elif op == 1:  # the server asks for a beat now
            if self._ws is not None:
                asyncio.get_running_loop().create_task(
                    self._ws.send(json.dumps({"op": 1, "d": self.seq}))
                )
        elif op == 7:
            self._close_for("server asked to reconnect")
        elif op == 9:
            if frame.get("d") is not True:  # not resumable: identify afresh next time
                self.session_id = None
                self.seq = None
            self._close_for("invalid session")
        elif op == 0:
            if isinstance(frame.get("s"), int):
                self.seq = frame["s"]
            data = frame.get("d")
            if isinstance(data, dict):
                self._dispatch(str(frame.get("t")), data, frame.get("id"))

    def _close_for(self, why: str) -> None:
        self._why = why
        if self._ws is not None:
            asyncio.get_running_loop().create_task(self._ws.close(4000, why))

    def _dispatch(self, kind: str, data: dict[str, Any], event_id: object = None) -> None:
        raw = data.get("author")
        author: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "READY":
            self.session_id = str(data["session_id"])
            self.ready.set()
            log.info("qq: connected")
        elif kind == "RESUMED":
            self.ready.set()
            log.info("qq: session resumed")
        elif kind == "C2C_MESSAGE_CREATE":
            user = author.get("user_openid")
            if _an_id(user):
                self._incoming("c2c", user, user, data)
        elif kind == "GROUP_AT_MESSAGE_CREATE":
            group, member = data.get("group_openid"), author.get("member_openid")
            if not _an_id(group):
                return
            if self.settings.group_scope == "group":
                self._incoming("group", group, group, data)
            elif _an_id(member):
                self._incoming("group", group, f"{group}:{member}", data)
        elif kind in _EVENTS:
            where = _EVENTS[kind]
            self._event(where, data.get("group_openid" if where == "group" else "openid"), event_id)

    def _incoming(self, kind: Kind, openid: str, peer: str, data: dict[str, Any]) -> None:
        content, message_id = data.get("content"), data.get("id")
        if not isinstance(content, str) or not _an_id(openid) or not _an_id(message_id):
            return  # images, files and malformed dispatches are not tasks
        text = content.strip()
        if not text:
            return
        self._targets[peer] = (kind, openid)
        window = self.settings.group_window if kind == "group" else self.settings.c2c_window
        source = self._remember(peer, "msg_id", str(message_id), window)
        channel = self.channel_for(peer)
        if text == "/more":
            if peer in self._held:
                channel.nudge()
            else:
                channel.say("Nothing is waiting.")
            return
        if peer in self._held:  # what waits comes first, as the answer to this message
            channel.nudge()
        self.handle_text(peer, text)
        self._watch(peer, source)

    def _event(self, kind: Kind, openid: object, event_id: object) -> None:
        """An event QQ lets a bot answer: what waits for a peer there goes out on it."""
        if not _an_id(openid) or not _an_id(event_id):
            return
        for peer, target in list(self._targets.items()):
            if target == (kind, openid) and peer in self._held:
                self._remember(peer, "event_id", str(event_id), self.settings.event_window)
                self.channel_for(peer).nudge()

    def _remember(
        self, peer: str, field: Literal["msg_id", "event_id"], source_id: str, window: float
    ) -> _Source:
        deadline = time.monotonic() + window - self.settings.reply_margin
        source = _Source(field, source_id, deadline)
        sources = [s for s in self._sources.get(peer, []) if s.id != source_id]
        self._sources[peer] = [*sources, source][-_SOURCES_MAX:]
        return source

    def _watch(self, peer: str, source: _Source) -> None:
        """Before ``source``'s window closes on a turn still running, say so on it."""
        dog = asyncio.get_running_loop().create_task(self._watchdog(peer, source))
        self._watchdogs.add(dog)
        dog.add_done_callback(self._watchdogs.discard)

    async def _watchdog(self, peer: str, source: _Source) -> None:
        lead = max(self.settings.reply_margin, 0.05)
        await asyncio.sleep(max(source.deadline - lead - time.monotonic(), 0.0))
        channel = self._peers.get(peer)
        if channel is None or channel.asked:  # a question is open: its answer is a new message
            return
        if self._usable(peer) is not source:  # answered in full, or a newer message came
            return
        if not self.gateway.is_running(self.session_for(peer)):
            return
        kind = self._targets.get(peer, ("c2c", peer))[0]
        window = self.settings.group_window if kind == "group" else self.settings.c2c_window
        channel.say(
            f"Still working on it. QQ lets a bot answer a message only within "
            f"{_duration(window)}: send /more later (or anything else) and the result comes "
            "as the answer to that."
        )


def _an_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= _ID_MAX


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} seconds"


def _refusal(response: httpx.Response) -> str:
    """QQ's refusal as a short line (its code and message; never a header or token)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        code, message = data.get("code"), str(data.get("message") or "")[:200]
        return f"HTTP {response.status_code} code {code}: {message}"
    return f"HTTP {response.status_code}"
