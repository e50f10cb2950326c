"""A ChatGPT page that needs a person, under `xclaw serve`: offered to the web client (issue 23).

The real gateway on a loopback port; each session's agent runs ``chatgpt-web`` as
``resolve_model`` builds it (a failover chain around the page model) on the 2026 fixture site
in real headless Chromium. The site's reply breaks mid-stream into an in-turn error with its
Retry button. The CLI would fail at once (``WEB_TAKEOVER_HEADLESS``); here the WebSocket client
receives ``browser.takeover_required`` with the plain reason, the redacted URL, a screenshot and
an id, and answers it the way approvals are answered: Retry presses the page's Retry control
and the turn completes, without the message being posted again; Stop pauses the session. The
web UI (in Playwright's own Chromium) shows it as a banner with the screenshot and the buttons.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "browser"))

from fixture_server import SITE_2026_DIR, FixtureSite, Reply  # noqa: E402 - the path above
from gateway_support import TOKEN, client, send, until  # noqa: E402
from test_web_ui import chromium, log_in  # noqa: E402 - its browser and login steps
from web_support import BROWSER, TEST_ARGS  # noqa: E402

from xclaw import Agent  # noqa: E402
from xclaw.core.events import EventBus  # noqa: E402
from xclaw.core.tooling import Approver  # noqa: E402
from xclaw.gateway.auth import GatewayAuth  # noqa: E402
from xclaw.gateway.gateway import Gateway  # noqa: E402
from xclaw.gateway.server import GatewayServer, create_app  # noqa: E402
from xclaw.models.resolve import resolve_model  # noqa: E402
from xclaw.models.text.protocol import render_reply  # noqa: E402
from xclaw.store.sqlite import open_store  # noqa: E402

pytestmark = pytest.mark.timeout(180)

TIMEOUTS = (
    "poll_s=0.05,stable_window_s=0.2,finished_polls=3,quiet_s=1.0,copy_s=0.5,menu_s=0.3,"
    "banner_grace_s=0.2,page_load_s=10,new_turn_s=10,takeover_s=60"
)
ERROR = "Une erreur est survenue."
ANSWER = "Recovered after Retry, and finished."


@pytest.fixture
def site() -> Iterator[FixtureSite]:
    if BROWSER is None:  # never skipped: `make deps` installs chromium
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")
    site = FixtureSite(site_dir=SITE_2026_DIR).start()
    yield site
    site.stop()


@pytest.fixture
def server(
    site: FixtureSite, root: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GatewayServer]:
    monkeypatch.setenv("XCLAW_BROWSER_HEADLESS", "1")  # as `xclaw serve` on a server runs it
    monkeypatch.setenv("XCLAW_BROWSER_ARGS", " ".join(TEST_ARGS))
    monkeypatch.setenv("XCLAW_WEB_TIMEOUTS", TIMEOUTS)
    store = open_store()

    def make_agent(bus: EventBus, approver: Approver, *_origin: object) -> Agent:
        model = resolve_model("chatgpt-web", base_url=site.url)
        return Agent(
            model, root, approval=approver, bus=bus, store=store, evidence_gate_enabled=False
        )

    gateway = Gateway(make_agent, store, workdir=root, approval_timeout=30.0)
    running = GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start()
    try:
        yield running
    finally:
        running.stop()  # its lifespan closes the sessions' models, and so their browsers
        store.close()


async def _takeover(ws: Any) -> dict[str, Any]:
    frames = await until(ws, "event", wait=60)
    while frames[-1]["event"]["type"] != "browser.takeover_required":
        frames = await until(ws, "event", wait=60)
    payload: dict[str, Any] = frames[-1]["event"]["payload"]
    return payload


async def test_a_takeover_is_offered_to_the_web_client_and_retry_finishes_the_turn(
    site: FixtureSite, server: GatewayServer
) -> None:
    site.queue(Reply(render_reply(True, ANSWER), error=ERROR))
    ws, session = await client(server)
    try:
        await send(ws, type="message", content="say something", sessionId=session)
        offer = await _takeover(ws)
        assert offer["code"] == "WEB_BANNER" and ERROR in offer["message"]
        assert offer["headless"] is False and offer["remote"] is True
        assert offer["url"].startswith(site.url + "c/")  # the chat, redacted by the transport
        shot = offer["screenshot"]
        assert shot.startswith("data:image/jpeg;base64,")
        assert base64.b64decode(shot.split(",", 1)[1])[:2] == b"\xff\xd8"  # a JPEG
        await send(ws, type="approval.response", requestId=offer["id"], answer="once")
        reply = (await until(ws, "reply", wait=60))[-1]
    finally:
        await ws.close()
    assert reply["status"] == "completed" and reply["text"] == ANSWER, reply
    assert len(site.posted) == 1  # Retry regenerated the reply: nothing was sent twice


async def test_stop_pauses_the_session_with_a_code(
    site: FixtureSite, server: GatewayServer
) -> None:
    site.queue(Reply(render_reply(True, "Never shown."), error=ERROR))
    ws, session = await client(server)
    try:
        await send(ws, type="message", content="say something", sessionId=session)
        offer = await _takeover(ws)
        await send(ws, type="approval.response", requestId=offer["id"], answer="deny")
        reply = (await until(ws, "reply", wait=60))[-1]
        await send(ws, type="approval.response", requestId=offer["id"], answer="once")
        late = (await until(ws, "error", wait=10))[-1]
    finally:
        await ws.close()
    assert reply["status"] == "interrupted", reply
    assert late["code"] == "APPROVAL_UNKNOWN"  # the question is gone once answered
    with open_store() as store:
        record = store.get_session(session)
    assert record is not None and "WEB_TAKEOVER_STOPPED" in record.meta["last_reason"]
    assert len(site.posted) == 1


async def test_the_web_ui_shows_the_page_and_its_retry_button_finishes_the_turn(
    site: FixtureSite, server: GatewayServer
) -> None:
    site.queue(Reply(render_reply(True, ANSWER), error=ERROR))
    async with chromium() as browser:
        page = await browser.new_page()
        await log_in(page, server, TOKEN)
        await expect(page.locator("#conn-status")).to_have_text("connected")
        await page.locator("#composer-input").fill("say something")
        await page.keyboard.press("Enter")
        banner = page.locator(".takeover")
        await expect(banner).to_be_visible(timeout=60_000)
        await expect(banner.locator(".takeover-reason")).to_contain_text(ERROR)
        await expect(banner.locator(".takeover-url")).to_contain_text(site.url + "c/")
        shot = banner.locator("img.takeover-shot")
        await expect(shot).to_be_visible()
        assert (await shot.get_attribute("src") or "").startswith("data:image/jpeg;base64,")
        assert await shot.evaluate("img => img.naturalWidth") > 0  # a picture, decoded
        await expect(banner.locator(".takeover-stop")).to_be_enabled()
        await expect(banner.locator(".takeover-retry")).to_be_focused()
        await page.keyboard.press("Enter")  # Retry, from the keyboard
        await expect(banner).to_contain_text("You chose Retry.")
        final = page.locator(".msg.final")
        await expect(final).to_contain_text(ANSWER, timeout=60_000)
        await expect(final).to_have_attribute("data-status", "completed")
    assert len(site.posted) == 1
