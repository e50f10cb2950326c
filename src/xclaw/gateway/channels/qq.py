"""The QQ bot channel (official QQ bot API v2): C2C and group @ messages over the bot gateway.

A small httpx + websockets client rather than the official ``qq-botpy`` SDK: botpy hard-codes
its API and token hosts (no clean base-URL override for a loopback fake) and still centres on
guild (频道) bots.

Flow: an app access token from ``token_url`` (``{appId, clientSecret}`` → ``{access_token,
expires_in}``, refreshed a minute before it expires), ``GET {api_base}/gateway`` for the
WebSocket URL, then op 10 Hello → op 2 Identify (or op 6 Resume when a session is known),
op 1 heartbeats carrying the last sequence, op 0 dispatches (READY, RESUMED,
C2C_MESSAGE_CREATE, GROUP_AT_MESSAGE_CREATE), op 7 Reconnect → reconnect and resume,
op 9 Invalid Session → reconnect and identify afresh. Replies are passive messages:
``POST /v2/users/{openid}/messages`` or ``/v2/groups/{group_openid}/messages`` carrying the
``msg_id`` being answered and a ``msg_seq`` that grows with every reply to it.

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
from typing import TYPE_CHECKING, Any, Literal

import httpx
from pydantic import BaseModel, SecretStr
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from xclaw.gateway.channels.base import ChatAdapter, DmScope
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


class QQSettings(BaseModel):
    """What the QQ channel needs (from the QQ open platform's bot page)."""

    app_id: str
    client_secret: SecretStr
    api_base: str = "https://api.sgroup.qq.com"
    token_url: str = "https://bots.qq.com/app/getAppAccessToken"
    intents: int = INTENT_GROUP_AND_C2C
    group_scope: Literal["member", "group"] = "member"
    reconnect_delay: float = 1.0  # seconds, doubled per failure up to 60


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
        self._last_msg: dict[str, str] = {}  # peer -> id of the message being answered
        self._msg_seq: dict[str, int] = {}  # msg_id -> last msg_seq used for it
        self._acked = True
        self._why: str | None = None

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        if self._runner is not None and not self._runner.done():
            return
        self._client()
        self._runner = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
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
    async def send_text(self, peer: str, text: str) -> None:
        kind, openid = self._targets.get(peer, ("c2c", peer))
        path = (
            f"/v2/groups/{openid}/messages" if kind == "group" else f"/v2/users/{openid}/messages"
        )
        body: dict[str, Any] = {"content": text, "msg_type": 0}
        msg_id = self._last_msg.get(peer)
        if msg_id is not None:  # a passive reply: QQ needs the message and a fresh seq
            seq = self._msg_seq.get(msg_id, 0) + 1
            self._msg_seq[msg_id] = seq
            body |= {"msg_id": msg_id, "msg_seq": seq}
        url = self.settings.api_base.rstrip("/") + path
        response = await self._client().post(url, json=body, headers=await self._headers())
        if response.status_code == 401:  # the token was revoked early: renew once
            self._token = None
            response = await self._client().post(url, json=body, headers=await self._headers())
        response.raise_for_status()

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
            self._dispatch(str(frame.get("t")), frame.get("d") or {})

    def _close_for(self, why: str) -> None:
        self._why = why
        if self._ws is not None:
            asyncio.get_running_loop().create_task(self._ws.close(4000, why))

    def _dispatch(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "READY":
            self.session_id = str(data["session_id"])
            self.ready.set()
            log.info("qq: connected")
        elif kind == "RESUMED":
            self.ready.set()
            log.info("qq: session resumed")
        elif kind == "C2C_MESSAGE_CREATE":
            user = str(data.get("author", {}).get("user_openid", ""))
            self._incoming("c2c", user, user, data)
        elif kind == "GROUP_AT_MESSAGE_CREATE":
            group = str(data.get("group_openid", ""))
            member = str(data.get("author", {}).get("member_openid", ""))
            if self.settings.group_scope == "group":
                self._incoming("group", group, group, data)
            elif member:
                self._incoming("group", group, f"{group}:{member}", data)

    def _incoming(self, kind: Kind, openid: str, peer: str, data: dict[str, Any]) -> None:
        text = str(data.get("content") or "").strip()
        if not openid or not text:
            return  # images, files and empty @s are not tasks
        self._targets[peer] = (kind, openid)
        if data.get("id"):
            old = self._last_msg.get(peer)
            if old is not None:
                self._msg_seq.pop(old, None)
            self._last_msg[peer] = str(data["id"])
        self.handle_text(peer, text)
