"""Telegram: a bot that long-polls the Bot API (``getUpdates``) and answers with ``sendMessage``.

Built on python-telegram-bot's ``telegram.Bot`` (the issue names the SDK; its ``base_url``
points it at a local fake in tests). Only text messages of private chats are taken; the peer is
the chat id. No webhook, so nothing listens on a public port.

The Bot API puts the bot token in every URL (``/bot<TOKEN>/method``) and both httpx and the SDK
log URLs, so the adapter masks the token in the records of those loggers while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, SecretStr
from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from xclaw.gateway.channels.base import ChatAdapter, DmScope
from xclaw.redact import MASK, redact

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

log = logging.getLogger(__name__)
_URL_LOGGERS = ("telegram", "httpx", "httpcore")  # and their children: they log request URLs


class TelegramSettings(BaseModel):
    """How to reach a Telegram bot (``@BotFather`` gives the token)."""

    bot_token: SecretStr
    base_url: str = "https://api.telegram.org"
    poll_timeout: int = Field(default=30, ge=0, le=50)  # seconds a getUpdates call may wait
    retry_delay: float = Field(default=2.0, gt=0)  # first pause after a failed poll; doubles


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

    async def start(self) -> None:
        """Check the token (``getMe``) and start polling; a rejected token raises here."""
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
        except TelegramError as err:
            await _quietly(bot.shutdown())
            self._unmask_logs()
            raise RuntimeError(f"telegram: the bot could not start ({self._safe(err)})") from None
        self._bot = bot
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

    async def send_text(self, peer: str, text: str) -> None:
        if self._bot is None:
            raise RuntimeError("telegram: the adapter is not started")
        await self._bot.send_message(chat_id=int(peer), text=text)

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
            except (Conflict, TelegramError, ValueError, TypeError) as err:
                # network trouble, another poller, or an update the SDK could not parse
                log.warning("telegram: polling failed, retrying: %s", self._safe(err))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            delay = self.settings.retry_delay
            for update in updates:
                self._offset = update.update_id + 1  # confirms it on the next call
                self._take(update)

    def _take(self, update: Update) -> None:
        message = update.message
        if message is None or message.text is None or message.chat.type != "private":
            return
        try:
            self.handle_text(str(message.chat.id), message.text)
        except Exception as err:  # noqa: BLE001 - one bad message must not stop the poller
            log.warning("telegram: a message was not handled: %s", self._safe(err))

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


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


async def _quietly(work: Awaitable[object]) -> None:
    with contextlib.suppress(Exception):
        await work
