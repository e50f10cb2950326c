"""A fake Feishu Open API (tenant token, bot info, reply, send) on loopback, and signed
callbacks: direct (``p2p``) chats and group chats whose members are told apart by their
``open_id``, with the ``@_user_N`` mention placeholders Feishu puts in group texts. With
``strict`` a reply must name a message the fake delivered (Feishu: no such message)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from xclaw.gateway.channels.feishu import sign

APP_ID = "cli_fake_app"
APP_SECRET = "app-secret-0123456789-feishu"
VERIFICATION_TOKEN = "verify-token-abcdef-feishu"
ENCRYPT_KEY = "encrypt-key-zyxwvu-feishu"
TENANT_TOKEN = "t-tenant-token-9876543210-feishu"
BOT_OPEN_ID = "ou_bot0000000000000000000000000001"


@dataclass
class Sent:
    kind: str  # "reply" or "send"
    target: str  # message_id replied to, or chat_id
    text: str


@dataclass
class FakeFeishu:
    sent: list[Sent] = field(default_factory=list)
    token_calls: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    strict: bool = False
    delivered: set[str] = field(default_factory=set)  # message ids of events the fake made
    bot_info_calls: int = 0
    bot_info_code: int = 0  # non-zero: bot info is refused (an app without the bot ability)

    def group_message(
        self,
        chat_id: str,
        sender: str,
        text: str,
        *,
        mention_bot: bool = True,
        mention: str | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        """A group member's message as Feishu delivers it: ``@_user_N`` placeholders in the
        text for the bot (and ``mention``, another member), the sender's open_id."""
        who = [BOT_OPEN_ID] if mention_bot else []
        who += [mention] if mention is not None else []
        mentions: list[dict[str, Any]] = [
            {"key": f"@_user_{n}", "id": {"open_id": open_id}, "name": f"user {n}"}
            for n, open_id in enumerate(who, 1)
        ]
        keys = " ".join(m["key"] for m in mentions)
        event = message_event(
            chat_id,
            f"{keys} {text}".strip(),
            message_id=message_id,
            chat_type="group",
            sender_open_id=sender,
            mentions=mentions,
        )
        self.delivered.add(event["event"]["message"]["message_id"])
        return event

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/open-apis/auth/v3/tenant_access_token/internal")
        async def token(request: Request) -> JSONResponse:
            body = await request.json()
            if body != {"app_id": APP_ID, "app_secret": APP_SECRET}:
                return JSONResponse({"code": 10014, "msg": "app secret invalid"})
            self.token_calls += 1
            return JSONResponse(
                {"code": 0, "msg": "ok", "tenant_access_token": TENANT_TOKEN, "expire": 7200}
            )

        @app.get("/open-apis/bot/v3/info")
        async def bot_info(request: Request) -> JSONResponse:
            if request.headers.get("authorization") != f"Bearer {TENANT_TOKEN}":
                return JSONResponse({"code": 99991663, "msg": "invalid token"}, status_code=400)
            self.bot_info_calls += 1
            if self.bot_info_code:
                return JSONResponse({"code": self.bot_info_code, "msg": "bot ability disabled"})
            bot = {"activate_status": 2, "app_name": "xclaw", "open_id": BOT_OPEN_ID}
            return JSONResponse({"code": 0, "msg": "ok", "bot": bot})

        @app.post("/open-apis/im/v1/messages/{message_id}/reply")
        async def reply(message_id: str, request: Request) -> JSONResponse:
            if self.strict and message_id not in self.delivered:
                return JSONResponse({"code": 230011, "msg": "message not found"}, 400)
            return await self._record(request, "reply", message_id)

        @app.post("/open-apis/im/v1/messages")
        async def send(request: Request) -> JSONResponse:
            assert request.query_params.get("receive_id_type") == "chat_id"
            body = await request.json()
            return await self._record(request, "send", str(body.get("receive_id")))

        return app

    async def _record(self, request: Request, kind: str, target: str) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {TENANT_TOKEN}":
            return JSONResponse({"code": 99991663, "msg": "invalid token"}, status_code=400)
        body = await request.json()
        assert body["msg_type"] == "text"
        self.sent.append(Sent(kind, target, json.loads(body["content"])["text"]))
        self.changed.set()
        return JSONResponse({"code": 0, "msg": "success", "data": {"message_id": "om_bot"}})

    async def wait_for(self, check: Callable[[list[Sent]], bool], wait: float = 10.0) -> None:
        async def loop() -> None:
            while not check(self.sent):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), wait)


@asynccontextmanager
async def serve(app: FastAPI) -> AsyncIterator[str]:
    """``app`` under uvicorn on a free loopback port, in this event loop; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(app, lifespan="off", log_level="warning", log_config=None, http="h11")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(1000):  # up to 10 s
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    if not server.started:
        raise RuntimeError("the fake server did not start")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def encrypt(key: str, plaintext: str) -> str:
    """What Feishu puts in ``{"encrypt": ...}``."""
    iv = uuid.uuid4().bytes
    padder = padding.PKCS7(128).padder()
    data = padder.update(plaintext.encode()) + padder.finalize()
    cipher = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(iv))
    encryptor = cipher.encryptor()
    return base64.b64encode(iv + encryptor.update(data) + encryptor.finalize()).decode()


def message_event(
    chat_id: str,
    text: str,
    *,
    message_id: str | None = None,
    event_id: str | None = None,
    sender_type: str = "user",
    token: str = VERIFICATION_TOKEN,
    chat_type: str = "p2p",
    sender_open_id: str | None = None,
    mentions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An ``im.message.receive_v1`` callback (schema 2.0)."""
    message: dict[str, Any] = {
        "message_id": message_id or f"om_{uuid.uuid4().hex[:12]}",
        "chat_id": chat_id,
        "chat_type": chat_type,
        "message_type": "text",
        "content": json.dumps({"text": text}),
    }
    if mentions:
        message["mentions"] = mentions
    sender = {"open_id": sender_open_id or f"ou_{chat_id}"}
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id or uuid.uuid4().hex,
            "event_type": "im.message.receive_v1",
            "create_time": str(int(time.time() * 1000)),
            "token": token,
            "app_id": APP_ID,
            "tenant_key": "tenant",
        },
        "event": {
            "sender": {"sender_id": sender, "sender_type": sender_type},
            "message": message,
        },
    }


def signed_headers(
    body: bytes, key: str = ENCRYPT_KEY, *, timestamp: float | None = None
) -> dict[str, str]:
    stamp = str(int(time.time() if timestamp is None else timestamp))
    nonce = uuid.uuid4().hex
    return {
        "Content-Type": "application/json",
        "X-Lark-Request-Timestamp": stamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": sign(stamp, nonce, key, body),
    }
