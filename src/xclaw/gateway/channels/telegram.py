"""Telegram: a bot that long-polls the Bot API (``getUpdates``) or receives a webhook, and
answers with ``sendMessage``.

Built on python-telegram-bot's ``telegram.Bot`` (the issue names the SDK; its ``base_url``
points it at a local fake in tests). Only text messages of private chats are taken; the peer is
the chat id. Messages are at most 4,096 UTF-16 code units (how Telegram counts), and are split
there.

Two ways in, as the Bot API has (only one can be on: ``getUpdates`` answers 409 while a webhook
is set):

- ``mode="polling"`` (the default): nothing listens on a public port. A 409 from
  ``getUpdates`` because a webhook is set (left by an earlier deployment) is answered by
  ``deleteWebhook``, once, with a warning; a webhook that comes back after that (another
  deployment sets it) stops polling with ``TELEGRAM_WEBHOOK_ACTIVE``, naming the options to
  choose one mode. A 409 from another poller of the same bot is retried with back-off.
- ``mode="webhook"``: ``start`` calls ``setWebhook(webhook_url, secret_token=...)`` and
  ``router`` (mounted on the gateway app like Feishu's) takes the updates at
  ``webhook_path``. A call without the secret in ``X-Telegram-Bot-Api-Secret-Token`` gets 401;
  the secret is ``webhook_secret`` or, unset, a random one made at each start. The webhook
  stays set when the gateway stops: Telegram keeps the updates until it is back.

The Bot API puts the bot token in every URL (``/bot<TOKEN>/method``) and both httpx and the SDK
log URLs, so the adapter masks the token in the records of those loggers while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, SecretStr, model_validator
from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from xclaw.gateway.channels.base import ChannelError, ChatAdapter, DmScope, split_text, utf16_len
from xclaw.redact import MASK, redact, register_secret

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

log = logging.getLogger(__name__)
_URL_LOGGERS = ("telegram", "httpx", "httpcore")  # and their children: they log request URLs
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
_BODY_MAX = 1 << 20  # bytes of one webhook update
_SEEN_MAX = 2048
_MODE_OPTIONS = "XCLAW_TELEGRAM_MODE=webhook with XCLAW_TELEGRAM_WEBHOOK_URL"


class TelegramSettings(BaseModel):
    """How to reach a Telegram bot (``@BotFather`` gives the token) and how updates come."""

    bot_token: SecretStr
    base_url: str = "https://api.telegram.org"
    poll_timeout: int = Field(default=30, ge=0, le=50)  # seconds a getUpdates call may wait
    retry_delay: float = Field(default=2.0, gt=0)  # first pause after a failed poll; doubles
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None  # the public https URL Telegram posts updates to
    webhook_path: str = Field(default="/channels/telegram/webhook", pattern=r"^/[\w/.-]*$")
    webhook_secret: SecretStr | None = Field(default=None)  # 1-256 of A-Z a-z 0-9 _ -

    @model_validator(mode="after")
    def _webhook_complete(self) -> TelegramSettings:
        if self.mode == "webhook" and not self.webhook_url:
            raise ValueError("webhook mode needs webhook_url")
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else None
        if secret is not None and not _secret_ok(secret):
            raise ValueError("webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
        return self


def _secret_ok(secret: str) -> bool:
    return 0 < len(secret) <= 256 and all(
        c.isascii() and (c.isalnum() or c in "_-") for c in secret
    )


class _TokenFilter(logging.Filter):
    """Masks one token (and whatever :func:`redact` knows) in a logger's records."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logged as it is
            return True
        record.msg = redact(message.replace(self.token, MASK))
        record.args = None
        return True


