"""Fan-out between gateway instances: who runs a session, and who sees its frames.

:class:`LocalFanout` is one process (the default, and today's behaviour: the gateway queues
messages in memory). :class:`RedisFanout` lets several instances serve the same sessions:

- a message goes into the session's Redis queue; the instance that holds the session's lease
  (:mod:`xclaw.gateway.lease`) runs it, whichever instance the client is connected to;
- the holder publishes every frame of the session (deltas, events, approval requests,
  replies) on the session's channel; instances with clients of that session relay them;
- a stop or an approval answer given on another instance is sent to the holder's own channel
  (the lease's value names the holder);
- leases are renewed every third of their TTL; a holder that dies stops renewing, the lease
  expires, and another instance claims the session and resumes it from the store.

Redis pub/sub (not streams): a client that reconnects gets the history from the store and the
rest of the turn live; frames are not replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import Field, TypeAdapter

from xclaw.core.extras import require
from xclaw.gateway import lease
from xclaw.gateway.acp import (
    AcpMessage,
    ApprovalRequestFrame,
    DeltaFrame,
    ErrorFrame,
    EventFrame,
    HistoryFrame,
    ReplyFrame,
    ServerFrame,
    SessionFrame,
)
from xclaw.redact import register_secret

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub

    from xclaw.config import XclawConfig

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Fanout",
    "FanoutHandler",
    "LeaseLost",
    "LocalFanout",
    "RedisFanout",
    "Taken",
    "make_fanout",
    "redis_url",
]

REDIS_URL_ENV = "XCLAW_REDIS_URL"
DEFAULT_LEASE_TTL = 8.0  # seconds; renewed every third of it
log = logging.getLogger(__name__)
Op = Callable[[], Awaitable[Any]]
Counters = Callable[[], tuple[int, int, int]]  # the store's (step, item, event) counters

_FRAMES: TypeAdapter[ServerFrame] = TypeAdapter(
    Annotated[
        SessionFrame
        | DeltaFrame
        | EventFrame
        | ApprovalRequestFrame
        | ReplyFrame
        | HistoryFrame
        | ErrorFrame,
        Field(discriminator="type"),
    ]
)


class LeaseLost(Exception):
    """This instance no longer holds the session's lease (it expired, or was taken)."""


@dataclass(frozen=True, slots=True)
class Taken:
    """The next message of a session. ``recovered``: a holder died while running it;
    ``counters`` are the store's counters just before that run started."""

    message: AcpMessage
    recovered: bool
    counters: tuple[int, int, int]


class FanoutHandler(Protocol):
    """What the gateway does when another instance (or a lease) asks something of it."""

    def deliver(self, session_id: str, frame: ServerFrame) -> None:
        """A frame of a session that runs on another instance: to the local clients."""

    def command(self, session_id: str, command: dict[str, Any]) -> None:
        """A stop or an approval answer given on another instance, for a session we run."""

    def claim(self, session_id: str) -> None:
        """We now hold the lease of a session with work waiting (its holder died)."""

    def lost(self, session_id: str) -> None:
        """We no longer hold a lease we held: stop running that session now."""


class Fanout(ABC):
    """See the module doc. ``distributed`` False: the gateway keeps its in-memory queues."""

    distributed: bool = False

    async def start(self, handler: FanoutHandler) -> None:  # noqa: B027 - optional
        """Connect and start listening."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Release every lease and disconnect."""

    async def ready(self) -> bool:
        """The shared services answer."""
        return True

    def publish(self, session_id: str, frame: ServerFrame) -> None:  # noqa: B027
        """A frame of a session this instance runs, for the other instances' clients."""

    def watch(self, session_id: str) -> None:  # noqa: B027
        """Local clients watch the session: relay its frames from other instances."""

    def unwatch(self, session_id: str) -> None:  # noqa: B027
        """No local client watches it any more."""

    def send_command(self, session_id: str, command: dict[str, Any]) -> None:  # noqa: B027
        """A stop or an approval answer for the instance that runs the session."""

    @abstractmethod
    async def enqueue(self, message: AcpMessage) -> bool:
        """Queue a message; True when this instance now holds the session's lease."""

    @abstractmethod
    async def take(
        self, session_id: str, counters: Counters, *, probe: bool = True
    ) -> Taken | None:
        """The next message to run (the holder only); raises :class:`LeaseLost`.
        ``counters()`` (the store's) go with it; ``probe``: read them only if a message is
        there (one more round trip), else the caller knows one is."""

    @abstractmethod
    async def finish(self, session_id: str) -> bool:
        """The message :meth:`take` gave is done. True: more work waits and the lease is
        kept; False: the lease is let go (or was lost)."""

    @abstractmethod
    async def release(self, session_id: str) -> bool:
        """Let the lease go; False when more work arrived and the lease is kept."""

    async def drop(self, session_id: str) -> None:  # noqa: B027
        """Let the lease go and leave the session's work for another instance."""

    def holds(self, session_id: str) -> bool:
        """This instance holds the session's lease."""
        return False


