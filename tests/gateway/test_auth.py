"""Auth: no token, a wrong token, a foreign Origin, a token in a URL — refused, nothing else."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest
from gateway_support import AUTH, TOKEN, client, send, serving, until
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from xclaw.gateway.auth import COOKIE, GatewayAuth, load_gateway_token

pytestmark = pytest.mark.timeout(30)

WRONG = {"Authorization": "Bearer wrong-token-0123456789abcdef"}
FOREIGN = "http://evil.example"


def test_http_refusals_say_nothing(root: Path) -> None:
    with serving(root, ["x"]) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/healthz").json() == {"ok": True}
        for headers in ({}, WRONG):
            for path in ("/api/sessions", "/api/sessions/some-id"):
                r = http.get(path, headers=headers)
                assert r.status_code == 401
                assert "some-id" not in r.text and "session" not in r.text.lower()
        r = http.get("/api/sessions", params={"token": TOKEN})  # a token in a URL: never read
        assert r.status_code == 401
        r = http.get("/api/sessions", headers={**AUTH, "Origin": FOREIGN})
        assert r.status_code == 403
        assert http.post("/auth/session", headers=WRONG).status_code == 401
        assert http.post("/auth/session", headers={**AUTH, "Origin": FOREIGN}).status_code == 403
        rebound = {**AUTH, "Host": f"evil.example:{server.port}"}  # DNS rebinding
        assert http.get("/api/sessions", headers=rebound).status_code == 403
        assert http.get("/api/sessions", headers=AUTH).json() == []


def test_cookie_login(root: Path) -> None:
    with serving(root, ["x"]) as server, httpx.Client(base_url=server.url) as http:
        r = http.post("/auth/session", headers=AUTH)
        assert r.status_code == 204
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        assert TOKEN not in cookie
        assert http.get("/api/sessions").status_code == 200  # the cookie jar now holds it
        http.cookies.set(COOKIE, "forged")
        assert http.get("/api/sessions").status_code == 401


async def _refused(url: str, headers: dict[str, str]) -> int | None:
    """The close code (or HTTP status) a refused WebSocket gets; fails if a frame arrives."""
    try:
        async with connect(url, additional_headers=headers) as ws:
            frame = await asyncio.wait_for(ws.recv(), 5)
            pytest.fail(f"a refused client got a frame: {frame!r}")
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    return None


async def test_websocket_refusals(root: Path) -> None:
    with serving(root, ["x"]) as server:
        url = server.ws_url
        assert await _refused(url, {}) == 4401
        assert await _refused(url, WRONG) == 4401
        assert await _refused(f"{url}?token={TOKEN}", {}) == 4401
        assert await _refused(f"{url}?token={TOKEN}", {"Origin": FOREIGN}) == 4403
        assert await _refused(url, {**AUTH, "Origin": FOREIGN}) == 4403
        http_origin = server.url
        cookie = GatewayAuth(token=TOKEN).cookie_value
        headers = {"Origin": FOREIGN, "Cookie": f"{COOKIE}={cookie}"}
        assert await _refused(url, headers) == 4403  # a cross-site page with the cookie
        async with connect(
            url, additional_headers={"Origin": http_origin, "Cookie": f"{COOKIE}={cookie}"}
        ) as ws:
            assert '"session"' in str(await asyncio.wait_for(ws.recv(), 5))


async def test_logs_never_hold_the_token(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving(root, ["hello"], log_level="debug") as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            await http.get(f"/api/sessions?token={TOKEN}")
            await http.get("/api/sessions", headers=AUTH)
        assert await _refused(f"{server.ws_url}?token={TOKEN}", {}) == 4401
        ws, _ = await client(server)
        await send(ws, type="message", content=f"my token is {TOKEN}")
        await until(ws, "reply")
        await ws.close()
    ours = [r for r in caplog.records if not r.name.startswith(("httpx", "websockets.client"))]
    access = [r.getMessage() for r in ours if r.name == "uvicorn.access"]
    assert any("/api/sessions?token=" in line for line in access)  # the request was logged...
    assert all(TOKEN not in r.getMessage() for r in ours)  # ...without the token


def test_token_file_is_owner_only_and_made_once(tmp_path: Path) -> None:
    path = tmp_path / "gw" / "token"
    token, where, created = load_gateway_token(path)
    assert created and where == path and len(token) >= 32
    assert path.stat().st_mode & 0o777 == 0o600
    again, _, created_again = load_gateway_token(path)
    assert again == token and not created_again
