"""The gateway's HTTP/WebSocket face (FastAPI + uvicorn), and a thread runner for tests.

Usage (tests, ``xclaw serve``)::

    from xclaw.gateway.auth import GatewayAuth
    from xclaw.gateway.gateway import Gateway
    from xclaw.gateway.server import GatewayServer, create_app

    gateway = Gateway(make_agent, store, workdir=root)   # make_agent(bus, approver) -> Agent
    auth = GatewayAuth(token="a-token-of-16-chars-or-more")
    server = GatewayServer(create_app(gateway, auth)).start()   # free loopback port, a thread
    server.url      # "http://127.0.0.1:PORT";  server.ws_url -> "ws://127.0.0.1:PORT/ws"
    server.stop()

Routes: ``GET /healthz`` (no auth), ``POST /auth/session`` (bearer -> cookie), ``GET
/api/sessions?q=``, ``GET /api/sessions/{id}``, ``WS /ws`` (``?session=ID`` reopens a session,
``?channel=cli`` takes the project's fixed CLI session), and the static web UI at ``/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI, HTTPException, Request, Response, WebSocket
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from xclaw.gateway.auth import COOKIE, GatewayAuth, install_log_redaction
from xclaw.gateway.channels.base import ChatAdapter
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.ws import serve_connection

__all__ = ["STATIC_DIR", "GatewayServer", "create_app"]

STATIC_DIR = Path(__file__).with_name("static")


def create_app(
    gateway: Gateway,
    auth: GatewayAuth,
    *,
    static_dir: Path | None = None,
    routers: Sequence[APIRouter] = (),
    channels: Sequence[ChatAdapter] = (),
) -> FastAPI:
    """The gateway app: routes above, every one but ``/healthz`` and the UI behind ``auth``.
    ``channels`` run while the app does; ``routers`` (and a channel's ``router``) are chat
    platforms' callback endpoints, which check the platform's own signature instead (a
    platform cannot hold our token)."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        for channel in channels:
            await channel.start()
        try:
            yield
        finally:
            for channel in channels:
                await channel.stop()
            await gateway.close()

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.gateway = gateway

    @app.exception_handler(HTTPException)
    async def bare_error(_request: Request, exc: HTTPException) -> Response:
        return JSONResponse({"error": exc.status_code}, status_code=exc.status_code)

    _auth_routes(app, auth)
    _api_routes(app, gateway, auth)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await serve_connection(gateway, auth, websocket)

    extra = [*routers, *(r for c in channels if (r := getattr(c, "router", None)) is not None)]
    for router in extra:  # before the UI, which is mounted at "/" and would shadow them
        app.include_router(router)
    folder = static_dir or STATIC_DIR
    if folder.is_dir():
        app.mount("/", StaticFiles(directory=folder, html=True), name="ui")
    return app


def _auth_routes(app: FastAPI, auth: GatewayAuth) -> None:
    @app.get("/healthz")
    async def healthz() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/auth/session", status_code=204)
    async def login(request: Request) -> Response:
        if not auth.origin_ok(request.headers):
            raise HTTPException(403)
        if not auth.bearer_ok(request.headers):
            raise HTTPException(401)
        response = Response(status_code=204)
        response.set_cookie(COOKIE, auth.cookie_value, httponly=True, samesite="strict", path="/")
        return response


def _api_routes(app: FastAPI, gateway: Gateway, auth: GatewayAuth) -> None:
    def require(request: Request) -> None:
        verdict = auth.check(request.headers, request.cookies)
        if verdict != "ok":
            raise HTTPException(403 if verdict == "forbidden" else 401)

    @app.get("/api/sessions")
    async def sessions(request: Request, q: str | None = None) -> list[dict[str, Any]]:
        require(request)
        found = gateway.store.list_sessions(root=str(gateway.workdir), text=q or None, limit=200)
        return [
            {
                "id": s.id,
                "title": s.title or s.task[:80],
                "updatedAt": s.updated_at,
                "state": s.state,
            }
            for s in found
        ]

    @app.get("/api/sessions/{session_id}")
    async def session(request: Request, session_id: str) -> dict[str, Any]:
        require(request)
        return _session_detail(gateway, session_id)


def _session_detail(gateway: Gateway, session_id: str) -> dict[str, Any]:
    record = gateway.store.get_session(session_id)
    if record is None or Path(record.root).resolve() != gateway.workdir:
        raise HTTPException(404)
    history = gateway.history(session_id)
    steps = [
        {
            "id": s.step_id,
            "kind": s.kind,
            "name": s.name,
            "status": s.status,
            "turn": s.turn,
            "parent": s.parent_step_id,
        }
        for s in gateway.store.list_steps(session_id)
    ]
    return {
        "id": record.id,
        "title": record.title,
        "state": record.state,
        "messages": history.messages,
        "steps": steps,
    }


class GatewayServer:
    """Runs ``app`` under uvicorn in a thread on ``host:port`` (port 0: a free one)."""

    def __init__(
        self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning"
    ) -> None:
        self.app = app
        self.host = host
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(128)
        self.port: int = self.sock.getsockname()[1]
        install_log_redaction()
        config = uvicorn.Config(
            app,
            lifespan="on",
            ws="websockets-sansio",
            http="h11",
            log_level=log_level,
            log_config=None,  # records go to the root logger (stderr), through the redactor
            server_header=False,
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}/ws"

    def start(self, timeout: float = 10.0) -> GatewayServer:
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the gateway server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()
