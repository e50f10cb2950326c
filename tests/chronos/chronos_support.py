"""Chronos test helpers: a runner that takes simulated time, and a fake Feishu bot webhook."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from xclaw.chronos.clock import ManualClock
from xclaw.chronos.runner import RunOutcome, RunRequest
from xclaw.core.state import RunControl
from xclaw.gateway.server import GatewayServer


@dataclass
class TimedRunner:
    """Each run takes ``duration_s`` of the clock's time; records when runs started and
    ended. Honours a cancel like the agent loop does (the run ends as interrupted)."""

    clock: ManualClock
    duration_s: float = 0.0
    started: list[tuple[str, datetime]] = field(default_factory=list)
    spans: list[tuple[datetime, datetime]] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    active: int = 0
    max_active: int = 0

    async def start(self, request: RunRequest, control: RunControl) -> RunOutcome:
        self.started.append((request.session_id, self.clock.now()))
        return await self._take_time(control)

    async def resume(self, request: RunRequest, control: RunControl) -> RunOutcome:
        self.resumed.append(request.session_id)
        return await self._take_time(control)

    async def _take_time(self, control: RunControl) -> RunOutcome:
        control.attach(asyncio.current_task())
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        begin = self.clock.now()
        try:
            if self.duration_s:
                await self.clock.sleep_until(begin + timedelta(seconds=self.duration_s))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return RunOutcome("interrupted", reason="RUN_CANCELLED")
        finally:
            self.active -= 1
            control.attach(None)
        self.spans.append((begin, self.clock.now()))
        return RunOutcome("completed", reply="all fine")


BOT_SECRET = "bot-signing-secret-0123456789"


@dataclass
class FakeFeishuBot:
    """A Feishu/Lark custom-bot webhook: checks the signature, records the texts."""

    secret: str = BOT_SECRET
    texts: list[str] = field(default_factory=list)
    refusals: int = 0
    fail_first: int = 0  # answer 503 to this many requests first
    seen: threading.Event = field(default_factory=threading.Event)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/open-apis/bot/v2/hook/{token}")
        async def hook(token: str, request: Request) -> JSONResponse:
            if self.fail_first > 0:
                self.fail_first -= 1
                return JSONResponse({"error": "busy"}, status_code=503)
            body = await request.json()
            stamp = str(body.get("timestamp", ""))
            key = f"{stamp}\n{self.secret}".encode()
            want = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
            fresh = stamp.isdigit() and abs(time.time() - int(stamp)) < 3600
            if not fresh or not hmac.compare_digest(want, str(body.get("sign", ""))):
                self.refusals += 1
                return JSONResponse({"code": 19021, "msg": "sign match fail"})
            assert body["msg_type"] == "text"
            self.texts.append(body["content"]["text"])
            self.seen.set()
            return JSONResponse({"code": 0, "msg": "success", "data": {}})

        return app


def serve_app(app: FastAPI) -> GatewayServer:
    return GatewayServer(app).start()


def wait_until(check: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def jsonl(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