class TelegramAdapter(ChatAdapter):
    """Private chats with a Telegram bot as gateway peers (peer = chat id)."""

    name = "telegram"
    limit = 4096
    utf16 = True

    def __init__(
        self, gateway: Gateway, settings: TelegramSettings, *, dm_scope: DmScope = "per-peer"
    ) -> None:
        super().__init__(gateway, dm_scope=dm_scope)
        self.settings = settings
        self._filter = _TokenFilter(settings.bot_token.get_secret_value())
        self._loggers: list[logging.Logger] = []
        self._bot: Bot | None = None
        self._poller: asyncio.Task[None] | None = None
        self._offset: int | None = None
        self._deleted_webhook = False
        self.failure: ChannelError | None = None  # why updates stopped coming, if they did
        self._seen: OrderedDict[int, None] = OrderedDict()
        given = settings.webhook_secret
        self._secret = given.get_secret_value() if given else secrets.token_urlsafe(32)
        register_secret(self._secret)
        if settings.mode == "webhook":
            self.router = APIRouter()
            self.router.add_api_route(settings.webhook_path, self._webhook, methods=["POST"])

    async def start(self) -> None:
        """Check the token (``getMe``), then poll or set the webhook; a refusal raises here."""
        self._mask_logs()
        timeout = self.settings.poll_timeout
        bot = Bot(
            self.settings.bot_token.get_secret_value(),
            base_url=self.settings.base_url.rstrip("/") + "/bot",
            request=HTTPXRequest(connect_timeout=10.0, read_timeout=10.0),
            get_updates_request=HTTPXRequest(connect_timeout=10.0, read_timeout=timeout + 10.0),
        )
        try:
            await bot.initialize()
            if self.settings.mode == "webhook":
                assert self.settings.webhook_url is not None  # the settings check it
                await bot.set_webhook(
                    self.settings.webhook_url,
                    secret_token=self._secret,
                    allowed_updates=["message"],
                )
        except TelegramError as err:
            await _quietly(bot.shutdown())
            self._unmask_logs()
            raise ChannelError(
                f"telegram: the bot could not start ({self._safe(err)})",
                code="TELEGRAM_START_FAILED",
                hint="Check TELEGRAM_BOT_TOKEN (and XCLAW_TELEGRAM_WEBHOOK_URL in webhook mode).",
            ) from None
        self._bot = bot
        if self.settings.mode == "webhook":
            log.info("telegram: updates come by webhook at %s", self.settings.webhook_path)
        else:
            self._poller = asyncio.get_running_loop().create_task(self._poll(bot))

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        for channel in self._peers.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(channel.flushed(), 5)
        if self._bot is not None:
            await _quietly(self._bot.shutdown())
            self._bot = None
        self._unmask_logs()

    async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None:
        if self._bot is None:
            raise RuntimeError("telegram: the adapter is not started")
        # callers outside the gateway (chronos) cut by characters: what is over still fits
        pieces = (
            split_text(text, self.limit, utf16=True) if utf16_len(text) > self.limit else [text]
        )
        for piece in pieces:
            await self._bot.send_message(chat_id=int(peer), text=piece)

    # -- polling ----------------------------------------------------------------------------
    async def _poll(self, bot: Bot) -> None:
        delay = self.settings.retry_delay
        while True:
            try:
                updates = await bot.get_updates(
                    offset=self._offset,
                    timeout=self.settings.poll_timeout,
                    allowed_updates=["message"],
                )
            except (InvalidToken, Forbidden) as err:
                log.error("telegram: polling stopped: %s", self._safe(err))
                return
            except RetryAfter as err:
                await asyncio.sleep(_seconds(err.retry_after))
                continue
            except Conflict as err:
                if "webhook" not in str(err).lower():  # another getUpdates of this bot
                    log.warning(
                        "telegram [TELEGRAM_POLL_CONFLICT]: another process polls this bot "
                        "(only one may); retrying: %s",
                        self._safe(err),
                    )
                elif not await self._drop_webhook(bot, err):
                    return
                else:
                    continue
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            except (TelegramError, ValueError, TypeError) as err:
                # network trouble, or an update the SDK could not parse
                log.warning("telegram: polling failed, retrying: %s", self._safe(err))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            delay = self.settings.retry_delay
            for update in updates:
                self._offset = update.update_id + 1  # confirms it on the next call
                self._take(update)

    async def _drop_webhook(self, bot: Bot, err: Conflict) -> bool:
        """``getUpdates`` is refused while a webhook is set: delete it once (True: poll on);
        a webhook set again after that is someone else's, not ours to fight (False)."""
        if self._deleted_webhook:
            self.failure = ChannelError(
                "getUpdates still answers 409: a webhook was set on this bot again after xclaw "
                "deleted it, so another deployment receives its updates. Polling stopped.",
                code="TELEGRAM_WEBHOOK_ACTIVE",
                hint=f"Use one way in: stop the other deployment, or set {_MODE_OPTIONS}.",
            )
            log.error("telegram: %s", self.failure)
            return False
        log.warning(
            "telegram: this bot has a webhook set (%s), and Telegram refuses getUpdates while "
            "it is; deleting the webhook once so polling works (to receive updates by webhook "
            "instead, set %s)",
            self._safe(err),
            _MODE_OPTIONS,
        )
        try:
            await bot.delete_webhook()
        except TelegramError as failed:
            log.warning("telegram: deleteWebhook failed: %s", self._safe(failed))
        self._deleted_webhook = True
        return True

    def _take(self, update: Update) -> None:
        message = update.message
        if message is None or message.text is None or message.chat.type != "private":
            return
        try:
            self.handle_text(str(message.chat.id), message.text)
        except Exception as err:  # noqa: BLE001 - one bad message must not stop the poller
            log.warning("telegram: a message was not handled: %s", self._safe(err))

    # -- webhook ----------------------------------------------------------------------------
    async def _webhook(self, request: Request) -> Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self._secret.encode()):
            log.warning("telegram: a webhook call without the right secret token was refused")
            return _status(401)
        if self._bot is None:
            return _status(503)  # not started (or stopping): Telegram sends it again
        body = await _read_capped(request, _BODY_MAX)
        if body is None:
            return _status(413)
        try:
            data = json.loads(body)
        except ValueError:
            return _status(400)
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            return _status(400)
        if self._duplicate(update_id):  # Telegram retries what it thinks was not taken
            return JSONResponse({})
        try:
            update = Update.de_json(data, self._bot)
        except (TelegramError, ValueError, TypeError, KeyError, AttributeError) as err:
            # answered 200 anyway: Telegram would send the same unreadable update forever
            log.warning("telegram: an update could not be read: %s", type(err).__name__)
            return JSONResponse({})
        self._take(update)
        return JSONResponse({})

    def _duplicate(self, update_id: int) -> bool:
        if update_id in self._seen:
            return True
        self._seen[update_id] = None
        while len(self._seen) > _SEEN_MAX:
            self._seen.popitem(last=False)
        return False

    # -- secrets ----------------------------------------------------------------------------
    def _safe(self, err: BaseException) -> str:
        return f"{type(err).__name__}: {self._filter_text(str(err))}"

    def _filter_text(self, text: str) -> str:
        return redact(text.replace(self._filter.token, MASK))

    def _mask_logs(self) -> None:
        names = [
            name
            for name in list(logging.root.manager.loggerDict)
            if name.split(".")[0] in _URL_LOGGERS
        ]
        for name in {*_URL_LOGGERS, *names}:
            logger = logging.getLogger(name)
            if self._filter not in logger.filters:
                logger.addFilter(self._filter)
                self._loggers.append(logger)

    def _unmask_logs(self) -> None:
        for logger in self._loggers:
            logger.removeFilter(self._filter)
        self._loggers = []


async def _read_capped(request: Request, cap: int) -> bytes | None:
    """The request body, or None when it is longer than ``cap`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _status(code: int) -> Response:
    return JSONResponse({"error": code}, status_code=code)


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _quietly(work: Awaitable[object]) -> None:
    with contextlib.suppress(Exception):
        await work
