"""One WebSocket connection: auth before accept, then ACP frames both ways.

Outgoing frames go through a queue drained by one writer task, so the loop's synchronous
event callbacks never block and frames keep their order.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from fastapi import WebSocket, WebSocketDisconnect

from xclaw.core.errors import XclawError
from xclaw.gateway.acp import (
    AcpMessage,
    ApprovalResponse,
    ErrorFrame,
    HistoryRequest,
    MessageFrame,
    ServerFrame,
    SessionFrame,
    StopFrame,
    parse_client_frame,
)
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.gateway import Gateway, cli_session_id
from xclaw.gateway.sessions import LiveSession
from xclaw.redact import redact

__all__ = ["WebChannel", "serve_connection"]

CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_TRY_AGAIN = 1013  # draining for a shutdown: another instance (or this one, later)


class WebChannel:
    """A :class:`~xclaw.gateway.sessions.Channel` over one WebSocket."""

    def __init__(self, websocket: WebSocket, kind: str) -> None:
        self.name = kind
        self.id = f"{kind}-{secrets.token_hex(6)}"
        self.websocket = websocket
        self.outbox: asyncio.Queue[ServerFrame | None] = asyncio.Queue()

    def send(self, frame: ServerFrame) -> None:
        self.outbox.put_nowait(frame)

    async def pump(self) -> None:
        # pydantic-core writes the JSON text itself: no dict, no json.dumps per frame
        while (frame := await self.outbox.get()) is not None:
            await self.websocket.send_text(frame.model_dump_json(by_alias=True))


async def serve_connection(gateway: Gateway, auth: GatewayAuth, websocket: WebSocket) -> None:
    verdict = auth.check(websocket.headers, websocket.cookies, websocket=True)
    if verdict != "ok":  # nothing but the close code
        await websocket.accept()
        code = CLOSE_FORBIDDEN if verdict == "forbidden" else CLOSE_UNAUTHORIZED
        await websocket.close(code=code)
        return
    kind = "cli" if websocket.query_params.get("channel") == "cli" else "web"
    await websocket.accept()
    if gateway.draining:
        await websocket.close(code=CLOSE_TRY_AGAIN)
        return
    channel = WebChannel(websocket, kind)
    try:
        own = _own_session(gateway, channel, websocket.query_params.get("session"))
    except XclawError as err:
        await websocket.send_json(_error("", err.code, err.message).model_dump(by_alias=True))
        await websocket.close(code=4404)
        return
    gateway.watch(own, channel)
    channel.send(SessionFrame(session_id=own.id))
    writer = asyncio.get_running_loop().create_task(channel.pump())
    try:
        while True:
            raw = await websocket.receive_text()
            _handle(gateway, channel, own, raw)
    except WebSocketDisconnect:
        pass
    finally:
        gateway.detach(channel)
        channel.outbox.put_nowait(None)
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


def _own_session(gateway: Gateway, channel: WebChannel, wanted: str | None) -> LiveSession:
    if wanted:
        return gateway.find(wanted)
    if channel.name == "cli":
        return gateway.open_session("cli", channel.id, cli_session_id(gateway.workdir))
    return gateway.open_session("web", channel.id)


def _handle(gateway: Gateway, channel: WebChannel, own: LiveSession, raw: str) -> None:
    try:
        frame = parse_client_frame(raw)
    except ValueError as err:
        channel.send(_error(own.id, "FRAME_INVALID", str(err)))
        return
    try:
        _dispatch(gateway, channel, own, frame)
    except XclawError as err:
        sid = getattr(frame, "session_id", None) or own.id
        channel.send(_error(sid, err.code, err.message))


def _dispatch(
    gateway: Gateway,
    channel: WebChannel,
    own: LiveSession,
    frame: MessageFrame | ApprovalResponse | StopFrame | HistoryRequest,
) -> None:
    if isinstance(frame, MessageFrame):
        target = own if frame.session_id in (None, own.id) else gateway.find(frame.session_id)
        message = AcpMessage(
            id=frame.id,
            session_id=target.id,
            channel=target.channel,
            content=frame.content,
            caller=channel.id,
        )
        gateway.submit(message, channel)
    elif isinstance(frame, ApprovalResponse):
        if not gateway.answer(channel, frame.request_id, frame.answer):
            channel.send(_error(own.id, "APPROVAL_UNKNOWN", "No such approval is waiting."))
    elif isinstance(frame, StopFrame):
        gateway.stop(frame.session_id or own.id)
    else:
        live = gateway.find(frame.session_id or own.id)
        gateway.watch(live, channel)
        channel.send(gateway.history(live.id))


def _error(session_id: str, code: str, message: str) -> ErrorFrame:
    return ErrorFrame(session_id=session_id, code=code, message=redact(message))
