"""Feishu/Lark channel in event-callback mode: Feishu POSTs events to ``adapter.router``.

Mount the router on the gateway app (``app.include_router(adapter.router)``; before a
catch-all static mount) and set the request URL in the Feishu console to
``https://HOST{settings.path}``. A callback is checked before anything happens:

- ``url_verification``: the verification token must match; the challenge is echoed back;
- with an encrypt key: ``X-Lark-Signature`` must equal ``sha256(timestamp + nonce +
  encrypt_key + body)`` and the timestamp must be at most ``max_skew`` seconds old; the body
  may be ``{"encrypt": ...}`` (AES-256-CBC, key ``sha256(encrypt_key)``, IV the first 16
  bytes of the base64-decoded data);
- always: the event's verification token must match (``header.token`` or ``token``).

A refused callback gets 401 and nothing else. Events are de-duplicated by ``event_id``
(Feishu retries); ``im.message.receive_v1`` text messages from users become tasks or commands;
the bot's own messages are ignored. Replies use a ``tenant_access_token`` (cached until shortly
before it expires): a reply to the message being answered, or a new message to the chat when
there is none.

Chats (the event's ``message.chat_type``): a direct chat (``p2p``) is one peer, its
``chat_id``. In a group, a task is taken only when it @mentions the bot (``group_mention``,
on by default; the bot's ``open_id`` comes from ``GET /open-apis/bot/v3/info``; commands such
as ``/approve ID`` need no mention). ``group_scope="chat"`` (the default) makes the group one
session that its members share: their tasks run one at a time in order, and an approval (or
``/stop``) is taken only from the member whose message started the turn (the sender's
``open_id``), who is @mentioned in the prompt. ``"sender"`` gives each member of each group a
session of their own (peer ``{chat_id}:{open_id}``); replies still go to the group.

The official ``lark-oapi`` SDK is not used: it is a 10k-file untyped package built on the
blocking ``requests`` (plus pycryptodome); the callback checks and two REST calls are small.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Literal

import httpx
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, SecretStr

from xclaw.gateway.channels.base import ChatAdapter, DmScope
from xclaw.redact import register_secret

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

__all__ = ["FeishuAdapter", "FeishuError", "FeishuSettings", "decrypt_event", "sign"]

log = logging.getLogger(__name__)
_TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
_BOT_INFO_PATH = "/open-apis/bot/v3/info"
_SEEN_MAX = 2048
_OPEN_ID = re.compile(r"^ou_[A-Za-z0-9_-]{1,128}$")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # chat and message ids (oc_…, om_…)
_COMMANDS = ("/approve", "/approve-task", "/deny", "/stop")


class FeishuSettings(BaseModel):
    """A Feishu/Lark app (custom app with a bot) in event-callback mode."""

    app_id: str
    app_secret: SecretStr
    verification_token: SecretStr
    encrypt_key: SecretStr | None = None
    base_url: str = "https://open.feishu.cn"  # Lark: https://open.larksuite.com
    path: str = "/channels/feishu/events"
    max_skew: float = 300.0  # seconds a signed callback may be old
    timeout: float = 10.0
    group_scope: Literal["chat", "sender"] = "chat"  # a group's session: shared, or per member
    group_mention: bool = True  # in a group, only tasks that @mention the bot are taken


class FeishuError(Exception):
    """The Open API refused a call (its code and message; never a secret)."""


def sign(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    """The ``X-Lark-Signature`` Feishu sends: hex sha256 of timestamp+nonce+key+body."""
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


def decrypt_event(encrypt_key: str, data: str) -> str:
    """The plaintext of an ``{"encrypt": data}`` callback."""
    raw = base64.b64decode(data)
    key = hashlib.sha256(encrypt_key.encode()).digest()
    decryptor = Cipher(algorithms.AES(key), modes.CBC(raw[:16])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return (unpadder.update(padded) + unpadder.finalize()).decode()


class FeishuAdapter(ChatAdapter):
    """Feishu/Lark bot: callbacks in through ``router``, replies out through the Open API."""

    name = "feishu"
    limit = 4000

    def __init__(
        self,
        gateway: Gateway,
        settings: FeishuSettings,
        *,
        dm_scope: DmScope = "per-peer",
    ) -> None:
        super().__init__(gateway, dm_scope=dm_scope)
        self.settings = settings
        self._client: httpx.AsyncClient | None = None
        self._token: tuple[str, float] | None = None  # (token, monotonic expiry)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._last_message: dict[str, str] = {}  # peer -> its latest message_id
        self._chats: dict[str, str] = {}  # peer -> its chat_id (a group member's peer)
        self._bot_open_id: str | None = None
        self._bot_info_failed = False
        self.router = APIRouter()
        self.router.add_api_route(settings.path, self._callback, methods=["POST"])

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.settings.base_url.rstrip("/"), timeout=self.settings.timeout
            )

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        self._token = None

    # -- outgoing ---------------------------------------------------------------------------
    async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None:
        body: dict[str, Any] = {"msg_type": "text", "content": json.dumps({"text": text})}
        reply_to = reply_to or self._last_message.get(peer)
        if reply_to is not None:
            await self._call(f"/open-apis/im/v1/messages/{reply_to}/reply", body)
        else:
            body["receive_id"] = self._chats.get(peer, peer)
            await self._call("/open-apis/im/v1/messages?receive_id_type=chat_id", body)

    def mention(self, sender: str) -> str:
        """An @ of the member in a text message (an open_id only: nothing else goes in)."""
        return f'<at user_id="{sender}"></at> ' if _OPEN_ID.match(sender) else ""

    async def _call(
        self, path: str, body: dict[str, Any] | None = None, *, method: str = "POST"
    ) -> dict[str, Any]:
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {await self._tenant_token()}"}
            response = await self._http().request(method, path, json=body, headers=headers)
            data = _json(response)
            code = data.get("code")
            if code == 0:
                return data
            if code in (99991661, 99991663) and attempt == 1:  # token missing/expired
                self._token = None
                continue
            raise FeishuError(f"Open API {response.status_code} code {code}: {data.get('msg')}")
        raise AssertionError("unreachable")

    async def _tenant_token(self) -> str:
        if self._token is not None and time.monotonic() < self._token[1]:
            return self._token[0]
        payload = {
            "app_id": self.settings.app_id,
            "app_secret": self.settings.app_secret.get_secret_value(),
        }
        response = await self._http().post(_TOKEN_PATH, json=payload)
        data = _json(response)
        token = data.get("tenant_access_token")
        if data.get("code") != 0 or not isinstance(token, str):
            raise FeishuError(f"tenant token refused: code {data.get('code')}: {data.get('msg')}")
        register_secret(token)
        expire = float(data.get("expire") or 0)
        self._token = (token, time.monotonic() + max(expire - 120.0, 0.0))
        return token

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # started lazily in the serving loop when start() was skipped
            self._client = httpx.AsyncClient(
                base_url=self.settings.base_url.rstrip("/"), timeout=self.settings.timeout
            )
        return self._client

    # -- incoming ---------------------------------------------------------------------------
    async def _callback(self, request: Request) -> Response:
        body = await request.body()
        event = self._open(body)
        if event is None:
            return _refused(400)
        if event.get("type") == "url_verification":
            if not self._token_ok(event.get("token")):
                return _refused(401)
            return JSONResponse({"challenge": event.get("challenge")})
        if not self._signature_ok(request, body):
            return _refused(401)
        header = event.get("header") if isinstance(event.get("header"), dict) else {}
        token = header.get("token") if header else event.get("token")
        if not self._token_ok(token):
            return _refused(401)
        event_id = str((header or {}).get("event_id") or event.get("uuid") or "")
        if event_id and self._duplicate(event_id):
            return JSONResponse({})
        if (header or {}).get("event_type") == "im.message.receive_v1":
            await self._on_message(event.get("event"))
        return JSONResponse({})

    def _open(self, body: bytes) -> dict[str, Any] | None:
        """The callback's JSON, decrypted when it is ``{"encrypt": ...}`` (None: unreadable)."""
        try:
            outer = json.loads(body)
            if isinstance(outer, dict) and "encrypt" in outer:
                key = self.settings.encrypt_key
                if key is None:
                    return None
                outer = json.loads(decrypt_event(key.get_secret_value(), str(outer["encrypt"])))
        except (ValueError, TypeError):
            log.warning("feishu: an unreadable callback was refused")
            return None
        return outer if isinstance(outer, dict) else None

    def _signature_ok(self, request: Request, body: bytes) -> bool:
        key = self.settings.encrypt_key
        if key is None:
            return True  # token-only mode: the token check follows
        timestamp = request.headers.get("x-lark-request-timestamp", "")
        nonce = request.headers.get("x-lark-request-nonce", "")
        given = request.headers.get("x-lark-signature", "")
        try:
            age = abs(time.time() - float(timestamp))
        except ValueError:
            age = float("inf")
        if age > self.settings.max_skew:
            log.warning("feishu: a callback with a stale or missing timestamp was refused")
            return False
        expected = sign(timestamp, nonce, key.get_secret_value(), body)
        if not hmac.compare_digest(expected, given):
            log.warning("feishu: a callback with a bad signature was refused")
            return False
        return True

    def _token_ok(self, token: object) -> bool:
        expected = self.settings.verification_token.get_secret_value()
        ok = isinstance(token, str) and hmac.compare_digest(token.encode(), expected.encode())
        if not ok:
            log.warning("feishu: a callback with a wrong verification token was refused")
        return ok

    def _duplicate(self, event_id: str) -> bool:
        if event_id in self._seen:
            return True
        self._seen[event_id] = None
        while len(self._seen) > _SEEN_MAX:
            self._seen.popitem(last=False)
        return False

    async def _on_message(self, event: object) -> None:
        if not isinstance(event, dict):
            return
        sender = event.get("sender") if isinstance(event.get("sender"), dict) else {}
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        if not sender or not message or sender.get("sender_type") != "user":
            return  # the bot's own (and other apps') messages
        if message.get("message_type") != "text":
            return
        chat_id, message_id = message.get("chat_id"), message.get("message_id")
        if not isinstance(chat_id, str) or not _ID.match(chat_id):
            return
        ref = message_id if isinstance(message_id, str) and _ID.match(message_id) else None
        try:
            text = str(json.loads(message.get("content") or "{}").get("text") or "")
        except (ValueError, AttributeError):
            return
        mentions = [m for m in message.get("mentions") or [] if isinstance(m, dict)]
        for mention in mentions:  # "@_user_1" placeholders in groups
            text = text.replace(str(mention.get("key") or "\0"), "")
        text = text.strip()
        if not text:
            return
        if message.get("chat_type") == "p2p":
            if ref is not None:
                self._last_message[chat_id] = ref
            self.handle_text(chat_id, text, ref=ref)
            return
        await self._group_message(chat_id, sender, mentions, text, ref)

    async def _group_message(
        self,
        chat_id: str,
        sender: dict[str, Any],
        mentions: list[dict[str, Any]],
        text: str,
        ref: str | None,
    ) -> None:
        ids = sender.get("sender_id") if isinstance(sender.get("sender_id"), dict) else {}
        open_id = (ids or {}).get("open_id")
        if not isinstance(open_id, str) or not _OPEN_ID.match(open_id):
            return  # nobody to bind an approval to
        command = text.split(maxsplit=1)[0] in _COMMANDS
        if self.settings.group_mention and not command and not await self._mentioned(mentions):
            return
        if self.settings.group_scope == "sender":
            peer = f"{chat_id}:{open_id}"
            self._chats[peer] = chat_id
            if ref is not None:
                self._last_message[peer] = ref
            self.handle_text(peer, text, ref=ref)
            return
        self.handle_text(chat_id, text, sender=open_id, ref=ref)

    async def _mentioned(self, mentions: list[dict[str, Any]]) -> bool:
        """The bot is among ``mentions``. Should its own open_id be unknown (the bot info
        call failed), any mention counts: without the "all group messages" permission Feishu
        only delivers the messages that @mention the bot."""
        bot = await self._bot_id()
        if bot is None:
            return bool(mentions)
        for mention in mentions:
            ids = mention.get("id")
            if isinstance(ids, dict) and ids.get("open_id") == bot:
                return True
        return False

    async def _bot_id(self) -> str | None:
        if self._bot_open_id is None:
            try:
                data = await self._call(_BOT_INFO_PATH, method="GET")
            except (FeishuError, httpx.HTTPError) as err:
                if not self._bot_info_failed:
                    log.warning("feishu: the bot's open_id is unknown (%s)", err)
                self._bot_info_failed = True
                return None
            bot = data.get("bot")
            found = bot.get("open_id") if isinstance(bot, dict) else None
            if isinstance(found, str) and _OPEN_ID.match(found):
                self._bot_open_id = found
        return self._bot_open_id


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise FeishuError(f"Open API {response.status_code}: not a JSON object")
    return data


def _refused(status: int) -> Response:
    return JSONResponse({"error": status}, status_code=status)
