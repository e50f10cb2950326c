"""Notifications: targets (stdout, a gateway chat channel, a Feishu/Lark bot webhook, any
webhook URL), bounded retries with exponential backoff, and a dead-letter log.

A notice that every attempt failed to deliver is appended to ``dead-letters.jsonl`` (one
``write`` of one line on an ``O_APPEND`` descriptor, then fsync: a reader never sees half a
line). Target URLs often hold a token, so records and logs name the target, never its URL.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

import httpx

from xclaw.core.events import Event, EventBus
from xclaw.redact import redact, redact_json, register_secret

__all__ = [
    "ChannelTarget",
    "DeadLetterLog",
    "FeishuBotTarget",
    "Notice",
    "NotifyError",
    "Notifier",
    "Receipt",
    "StdoutTarget",
    "Target",
    "WebhookTarget",
    "feishu_bot_sign",
]

log = logging.getLogger(__name__)
Level = Literal["INFO", "WARNING", "CRITICAL"]
_PREFIX = {"INFO": "[INFO]", "WARNING": "[WARNING]", "CRITICAL": "[CRITICAL]"}
_FEISHU_RETRY_CODES = frozenset({11232, 9499})  # frequency limits: worth another try


@dataclass(frozen=True, slots=True)
class Notice:
    title: str
    message: str
    level: Level = "INFO"
    source: str = ""  # job id or hook:NAME
    session_id: str = ""

    def text(self) -> str:
        head = f"{_PREFIX[self.level]} {self.title}"
        where = f"\n({self.source} {self.session_id})".rstrip() if self.source else ""
        return f"{head}\n{self.message}{where}"


class NotifyError(Exception):
    """One failed delivery attempt; ``retryable`` says whether another may succeed."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Target(ABC):
    name: str

    @abstractmethod
    async def send(self, notice: Notice) -> None:
        """Deliver once or raise ``NotifyError``."""


class StdoutTarget(Target):
    def __init__(self, name: str = "stdout", stream: TextIO | None = None) -> None:
        self.name = name
        self.stream = stream

    async def send(self, notice: Notice) -> None:
        out = self.stream or sys.stdout
        out.write(redact(notice.text()) + "\n")
        out.flush()


class TextSender(Protocol):
    """A gateway chat adapter (``ChatAdapter.send_text``)."""

    limit: int

    async def send_text(self, peer: str, text: str) -> None: ...


class ChannelTarget(Target):
    def __init__(self, name: str, adapter: TextSender, peer: str) -> None:
        self.name = name
        self.adapter = adapter
        self.peer = peer

    async def send(self, notice: Notice) -> None:
        text = redact(notice.text())[: self.adapter.limit]
        try:
            await self.adapter.send_text(self.peer, text)
        except Exception as err:  # noqa: BLE001 - any platform error is one failed attempt
            failure = f"channel send failed: {type(err).__name__}"
            raise NotifyError(failure, retryable=True) from None


def feishu_bot_sign(timestamp: str, secret: str) -> str:
    """A Feishu/Lark custom bot's signature: base64(HMAC-SHA256(key=ts+"\\n"+secret, ""))."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


class _HttpTarget(Target):
    def __init__(self, name: str, url: str, secret: str | None, client: httpx.AsyncClient) -> None:
        self.name = name
        self.url = url
        self.secret = secret
        self.client = client
        register_secret(url)  # a bot URL is a credential: masked wherever it might appear
        if secret:
            register_secret(secret)

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        try:
            response = await self.client.post(self.url, json=body, headers=headers)
        except httpx.HTTPError as err:
            raise NotifyError(f"{type(err).__name__} reaching the target", retryable=True) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise NotifyError(f"HTTP {response.status_code}", retryable=True)
        if response.status_code >= 400:
            raise NotifyError(f"HTTP {response.status_code}", retryable=False)
        return response


class FeishuBotTarget(_HttpTarget):
    """A Feishu/Lark group bot webhook (``/open-apis/bot/v2/hook/...``), signed when the bot
    has a secret."""

    async def send(self, notice: Notice) -> None:
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": redact(notice.text())}}
        if self.secret:
            stamp = str(int(time.time()))
            body.update(timestamp=stamp, sign=feishu_bot_sign(stamp, self.secret))
        response = await self._post(body, {})
        try:
            data = response.json()
        except ValueError:
            raise NotifyError("the bot answered with something but JSON", retryable=True) from None
        code = data.get("code", data.get("StatusCode", 0)) if isinstance(data, dict) else -1
        if code != 0:
            msg = str(data.get("msg", "")) if isinstance(data, dict) else ""
            raise NotifyError(
                f"Feishu refused the message: code {code} {msg[:120]}",
                retryable=code in _FEISHU_RETRY_CODES,
            )


class WebhookTarget(_HttpTarget):
    """Any URL: the notice as JSON, with ``Authorization: Bearer`` when a secret is set."""

    async def send(self, notice: Notice) -> None:
        headers = {"Authorization": f"Bearer {self.secret}"} if self.secret else {}
        await self._post(redact_json(asdict(notice)) | {"text": redact(notice.text())}, headers)


class DeadLetterLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = (json.dumps(redact_json(dict(record)), ensure_ascii=False) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line)  # one write on O_APPEND: the line lands whole, at the end
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out: list[dict[str, Any]] = []
        for line in text.splitlines():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a crashed writer from an older version
            if isinstance(item, dict):
                out.append(item)
        return out


@dataclass(frozen=True, slots=True)
class Receipt:
    ok: bool
    target: str
    attempts: int
    error: str = ""


Sleep = Callable[[float], Awaitable[None]]


@dataclass
class Notifier:
    targets: dict[str, Target]
    dead_letters: DeadLetterLog
    attempts: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    bus: EventBus = field(default_factory=EventBus)
    sleep: Sleep = asyncio.sleep

    async def notify(self, target_name: str, notice: Notice) -> Receipt:
        target = self.targets.get(target_name)
        if target is None:
            receipt = Receipt(False, target_name, 0, f"no notify target named {target_name!r}")
            self._dead(notice, receipt)
            return receipt
        error = ""
        attempt = 0
        for attempt in range(1, self.attempts + 1):
            try:
                await target.send(notice)
            except NotifyError as err:
                error = str(err)
                log.warning("notify %s attempt %d failed: %s", target_name, attempt, redact(error))
                if not err.retryable or attempt == self.attempts:
                    break
                await self.sleep(min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s))
                continue
            receipt = Receipt(True, target_name, attempt)
            self._emit("notify.sent", notice, receipt)
            return receipt
        receipt = Receipt(False, target_name, attempt, error)
        self._dead(notice, receipt)
        return receipt

    def _dead(self, notice: Notice, receipt: Receipt) -> None:
        self.dead_letters.append(
            {"at": time.time(), **asdict(notice), "target": receipt.target}
            | {"attempts": receipt.attempts, "error": receipt.error}
        )
        self._emit("notify.failed", notice, receipt)

    def _emit(self, kind: Literal["notify.sent", "notify.failed"], n: Notice, r: Receipt) -> None:
        payload = {"source": n.source, "target": r.target, "attempts": r.attempts}
        if r.error:
            payload["error"] = r.error
        self.bus.emit(Event(kind, n.session_id, 0, payload))
