"""``POST /hooks/<name>``: outside systems start runs.

Every delivery is checked before anything happens, cheapest first and the body last:
1. the hook exists and carries credentials: a bearer token (compared in constant time), or a
   GitHub ``X-Hub-Signature-256`` header to verify once the body is read;
2. a timestamp header, when the hook names one, within the tolerance (it is then signed too:
   the HMAC covers ``timestamp + "." + body``);
3. the size: a ``Content-Length`` over the limit is refused unread, and the body is read
   only up to the limit (a chunked body cannot pass it either);
4. the HMAC-SHA256 of the body, compared in constant time;
5. replays: the delivery id (when the hook names its header) and the signature are
   remembered for the replay window; a second sight is refused.
Refusals are 401 (413 for size, 400 for a body that is not a JSON object) and are logged with
the hook name, the reason and the size, never the body or a header value.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from xclaw.chronos.clock import Clock
from xclaw.chronos.store import ChronosStore
from xclaw.config import ChronosHookConfig

__all__ = ["Delivery", "HookSpec", "github_signature", "webhook_router"]

log = logging.getLogger(__name__)
_PRINTABLE = re.compile(r"[^A-Za-z0-9_.:-]")
_MAX_ID = 200


@dataclass(frozen=True, slots=True)
class HookSpec:
    name: str
    auth: Literal["github", "bearer"]
    secret: str = field(repr=False)
    config: ChronosHookConfig


@dataclass(frozen=True, slots=True)
class Delivery:
    hook: str
    delivery_id: str | None
    event: str | None  # X-GitHub-Event, when sent
    payload: dict[str, Any]


OnDelivery = Callable[[HookSpec, Delivery], str | None]
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def github_signature(secret: str, body: bytes, timestamp: str | None = None) -> str:
    signed = (timestamp + ".").encode() + body if timestamp is not None else body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def webhook_router(
    hooks: Mapping[str, HookSpec],
    store: ChronosStore,
    on_delivery: OnDelivery,
    *,
    clock: Clock,
    lifespan: Lifespan | None = None,
) -> APIRouter:
    """The router to mount on the gateway app (or any FastAPI app)."""
    router = APIRouter(lifespan=lifespan) if lifespan is not None else APIRouter()

    @router.post("/hooks/{name}")
    async def receive(name: str, request: Request) -> Response:
        size = request.headers.get("content-length", "?")
        try:
            hook = hooks.get(name)
            if hook is None:
                raise _Refused(401, "unknown hook")
            delivery = await _check(hook, request, store, clock)
        except _Refused as refused:
            peer = request.client.host if request.client else "?"
            log.warning(
                "webhook %s refused (%d, %s): %s bytes from %s",
                _PRINTABLE.sub("?", name[:64]),
                refused.status,
                refused.reason,
                _PRINTABLE.sub("?", size[:20]),
                peer,
            )
            return JSONResponse({"error": refused.status}, status_code=refused.status)
        session_id = on_delivery(hook, delivery)
        if session_id is None:
            return JSONResponse({"accepted": True, "run": False}, status_code=200)
        log.info("webhook %s accepted: session %s", name, session_id)
        return JSONResponse({"accepted": True, "session": session_id}, status_code=202)

    return router


async def _check(hook: HookSpec, request: Request, store: ChronosStore, clock: Clock) -> Delivery:
    cfg = hook.config
    headers = request.headers
    signature = ""
    if hook.auth == "bearer":
        given = headers.get("authorization", "")
        token = given[7:] if given[:7].lower() == "bearer " else ""
        if not token or not hmac.compare_digest(token.encode(), hook.secret.encode()):
            raise _Refused(401, "missing or wrong bearer token")
    else:
        signature = headers.get("x-hub-signature-256", "")
        if not signature.startswith("sha256="):
            raise _Refused(401, "unsigned")
    timestamp = _fresh_timestamp(cfg, headers, clock)
    body = await _read_capped(request, cfg.max_body_bytes)
    if hook.auth == "github":
        expected = github_signature(hook.secret, body, timestamp)
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise _Refused(401, "bad signature")
    delivery_id = _remember(hook, headers, store, clock, signature)
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise _Refused(400, "the body is not a JSON object")
    event = headers.get("x-github-event")
    return Delivery(hook.name, delivery_id, event[:_MAX_ID] if event else None, payload)


def _fresh_timestamp(
    cfg: ChronosHookConfig, headers: Mapping[str, str], clock: Clock
) -> str | None:
    if not cfg.timestamp_header:
        return None
    raw = headers.get(cfg.timestamp_header.lower(), "")
    try:
        sent = float(raw)
    except ValueError:
        raise _Refused(401, "missing or malformed timestamp") from None
    if abs(clock.now().timestamp() - sent) > cfg.timestamp_tolerance_s:
        raise _Refused(401, "timestamp outside the tolerance")
    return raw


async def _read_capped(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _Refused(400, "malformed Content-Length")
        if int(declared) > cap:
            raise _Refused(413, "Content-Length over the limit")
    chunks: list[bytes] = []
    size = 0
    stream: AsyncIterator[bytes] = request.stream()
    async for chunk in stream:
        size += len(chunk)
        if size > cap:
            raise _Refused(413, "body over the limit")
        chunks.append(chunk)
    return b"".join(chunks)


def _remember(
    hook: HookSpec, headers: Mapping[str, str], store: ChronosStore, clock: Clock, signature: str
) -> str | None:
    """Refuse a delivery seen before (by id, and by signature: an id is not signed)."""
    cfg = hook.config
    now = clock.now().timestamp()
    delivery_id: str | None = None
    if cfg.delivery_header:
        delivery_id = headers.get(cfg.delivery_header.lower(), "")
        if not delivery_id or len(delivery_id) > _MAX_ID:
            raise _Refused(401, "missing delivery id")
        if not store.remember_delivery(hook.name, "id:" + delivery_id, now, cfg.replay_window_s):
            raise _Refused(401, "replayed delivery id")
    if signature and not store.remember_delivery(
        hook.name, "sig:" + signature, now, cfg.replay_window_s
    ):
        raise _Refused(401, "replayed signed body")
    return delivery_id
