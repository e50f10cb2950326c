"""The gateway's HTTP/WebSocket face (FastAPI + uvicorn), and a thread runner for tests.

Usage (tests, ``xclaw serve``)::

    from xclaw.gateway.auth import GatewayAuth
    from xclaw.gateway.gateway import Gateway
    from xclaw.gateway.server import GatewayServer, create_app

    gateway = Gateway(make_agent, store, workdir=root)  # make_agent(bus, approver, origin)
    auth = GatewayAuth(token="a-token-of-16-chars-or-more")
    server = GatewayServer(create_app(gateway, auth)).start()   # free loopback port, a thread
    server.url      # "http://127.0.0.1:PORT";  server.ws_url -> "ws://127.0.0.1:PORT/ws"
    server.stop()

Routes: ``GET /healthz`` (liveness, no auth), ``GET /readyz`` (readiness, no auth: store and
Redis answer, not draining; only ``{"ready": bool}``), ``POST /auth/session`` (bearer ->
cookie), ``GET /api/sessions?q=``, ``GET /api/sessions/{id}`` (its chat lines, its timeline
of messages and tool calls, its steps), ``WS /ws`` (``?session=ID`` reopens a session,
``?channel=cli`` takes the project's fixed CLI session), rollback/fork and change-job review
(:mod:`xclaw.gateway.review`), ``GET /metrics`` (Prometheus, when ``create_app`` is given
``metrics``), and the static web UI at ``/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from xclaw.gateway.drain import DrainingServer
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.review import review_router
from xclaw.gateway.sessions import session_messages
from xclaw.gateway.ws import serve_connection
from xclaw.obs.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from xclaw.obs.metrics import ConnectionCounter, RunMetrics
from xclaw.obs.wiring import observing
from xclaw.patch.job import JobStore
from xclaw.redact import redact, redact_json
from xclaw.store.base import Store, TranscriptItem
from xclaw.store.children import child_links

__all__ = ["STATIC_DIR", "GatewayServer", "create_app"]

STATIC_DIR = Path(__file__).with_name("static")


def create_app(
    gateway: Gateway,
    auth: GatewayAuth,
    *,
    static_dir: Path | None = None,
    routers: Sequence[APIRouter] = (),
    channels: Sequence[ChatAdapter] = (),
    jobs: JobStore | None = None,
    metrics: RunMetrics | None = None,
) -> FastAPI:
    """The gateway app: routes above, every one but ``/healthz`` and the UI behind ``auth``.
    ``channels`` run while the app does; ``routers`` (and a channel's ``router``) are chat
    platforms' callback endpoints, which check the platform's own signature instead (a
    platform cannot hold our token). ``jobs`` is where change jobs are read (default: the
    user's job store). ``metrics``: every session's runs feed it, ``GET /metrics`` shows it."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await gateway.start()
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
    _readiness_route(app, gateway)
    _api_routes(app, gateway, auth)
    app.include_router(review_router(gateway, auth, jobs))
    if metrics is not None:
        _metrics_route(app, gateway, auth, metrics)

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


def _readiness_route(app: FastAPI, gateway: Gateway) -> None:
    @app.get("/readyz")
    async def readyz() -> Response:
        # nothing but the verdict: a load balancer needs no more, a stranger gets no more
        ready = await gateway.ready()
        return JSONResponse({"ready": ready}, status_code=200 if ready else 503)


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
            if s.parent_session_id is None  # workers are shown inside their parent's steps
        ]

    @app.get("/api/sessions/{session_id}")
    async def session(request: Request, session_id: str) -> dict[str, Any]:
        require(request)
        return _session_detail(gateway, session_id)


def _metrics_route(app: FastAPI, gateway: Gateway, auth: GatewayAuth, metrics: RunMetrics) -> None:
    """``GET /metrics`` (Prometheus text, behind ``auth``): sessions' runs counted from their
    event buses, live sessions and open WebSockets as gauges."""
    gateway.make_agent = observing(gateway.make_agent, metrics.attach)
    metrics.count_sessions(lambda: gateway.live_count)  # read at each scrape
    app.add_middleware(ConnectionCounter, gauge=metrics.connections)

    @app.get("/metrics")
    async def scrape(request: Request) -> Response:
        verdict = auth.check(request.headers, request.cookies)
        if verdict != "ok":
            raise HTTPException(403 if verdict == "forbidden" else 401)
        return Response(metrics.exposition(), media_type=METRICS_CONTENT_TYPE)


def _session_detail(gateway: Gateway, session_id: str) -> dict[str, Any]:
    record = gateway.store.get_session(session_id)
    if record is None or Path(record.root).resolve() != gateway.workdir:
        raise HTTPException(404)
    items = gateway.store.load_items(record.id)
    return {
        "id": record.id,
        "title": record.title,
        "state": record.state,
        "parentId": record.parent_id,
        "messages": session_messages([i.payload for i in items]),
        "timeline": timeline(items),
        "steps": _steps(gateway.store, session_id),
        "children": _children(gateway.store, session_id),
    }


def _steps(store: Store, session_id: str) -> list[dict[str, Any]]:
    return [
        {
            "id": s.step_id,
            "kind": s.kind,
            "name": s.name,
            "status": s.status,
            "turn": s.turn,
            "parent": s.parent_step_id,
            "tokensIn": s.tokens_in,
            "tokensOut": s.tokens_out,
        }
        for s in store.list_steps(session_id)
    ]


def _children(store: Store, session_id: str, depth: int = 0) -> list[dict[str, Any]]:
    """The session's workers (multi-agent children), each under the step that started it,
    with their own steps and children (a tree is at most a few levels deep)."""
    if depth >= 4:
        return []
    return [
        {
            "id": link.session.id,
            "worker": link.worker,
            "state": link.session.state,
            "title": redact(link.session.title or link.session.task)[:120],
            "step": link.step_id,
            "steps": _steps(store, link.session.id),
            "children": _children(store, link.session.id, depth + 1),
        }
        for link in child_links(store, session_id)
    ]


def timeline(items: Sequence[TranscriptItem]) -> list[dict[str, Any]]:
    """A transcript as the UI redraws it after a reload: chat lines and tool cards in order.

    A tool entry is its ``function_call`` (name, arguments) joined with its
    ``function_call_output`` (the ToolResult: ok, message, data); a call without an output
    was cut off. Secrets are redacted.
    """
    from xclaw.coding.prompt import task_from_message
    from xclaw.core.messages import ToolResult

    out: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for item in items:
        payload = item.payload
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            role = str(payload["role"])
            parts = payload.get("content") or []
            text = "".join(str(c.get("text", "")) for c in parts if isinstance(c, dict))
            if text.strip():
                text = task_from_message(text) if role == "user" else text
                out.append({"kind": "message", "role": role, "text": text})
        elif kind == "function_call":
            call_id = str(payload.get("call_id", ""))
            entry = {
                "kind": "tool",
                "callId": call_id,
                "name": str(payload.get("name", "")),
                "arguments": _json_or_text(payload.get("arguments")),
                "step": item.step_id,
                "result": None,
            }
            calls[call_id] = entry
            out.append(entry)
        elif kind == "function_call_output":
            call_id = str(payload.get("call_id", ""))
            raw = _json_or_text(payload.get("output"))
            result = ToolResult.from_dict(raw) if isinstance(raw, dict) else None
            shown = result.to_dict() if result else {"ok": True, "message": str(raw)}
            if call_id in calls:
                calls[call_id]["result"] = shown
            else:  # an output whose call is gone (rolled back past it): shown on its own
                out.append(
                    {
                        "kind": "tool",
                        "callId": call_id,
                        "name": "",
                        "arguments": None,
                        "step": item.step_id,
                        "result": shown,
                    }
                )
    redacted: list[dict[str, Any]] = redact_json(out)
    return redacted


def _json_or_text(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class GatewayServer:
    """Runs ``app`` under uvicorn in a thread on ``host:port`` (port 0: a free one)."""

    def __init__(
        self,
        app: FastAPI,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        drain_grace: float = 30.0,
    ) -> None:
        self.app = app
        self.host = host
        # IPPROTO_TCP named explicitly: asyncio turns Nagle off only on such sockets, and
        # with it on every streamed frame waits ~40 ms for a delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(2048)
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
        # SIGTERM drains the gateway (running turns finish or are checkpointed) before exit;
        # other apps (a webhook receiver in tests) stop as uvicorn stops them
        gateway = getattr(app.state, "gateway", None)
        self.server = (
            DrainingServer(config, gateway, drain_grace)
            if isinstance(gateway, Gateway)
            else uvicorn.Server(config)
        )
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
