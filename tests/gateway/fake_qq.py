"""A fake QQ bot API on a free loopback port: token endpoint, /gateway, the bot WebSocket
(Hello, Identify/Resume, READY/RESUMED, heartbeats, dispatches, op 7/9) and the v2 message
endpoints. Tests inject peer messages and read the bot's replies.

It keeps QQ's passive-reply rules (bot.q.qq.com, 发送消息), so a test fails where QQ would
refuse: a reply names a ``msg_id`` (or ``event_id``) QQ sent to that same user or group, at
most ``budget`` (5) times, each with a new ``msg_seq``, within ``group_window`` (5 min) or
``c2c_window`` (60 min) of the message (``event_window`` for events); a proactive message
(neither id) is refused, as QQ refuses them since 2025-04-21, unless ``proactive`` quota is
given (4 a month per user or group, as QQ had); a URL in the text is refused (QQ takes only
URLs configured in the bot's console). Every refusal is a 400 with a ``code`` and a
``message`` and lands in :attr:`FakeQQ.refused`; the codes are the fake's own except 22009
("msg limit exceed", QQ's documented one): the adapter must not depend on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

APP_ID = "102030405"
SECRET = "qq-client-secret-do-not-log-7f3a9c"


@dataclass
class Sent:
    kind: str  # "c2c" or "group"
    openid: str
    content: str
    msg_id: str | None
    msg_seq: int | None


@dataclass
class _Origin:
    """What QQ knows of a message or event a reply may name."""

    kind: str
    openid: str
    at: float  # monotonic time QQ sent it
    window: float
    seqs: set[int] = field(default_factory=set)


@dataclass
class FakeQQ:
    expires_in: int = 7200
    heartbeat_ms: int = 100
    ack: bool = True  # answer heartbeats with op 11
    port: int = 0
    budget: int = 5  # passive replies to one message
    group_window: float = 300.0
    c2c_window: float = 3600.0
    event_window: float = 300.0
    proactive: int = 0  # proactive messages allowed per user or group (QQ: none since 2025-04)
    urls_allowed: bool = False  # QQ refuses a URL not configured in the bot's console
    refused: list[tuple[Sent, str]] = field(default_factory=list)
    _origins: dict[str, _Origin] = field(default_factory=dict)  # msg_id / event_id -> origin
    _proactive_sent: dict[tuple[str, str], int] = field(default_factory=dict)
    tokens: list[str] = field(default_factory=list)
    greetings: list[dict[str, Any]] = field(default_factory=list)  # op 2 / op 6 frames
    heartbeats: list[Any] = field(default_factory=list)
    sent: asyncio.Queue[Sent] = field(default_factory=asyncio.Queue)
    log: list[Sent] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)  # a session is READY/RESUMED
    _events: list[dict[str, Any]] = field(default_factory=list)  # every dispatch, by seq
    _out: asyncio.Queue[dict[str, Any]] | None = None
    _sessions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _session_id: str | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what a test does -------------------------------------------------------------------
    def c2c(self, openid: str, text: str) -> str:
        mid = f"msg-{next(self._ids)}"
        data = {"id": mid, "content": text, "author": {"user_openid": openid}, "timestamp": "t"}
        self._origins[mid] = _Origin("c2c", openid, time.monotonic(), self.c2c_window)
        self._dispatch("C2C_MESSAGE_CREATE", data)
        return mid

    def group(self, group_openid: str, member: str, text: str) -> str:
        mid = f"msg-{next(self._ids)}"
        data = {
            "id": mid,
            "content": f" {text}",  # what follows the stripped @bot
            "group_openid": group_openid,
            "author": {"member_openid": member},
        }
        self._origins[mid] = _Origin("group", group_openid, time.monotonic(), self.group_window)
        self._dispatch("GROUP_AT_MESSAGE_CREATE", data)
        return mid

    def event(self, kind: str, openid: str) -> str:
        """An event a bot may answer with ``event_id`` (GROUP_MSG_RECEIVE, FRIEND_ADD, ...)."""
        eid = f"{kind}:{next(self._ids)}"
        where = "group" if kind.startswith("GROUP") else "c2c"
        data = {"group_openid": openid} if where == "group" else {"openid": openid}
        self._origins[eid] = _Origin(where, openid, time.monotonic(), self.event_window)
        self._dispatch(kind, {**data, "timestamp": 1}, event_id=eid)
        return eid

    def replies_to(self, msg_id: str) -> list[Sent]:
        return [s for s in self.log if s.msg_id == msg_id]

    def kick(self, op: int, d: Any = None) -> None:
        """Send op 7 (Reconnect) or op 9 (Invalid Session) on the live connection."""
        self.connected.clear()
        if op == 9 and d is not True:
            self._session_id = None
        assert self._out is not None
        self._out.put_nowait({"op": op, "d": d})

    async def reply(self, wait: float = 10.0) -> Sent:
        return await asyncio.wait_for(self.sent.get(), wait)

    # -- internals --------------------------------------------------------------------------
    def _dispatch(self, kind: str, data: dict[str, Any], event_id: str | None = None) -> None:
        frame: dict[str, Any] = {"op": 0, "s": len(self._events) + 1, "t": kind, "d": data}
        if event_id is not None:
            frame["id"] = event_id
        self._events.append(frame)
        if self._out is not None:
            self._out.put_nowait(frame)

    def _valid(self, request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        return bool(self.tokens) and auth == f"QQBot {self.tokens[-1]}"

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/app/getAppAccessToken")
        async def token(request: Request) -> JSONResponse:
            body = await request.json()
            if body.get("appId") != APP_ID or body.get("clientSecret") != SECRET:
                return JSONResponse({"code": 100016, "message": "invalid appid or secret"})
            self.tokens.append(f"access-token-{len(self.tokens) + 1}-9d8e7f")
            return JSONResponse(
                {"access_token": self.tokens[-1], "expires_in": str(self.expires_in)}
            )

        @app.get("/gateway")
        async def gateway(request: Request) -> JSONResponse:
            if not self._valid(request):
                return JSONResponse({"code": 11244, "message": "token not exist"}, 401)
            return JSONResponse({"url": f"ws://127.0.0.1:{self.port}/websocket"})

        @app.post("/v2/users/{openid}/messages")
        async def to_user(openid: str, request: Request) -> JSONResponse:
            return await self._message("c2c", openid, request)

        @app.post("/v2/groups/{openid}/messages")
        async def to_group(openid: str, request: Request) -> JSONResponse:
            return await self._message("group", openid, request)

        @app.websocket("/websocket")
        async def ws(websocket: WebSocket) -> None:
            await websocket.accept()
            try:
                await self._serve(websocket)
            except WebSocketDisconnect:
                pass
            finally:
                self._out = None

        return app

    async def _message(self, kind: str, openid: str, request: Request) -> JSONResponse:
        if not self._valid(request):
            return JSONResponse({"code": 11244, "message": "token not exist"}, 401)
        body = await request.json()
        source = body.get("msg_id") or body.get("event_id")
        sent = Sent(kind, openid, body["content"], source, body.get("msg_seq"))
        why = self._refusal(kind, openid, source, body.get("msg_seq"))
        if why is None and not self.urls_allowed and "://" in sent.content:
            why = (40034028, "url not allowed in content")
        if why is not None:
            self.refused.append((sent, why[1]))
            return JSONResponse({"code": why[0], "message": why[1]}, 400)
        self.log.append(sent)
        self.sent.put_nowait(sent)
        return JSONResponse({"id": f"out-{len(self.log)}", "timestamp": "t"})

    def _refusal(
        self, kind: str, openid: str, source: str | None, seq: object
    ) -> tuple[int, str] | None:
        if source is None:  # proactive
            used = self._proactive_sent.get((kind, openid), 0)
            if used >= self.proactive:
                return 40034102, "proactive messages are not available"
            self._proactive_sent[(kind, openid)] = used + 1
            return None
        origin = self._origins.get(source)
        if origin is None or (origin.kind, origin.openid) != (kind, openid):
            return 40034024, "msg_id or event_id invalid for this target"
        if time.monotonic() - origin.at > origin.window:
            return 40034025, "passive reply window expired"
        seq = 1 if seq is None else seq
        if not isinstance(seq, int) or seq in origin.seqs:
            return 40054005, "duplicate msg_seq"
        if len(origin.seqs) >= self.budget:
            return 22009, "msg limit exceed"
        origin.seqs.add(seq)
        return None

    async def _serve(self, websocket: WebSocket) -> None:
        await websocket.send_json({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}})
        greet = await websocket.receive_json()
        self.greetings.append(greet)
        d = greet.get("d", {})
        if d.get("token") != f"QQBot {self.tokens[-1]}":
            await websocket.send_json({"op": 9, "d": False})
            await websocket.close(4004)
            return
        out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        if greet["op"] == 2:
            self._session_id = f"session-{next(self._sessions)}"
            ready = {"version": 1, "session_id": self._session_id, "user": {"bot": True}}
            await websocket.send_json({"op": 0, "s": 0, "t": "READY", "d": ready})
        elif greet["op"] == 6 and d.get("session_id") == self._session_id:
            for frame in self._events[int(d.get("seq") or 0) :]:  # what was missed
                out.put_nowait(frame)
            await websocket.send_json({"op": 0, "t": "RESUMED", "d": ""})
        else:
            await websocket.send_json({"op": 9, "d": False})
            await websocket.close(4009)
            return
        self._out = out
        self.connected.set()
        pusher = asyncio.get_running_loop().create_task(self._push(websocket, out))
        try:
            while True:
                frame = await websocket.receive_json()
                if frame.get("op") == 1:
                    self.heartbeats.append(frame.get("d"))
                    if self.ack:
                        await websocket.send_json({"op": 11})
        finally:
            pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pusher

    async def _push(self, websocket: WebSocket, out: asyncio.Queue[dict[str, Any]]) -> None:
        while True:
            frame = await out.get()
            await websocket.send_json(frame)
            if frame["op"] in (7, 9):
                await websocket.close(4000)
                return


@contextlib.asynccontextmanager
async def running(fake: FakeQQ) -> AsyncIterator[FakeQQ]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    fake.port = sock.getsockname()[1]
    config = uvicorn.Config(fake.app(), log_level="warning", ws="websockets-sansio", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield fake
    finally:
        server.should_exit = True
        server.force_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        sock.close()
