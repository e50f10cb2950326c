"""A fake Telegram Bot API on a free loopback port, run in the test's own event loop.

It speaks what the adapter uses: ``/bot<TOKEN>/getMe``, ``getUpdates`` (long poll with
``offset``/``timeout``, confirmed updates are dropped), ``sendMessage`` (``chat_id``,
``text``; longer than 4096 UTF-16 code units is a 400 as on Telegram, which counts in UTF-16),
and the webhook methods: ``setWebhook`` (``url``, ``secret_token`` of 1-256 ``A-Za-z0-9_-``),
``deleteWebhook``, ``getWebhookInfo``. While a webhook is set, ``getUpdates`` answers 409 as
Telegram does, and every update is POSTed to the webhook with the
``X-Telegram-Bot-Api-Secret-Token`` header (kept and sent again until it gets a 2xx, as
Telegram retries). A wrong token is a 401 like Telegram's. Parameters are read from the query,
a JSON body or a form body (PTB sends forms with JSON-encoded values). The test injects user
messages with :meth:`FakeTelegram.user_says` and reads what the bot sent from
:attr:`FakeTelegram.sent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from typing import Any
from urllib.parse import parse_qsl

import httpx
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

BOT_ID = 777000111
MAX_TEXT = 4096  # UTF-16 code units
WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _value(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class FakeTelegram:
    def __init__(self, token: str, *, max_wait: float = 1.0) -> None:
        self.token = token
        self.max_wait = max_wait  # cap on a long poll, so tests stay quick
        self.updates: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.calls: list[str] = []  # method names, in order (a wrong token is "401")
        self.failures: list[int] = []  # status codes the next getUpdates calls answer with
        self.webhook: dict[str, str] | None = None  # {"url", "secret_token"} while one is set
        self.rearm_webhook: dict[str, str] | None = None  # set again after a deleteWebhook
        self.deliveries: list[int] = []  # HTTP status of every webhook POST, in order
        self.updates_sent: list[dict[str, Any]] = []  # updates the webhook took
        self._pusher: asyncio.Task[None] | None = None
        self._called = asyncio.Event()  # set at every call
        self._next_update = 1
        self._next_message = 1
        self._changed = asyncio.Condition()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.app = self._make_app()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the test's side --------------------------------------------------------------------
    async def user_says(
        self, chat_id: int, text: str | None, *, chat_type: str = "private", **extra: Any
    ) -> None:
        """A user sends ``text`` to the bot in chat ``chat_id``."""
        message: dict[str, Any] = {
            "message_id": self._message_id(),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": chat_type},
            "from": {"id": abs(chat_id), "is_bot": False, "first_name": "user"},
            **extra,
        }
        if text is not None:
            message["text"] = text
        async with self._changed:
            self.updates.append({"update_id": self._next_update, "message": message})
            self._next_update += 1
            self._changed.notify_all()
        if self.webhook is not None:
            self._push()

    def texts_to(self, chat_id: int) -> list[str]:
        return [m["text"] for m in self.sent if m["chat_id"] == chat_id]

    async def wait_for(self, chat_id: int, needle: str, wait: float = 10.0) -> str:
        """The first message the bot sent to ``chat_id`` that contains ``needle``."""

        async def seen() -> str:
            async with self._changed:
                while True:
                    for text in self.texts_to(chat_id):
                        if needle in text:
                            return text
                    await self._changed.wait()

        return await asyncio.wait_for(seen(), wait)

    async def wait_call(self, method: str, wait: float = 10.0) -> None:
        """Until the bot has called ``method``."""

        async def seen() -> None:
            while method not in self.calls:
                self._called.clear()
                await self._called.wait()

        await asyncio.wait_for(seen(), wait)

    # -- serving ----------------------------------------------------------------------------
    async def __aenter__(self) -> FakeTelegram:
        config = uvicorn.Config(
            self.app, lifespan="off", ws="none", http="h11", log_level="warning", log_config=None
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[self.sock]))
        for _ in range(500):
            if self._server.started:
                return self
            await asyncio.sleep(0.01)
        raise RuntimeError("the fake Telegram server did not start")

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None and self._task is not None
        if self._pusher is not None:
            self._pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pusher
        self._server.should_exit = True
        async with self._changed:
            self._changed.notify_all()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self._task, 5)
        self.sock.close()

    def _message_id(self) -> int:
        self._next_message += 1
        return self._next_message

    def _make_app(self) -> FastAPI:
        app = FastAPI()

        @app.api_route("/bot{token}/{method}", methods=["GET", "POST"])
        async def call(token: str, method: str, request: Request) -> JSONResponse:
            if token != self.token:
                self.calls.append("401")
                return _fail(401, "Unauthorized")
            self.calls.append(method)
            self._called.set()
            params: dict[str, Any] = {k: _value(v) for k, v in request.query_params.items()}
            body = (await request.body()).decode()
            if "json" in request.headers.get("content-type", ""):
                params.update(json.loads(body or "{}"))
            elif body:  # application/x-www-form-urlencoded, as PTB sends
                params.update({k: _value(v) for k, v in parse_qsl(body)})
            handler = {
                "getMe": self._get_me,
                "getUpdates": self._get_updates,
                "sendMessage": self._send_message,
                "setWebhook": self._set_webhook,
                "deleteWebhook": self._delete_webhook,
                "getWebhookInfo": self._webhook_info,
            }.get(method)
            if handler is None:
                return _fail(404, "Not Found")
            return await handler(params)

        return app

    async def _get_me(self, params: dict[str, Any]) -> JSONResponse:
        me = {"id": BOT_ID, "is_bot": True, "first_name": "xclaw", "username": "xclaw_bot"}
        return _ok(me)

    async def _get_updates(self, params: dict[str, Any]) -> JSONResponse:
        if self.webhook is not None:
            return _fail(409, WEBHOOK_CONFLICT)
        if self.failures:
            code = self.failures.pop(0)
            return _fail(
                code,
                "Conflict: terminated by other getUpdates request"
                if code == 409
                else "Bad Gateway",
            )
        offset = int(params.get("offset") or 0)
        wait = min(float(params.get("timeout") or 0), self.max_wait)
        async with self._changed:
            if offset:  # earlier updates are confirmed: Telegram forgets them
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait_for(lambda: bool(self.updates)), wait)
            return _ok(list(self.updates))

    async def _send_message(self, params: dict[str, Any]) -> JSONResponse:
        text = str(params.get("text", ""))
        if not text:
            return _fail(400, "Bad Request: message text is empty")
        if utf16_units(text) > MAX_TEXT:
            return _fail(400, "Bad Request: message is too long")
        chat_id = int(params["chat_id"])
        message = {
            "message_id": self._message_id(),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "xclaw"},
            "text": text,
        }
        async with self._changed:
            self.sent.append({"chat_id": chat_id, "text": text})
            self._changed.notify_all()
        return _ok(message)

    # -- webhook ----------------------------------------------------------------------------
    async def _set_webhook(self, params: dict[str, Any]) -> JSONResponse:
        url, secret = str(params.get("url") or ""), params.get("secret_token")
        if not url.startswith(("https://", "http://127.0.0.1")):
            return _fail(400, "Bad Request: bad webhook: HTTPS url must be provided for webhook")
        if secret is not None and not _SECRET.match(str(secret)):
            return _fail(400, "Bad Request: secret token contains unallowed characters")
        self.webhook = {"url": url, "secret_token": str(secret or "")}
        self._push()
        return _ok(True)

    async def _delete_webhook(self, params: dict[str, Any]) -> JSONResponse:
        self.webhook = None
        if self.rearm_webhook is not None:  # another deployment sets it again at once
            self.webhook, self.rearm_webhook = self.rearm_webhook, None
        return _ok(True)

    async def _webhook_info(self, params: dict[str, Any]) -> JSONResponse:
        url = self.webhook["url"] if self.webhook else ""
        return _ok({"url": url, "has_custom_certificate": False, "pending_update_count": 0})

    def _push(self) -> None:
        if self._pusher is None or self._pusher.done():
            self._pusher = asyncio.get_running_loop().create_task(self._deliver())

    async def _deliver(self) -> None:
        """POST pending updates to the webhook in order; one not taken (non-2xx) is sent
        again a little later, as Telegram does."""
        async with httpx.AsyncClient(timeout=5.0) as http:
            while self.webhook is not None and self.updates:
                hook, update = self.webhook, self.updates[0]
                headers = {"Content-Type": "application/json"}
                if hook["secret_token"]:
                    headers["X-Telegram-Bot-Api-Secret-Token"] = hook["secret_token"]
                try:
                    response = await http.post(hook["url"], json=update, headers=headers)
                    status = response.status_code
                except Exception:  # noqa: BLE001 - unreachable (or not loopback): retried
                    status = 0
                self.deliveries.append(status)
                if 200 <= status < 300:
                    async with self._changed:
                        if self.updates and self.updates[0] is update:
                            self.updates_sent.append(self.updates.pop(0))
                else:
                    await asyncio.sleep(0.1)


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"ok": True, "result": result})


def _fail(code: int, description: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error_code": code, "description": description}, code)