class LocalFanout(Fanout):
    """One process: no other instance to tell. The gateway queues messages itself."""

    async def enqueue(self, message: AcpMessage) -> bool:
        raise NotImplementedError("LocalFanout is not distributed: the gateway queues")

    async def take(
        self, session_id: str, counters: Counters, *, probe: bool = True
    ) -> Taken | None:
        raise NotImplementedError("LocalFanout is not distributed: the gateway queues")

    async def finish(self, session_id: str) -> bool:
        raise NotImplementedError("LocalFanout is not distributed: the gateway queues")

    async def release(self, session_id: str) -> bool:
        raise NotImplementedError("LocalFanout is not distributed: the gateway queues")


class RedisFanout(Fanout):
    """Fan-out, queues and leases in one Redis (see the module doc)."""

    distributed = True

    def __init__(
        self, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL, instance: str | None = None
    ) -> None:
        from redis.asyncio import Redis

        _register_password(url)
        self.url = url
        self.ttl_ms = max(1000, int(lease_ttl * 1000))
        self.instance = instance or secrets.token_hex(6)
        if not self.instance.replace("-", "").replace("_", "").isalnum():
            raise ValueError("an instance id is letters, digits, - and _")
        self.redis: Redis = Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
        self.pubsub: PubSub = self.redis.pubsub(ignore_subscribe_messages=True)
        self.leases: dict[str, str] = {}  # session id -> our token
        self._handler: FanoutHandler | None = None
        self._ops: asyncio.Queue[tuple[Op, asyncio.Future[Any] | None]] = asyncio.Queue()
        self._pubs: asyncio.Queue[tuple[str, str]] = asyncio.Queue()  # (channel, data)
        self._enqueuing: dict[str, list[Any]] = {}  # session -> [lock, users]
        self._from = f'{{"from":"{self.instance}"'  # how this instance's messages begin
        self._tasks: list[asyncio.Task[None]] = []
        self._scripts = {
            name: self.redis.register_script(getattr(lease, name))
            for name in ("ENQUEUE", "CLAIM", "TAKE", "FINISH", "RELEASE", "DROP", "RENEW")
        }

    # -- life -------------------------------------------------------------------------------
    async def start(self, handler: FanoutHandler) -> None:
        self._handler = handler
        # Our own channel: the pub/sub connection is never without a subscription.
        await self.pubsub.subscribe(lease.instance_channel(self.instance))
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._drain_ops()),
            loop.create_task(self._drain_publishes()),
            loop.create_task(self._listen()),
            loop.create_task(self._keep()),  # last: tests stop it to play a dead holder
        ]

    async def close(self) -> None:
        for session_id in list(self.leases):
            with contextlib.suppress(Exception):
                await self.drop(session_id)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await self.pubsub.aclose()  # type: ignore[no-untyped-call]
        with contextlib.suppress(Exception):
            await self.redis.aclose()

    async def ready(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self.redis.ping(), 2.0))
        except Exception:  # noqa: BLE001 - any failure means "not ready", said as such
            return False

    # -- frames and commands ----------------------------------------------------------------
    def publish(self, session_id: str, frame: ServerFrame) -> None:
        # pydantic-core writes the frame's JSON; the instance id is hex, safe to splice
        data = f'{self._from},"frame":{frame.model_dump_json(by_alias=True)}}}'
        self._pubs.put_nowait((lease.frames_channel(session_id), data))

    def watch(self, session_id: str) -> None:
        self._later(lambda: self.pubsub.subscribe(lease.frames_channel(session_id)))

    def unwatch(self, session_id: str) -> None:
        self._later(lambda: self.pubsub.unsubscribe(lease.frames_channel(session_id)))

    def send_command(self, session_id: str, command: dict[str, Any]) -> None:
        """To the holder's own channel: the lease's value names the holder."""
        body = {"from": self.instance, "session": session_id, "command": command}
        data = json.dumps(body, separators=(",", ":"))

        async def send() -> None:
            holder = await self.redis.get(lease.keys(session_id)[0])
            if holder is not None:
                instance = _text(holder).partition(":")[0]
                await self.redis.publish(lease.instance_channel(instance), data)

        self._later(send)

    # -- queue and lease --------------------------------------------------------------------
    async def enqueue(self, message: AcpMessage) -> bool:
        session_id = _sid(message)
        token = self._new_token()
        data = message.model_dump_json(by_alias=True)

        async def push() -> Any:
            lease_key, queue, _run, active = lease.keys(session_id)
            args: list[str | int] = [data, session_id, token, self.ttl_ms]
            return await self._scripts["ENQUEUE"](keys=[lease_key, queue, active], args=args)

        # messages of one session keep their order; other sessions' do not wait for them
        lock = self._session_lock(session_id)
        try:
            async with lock[0]:
                got = await push()
        finally:
            lock[1] -= 1
            if lock[1] == 0:
                del self._enqueuing[session_id]
        if int(got) == 1:
            await self._hold(session_id, token)
            return True
        return False

    async def take(
        self, session_id: str, counters: Counters, *, probe: bool = True
    ) -> Taken | None:
        token = self._token(session_id)
        keys = list(lease.keys(session_id)[:3])
        out: Any = 2 if not probe else await self._scripts["TAKE"](keys=keys, args=[token, ""])
        if out == 2 or (isinstance(out, list) and out and int(out[0]) == 2):  # worth reading
            out = await self._scripts["TAKE"](keys=keys, args=[token, json.dumps(list(counters()))])
        if out == -1:
            self._forget(session_id)
            raise LeaseLost(session_id)
        if not out:
            return None
        recovered, entry = int(out[0]), out[1]
        head, _, body = _text(entry).partition("\n")
        got = json.loads(head)
        return Taken(
            AcpMessage.model_validate_json(body),
            recovered == 1,
            (int(got[0]), int(got[1]), int(got[2])),
        )

    async def finish(self, session_id: str) -> bool:
        token = self.leases.get(session_id)
        if token is None:
            return False
        out = await self._scripts["FINISH"](
            keys=list(lease.keys(session_id)), args=[token, session_id, self.ttl_ms]
        )
        if int(out) == 0:
            return True
        self._forget(session_id)
        return False

    async def release(self, session_id: str) -> bool:
        token = self.leases.get(session_id)
        if token is None:
            return True
        out = await self._scripts["RELEASE"](
            keys=list(lease.keys(session_id)), args=[token, session_id, self.ttl_ms]
        )
        if int(out) == 0:
            return False
        self._forget(session_id)
        return True

    async def drop(self, session_id: str) -> None:
        token = self.leases.get(session_id)
        if token is None:
            return
        self._forget(session_id)
        await self._scripts["DROP"](keys=[lease.keys(session_id)[0]], args=[token])

    def holds(self, session_id: str) -> bool:
        return session_id in self.leases

    # -- internals --------------------------------------------------------------------------
    def _token(self, session_id: str) -> str:
        token = self.leases.get(session_id)
        if token is None:
            raise LeaseLost(session_id)
        return token

    def _session_lock(self, session_id: str) -> list[Any]:
        """[a FIFO lock, its users]: asyncio.Lock wakes waiters in order."""
        entry = self._enqueuing.setdefault(session_id, [asyncio.Lock(), 0])
        entry[1] += 1
        return entry

    def _new_token(self) -> str:
        """The lease's value: who holds it (where commands go), and a secret part."""
        return f"{self.instance}:{secrets.token_hex(12)}"

    async def _hold(self, session_id: str, token: str) -> None:
        self.leases[session_id] = token

    def _forget(self, session_id: str) -> None:
        self.leases.pop(session_id, None)

    def _later(self, op: Op) -> None:
        self._ops.put_nowait((op, None))

    async def _in_order(self, op: Op) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._ops.put_nowait((op, fut))
        return await fut

    async def _drain_publishes(self) -> None:
        """One task publishes every frame and command, in order, as many as are waiting in
        one pipelined round trip (a turn streams many small frames)."""
        while True:
            batch = [await self._pubs.get()]
            while not self._pubs.empty() and len(batch) < 512:
                batch.append(self._pubs.get_nowait())
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for channel, data in batch:
                        pipe.publish(channel, data)
                    await pipe.execute()
            except Exception as err:  # noqa: BLE001 - Redis away: frames are lost, said so
                log.warning(
                    "redis fan-out: %d frames not published: %s", len(batch), _plain_error(err)
                )

    async def _drain_ops(self) -> None:
        """One task runs queue pushes and (un)subscribes in the order they were asked."""
        while True:
            op, fut = await self._ops.get()
            try:
                result = await op()
            except Exception as err:  # noqa: BLE001 - reported to the waiter, or logged
                if fut is not None and not fut.done():
                    fut.set_exception(err)
                else:
                    log.warning("redis fan-out: %s", _plain_error(err))
                continue
            if fut is not None and not fut.done():
                fut.set_result(result)

    async def _listen(self) -> None:
        while True:
            try:
                msg = await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - Redis gone: retry, the keeper reports
                log.warning("redis fan-out listener: %s", _plain_error(err))
                await asyncio.sleep(1.0)
                continue
            if msg is None or msg.get("type") != "message":
                continue
            try:
                self._dispatch(_text(msg["channel"]), _text(msg["data"]))
            except Exception:  # noqa: BLE001 - one bad message must not stop the listener
                log.exception("redis fan-out: a message could not be handled")

    def _dispatch(self, channel: str, data: str) -> None:
        if data.startswith(self._from):  # our own frame, back from a channel we watch
            return
        body = json.loads(data)
        if not isinstance(body, dict) or body.get("from") == self.instance:
            return
        handler = self._handler
        if handler is None:
            return
        kind, _, name = channel.removeprefix(lease.PREFIX).partition(":")
        if kind == "f" and isinstance(body.get("frame"), dict):
            handler.deliver(name, _FRAMES.validate_python(body["frame"]))
        elif kind == "i" and isinstance(body.get("command"), dict):
            session_id = str(body.get("session"))
            if session_id in self.leases:
                handler.command(session_id, body["command"])

    async def _keep(self) -> None:
        """Renew our leases; claim sessions whose holder is gone."""
        period = self.ttl_ms / 3000
        while True:
            await asyncio.sleep(period)
            try:
                await self._renew()
                await self._claim_orphans()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - Redis away: leases lapse, as they must
                log.warning("redis fan-out keeper: %s", _plain_error(err))

    async def _renew(self) -> None:
        for session_id, token in list(self.leases.items()):
            key = lease.keys(session_id)[0]
            if int(await self._scripts["RENEW"](keys=[key], args=[token, self.ttl_ms])) != 1:
                if self.leases.get(session_id) == token:
                    self._forget(session_id)
                    if self._handler is not None:
                        self._handler.lost(session_id)

    async def _claim_orphans(self) -> None:
        active = await self.redis.smembers(lease.keys("")[3])
        for raw in active:
            session_id = _text(raw)
            if session_id in self.leases:
                continue
            token = self._new_token()
            keys = list(lease.keys(session_id))
            if int(await self._scripts["CLAIM"](keys=keys, args=[session_id, token, self.ttl_ms])):
                await self._hold(session_id, token)
                if self._handler is not None:
                    self._handler.claim(session_id)


def _sid(message: AcpMessage) -> str:
    if message.session_id is None:
        raise ValueError("a queued message needs its session")
    return message.session_id


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _plain_error(err: BaseException) -> str:
    from xclaw.redact import redact

    return redact(f"{type(err).__name__}: {err}")


def _register_password(url: str) -> None:
    """The URL's password never appears in a log line or a message."""
    from urllib.parse import urlsplit

    with contextlib.suppress(ValueError):
        password = urlsplit(url).password
        if password:
            register_secret(password)


def redis_url(config: XclawConfig) -> str | None:
    """``XCLAW_REDIS_URL``, else ``gateway: {redis_url: ...}`` of the resolved configuration
    (a user-only key: a project file setting it is refused when the configuration resolves)."""
    import os

    return os.environ.get(REDIS_URL_ENV, "").strip() or config.gateway.redis_url or None


def make_fanout(url: str | None, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> Fanout:
    """Redis when a URL is given (checked now: a gateway must not start half-connected),
    else one process."""
    if not url:
        return LocalFanout()
    require("scale", "several gateway instances (XCLAW_REDIS_URL)", ["redis"])
    _check_reachable(url)
    return RedisFanout(url, lease_ttl=lease_ttl)


def _check_reachable(url: str) -> None:
    from redis import Redis
    from redis.exceptions import RedisError

    from xclaw.core.errors import ConfigError

    _register_password(url)
    client = Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
    try:
        client.ping()
    except (RedisError, OSError, ValueError) as err:
        raise ConfigError(
            f"Redis does not answer: {_plain_error(err)}",
            code="GATEWAY_REDIS_UNREACHABLE",
            hint="Check XCLAW_REDIS_URL (or gateway.redis_url in your user config), or unset "
            "it to run one instance.",
        ) from None
    finally:
        client.close()
