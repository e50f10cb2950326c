"""Page states in real headless Chromium: signed out, challenges, outdated locators."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import pytest
from fixture_server import SECRET_JWT, SECRET_KEY, FixtureSite, Reply
from web_support import FAST, Events, needs_browser, web_options

from xclaw.browser import BrowserManager
from xclaw.core.errors import EndRun, ModelRequestRejected, ModelUnavailable, ProtocolViolation
from xclaw.dirs import data_dir
from xclaw.models.chatgpt_web import ADAPTER_VERSION, AuthState, ChatGPTWebTransport, Takeover

pytestmark = [needs_browser, pytest.mark.asyncio(loop_scope="module")]


async def test_signed_out_is_reported_without_sending_anything(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(auth="out")  # the page still shows a composer, as a signed-out chat can
    events = Events()
    transport = make_transport(on_event=events)
    assert await transport.auth_state() is AuthState.LOGGED_OUT
    with pytest.raises(EndRun) as caught:  # a pause: the session resumes once signed in
        await transport.send("hello")
    assert caught.value.code == "WEB_LOGIN_REQUIRED" and caught.value.status == "interrupted"
    assert "xclaw login" in caught.value.message
    assert events.of("browser.auth_required")
    assert site.posted == []


async def test_signed_in_is_reported_without_sending_anything(
    site: FixtureSite, make_transport: Any
) -> None:
    transport = make_transport()
    page = await transport.manager.page()
    await page.goto("about:blank")
    assert await transport.auth_state() is AuthState.LOGGED_IN  # opened the site itself
    assert site.posted == []


async def test_a_sign_in_page_means_signed_out_and_login_waits_for_the_person(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(auth="out")
    transport = make_transport()
    page = await transport.manager.page()
    await page.goto(site.url + "auth/login")
    assert await transport.auth_state() is AuthState.LOGGED_OUT

    async def person() -> None:
        await asyncio.sleep(0.3)
        await page.click("#continue")  # signs in and returns to the chat

    signing_in = asyncio.create_task(person())
    await transport.wait_for_manual_login(timeout_s=5)
    await signing_in
    assert await transport.auth_state() is AuthState.LOGGED_IN


async def test_login_without_a_window_fails_at_once_instead_of_waiting(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(auth="out")
    transport = make_transport(headless_takeover="fail")
    started = time.monotonic()
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.wait_for_manual_login(timeout_s=60)
    assert caught.value.code == "WEB_LOGIN_REQUIRED" and "without --headless" in caught.value.hint
    assert time.monotonic() - started < 10


async def test_login_wait_gives_up_with_the_login_code(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(auth="out")
    transport = make_transport()
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.wait_for_manual_login(timeout_s=0.3)
    assert caught.value.code == "WEB_LOGIN_REQUIRED"


async def test_a_strong_challenge_pauses_at_once_until_the_person_passes_it(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(challenge="strong")
    seen: list[tuple[Takeover, float]] = []
    started = time.monotonic()

    def person(takeover: Takeover) -> None:
        seen.append((takeover, time.monotonic() - started))
        site.configure(challenge=None)  # passed; the challenge page reloads into the chat

    events = Events()
    transport = make_transport(on_takeover=person, on_event=events)
    assert await transport.auth_state() is AuthState.CHALLENGE
    started = time.monotonic()
    site.queue("After the check.")
    assert await transport.send("hi") == "After the check."
    assert [t.code for t, _ in seen] == ["WEB_CHALLENGE"]
    assert seen[0][1] < FAST.challenge_grace_s  # strong evidence: no grace period
    assert events.of("browser.takeover_required")[0]["code"] == "WEB_CHALLENGE"


async def test_weak_evidence_waits_out_its_grace_period(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(challenge="weak")
    seen: list[float] = []
    started = time.monotonic()

    def person(takeover: Takeover) -> None:
        seen.append(time.monotonic() - started)
        site.configure(challenge=None)

    transport = make_transport(on_takeover=person)
    await transport.start_conversation()
    assert len(seen) == 1 and seen[0] >= FAST.challenge_grace_s


async def test_weak_evidence_that_clears_by_itself_needs_nobody(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(challenge="weak")
    seen: list[Takeover] = []
    transport = make_transport(on_takeover=seen.append)

    async def passes() -> None:  # an automatic check that passes on its own
        await asyncio.sleep(0.2)
        site.configure(challenge=None)

    passing = asyncio.create_task(passes())
    await transport.start_conversation()
    await passing
    assert seen == []


async def test_a_challenge_nobody_passes_times_out_with_a_code(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(challenge="strong")
    transport = make_transport(timeouts=dataclasses.replace(FAST, takeover_s=0.4))
    with pytest.raises(ModelUnavailable) as caught:
        await transport.start_conversation()
    assert caught.value.code == "WEB_TAKEOVER_TIMEOUT"


async def test_an_outdated_composer_is_an_adapter_error_with_a_redacted_bundle(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(variant="outdated")
    transport = make_transport(timeouts=dataclasses.replace(FAST, page_load_s=0.5))
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.send("hello")
    err = caught.value
    assert err.code == "WEB_ADAPTER_OUTDATED" and not isinstance(err, ProtocolViolation)
    assert "composer" in err.message and ADAPTER_VERSION in err.message
    bundle = transport.last_diagnostics
    assert bundle is not None and bundle.parent == data_dir() / "diagnostics"
    assert str(bundle) in err.hint
    assert (bundle.stat().st_mode & 0o777) == 0o700
    html = (bundle / "page.html").read_text()
    info_text = (bundle / "info.json").read_text()
    assert "composer-next" in html  # the page as it was, to update the locators from
    for secret in (SECRET_JWT, SECRET_KEY):
        assert secret not in html and secret not in info_text
    assert (bundle / "screenshot.png").read_bytes().startswith(b"\x89PNG")
    info = json.loads(info_text)
    assert info["adapter_version"] == ADAPTER_VERSION and info["missing"] == "composer"
    assert info["tried"] and all(t["matches"] == 0 for t in info["tried"])
    assert site.posted == []


async def test_a_turn_without_an_action_bar_completes_when_quiet_and_is_read_from_the_dom(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(variant="no_action_bar")
    site.queue("Finished, but drawn without the action bar we look for.")
    events = Events()
    transport = make_transport(on_event=events)
    assert (
        await transport.send("hello") == "Finished, but drawn without the action bar we look for."
    )
    assert events.of("conversation.reply_read") == [
        {"source": "dom", "why": "the turn has no copy button we know", "chars": 55}
    ]


async def test_a_mode_asked_for_strictly_is_an_error_instead_of_a_fallback(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(menu=[{**m, "disabled": m["slug"] == "gpt-5-pro"} for m in site.state.menu])
    transport = make_transport(mode="pro", mode_strict=True)
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.send("hello")
    assert caught.value.code == "WEB_MODE_UNAVAILABLE" and "rate-limited" in caught.value.message
    assert site.posted == []


async def test_a_headless_takeover_fails_at_once_with_a_readable_code(
    site: FixtureSite, make_transport: Any
) -> None:
    site.queue(Reply("Never finished, an error came.", error="Etwas ist schiefgelaufen."))
    seen: list[Takeover] = []
    transport = make_transport(on_takeover=seen.append, headless_takeover="fail")
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.send("hello")
    err = caught.value
    assert err.code == "WEB_TAKEOVER_HEADLESS" and "Etwas ist schiefgelaufen." in err.message
    assert "Takeover(" not in str(err) and seen == []  # nobody is asked: there is no window


async def test_a_missing_conversation_is_reported(site: FixtureSite, make_transport: Any) -> None:
    transport = make_transport()
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.open_conversation(site.url + "c/gone-for-good")
    assert caught.value.code == "WEB_CONVERSATION_NOT_FOUND"


async def test_a_url_off_the_site_is_refused_before_any_navigation(
    site: FixtureSite, make_transport: Any
) -> None:
    transport = make_transport()
    for url in ("https://example.com/c/abc", site.url + "settings"):
        with pytest.raises(ModelRequestRejected) as caught:
            await transport.open_conversation(url)
        assert caught.value.code == "WEB_URL_REFUSED"


async def test_a_reply_blocked_by_a_banner_nobody_clears_times_out(
    site: FixtureSite, make_transport: Any
) -> None:
    site.queue(Reply("Never finished.", banner="Zu viele Anfragen."))
    seen: list[Takeover] = []
    transport = make_transport(
        on_takeover=seen.append, timeouts=dataclasses.replace(FAST, takeover_s=0.4)
    )
    with pytest.raises(ModelUnavailable) as caught:
        await transport.send("hello")
    assert caught.value.code == "WEB_TAKEOVER_TIMEOUT" and len(seen) == 1


async def test_an_action_bar_without_a_copy_button_ends_the_turn_and_the_dom_is_read(
    site_2026: FixtureSite, make_transport_2026: Any
) -> None:
    """The 2026 page's bar with its copy button gone: the bar still ends the turn (no quiet
    wait), and the finished <section> turn is read from the DOM."""
    site_2026.configure(variant="no_copy")
    site_2026.queue("Lu depuis la page, sans bouton copier.")
    events = Events()
    transport = make_transport_2026(on_event=events, timeouts=dataclasses.replace(FAST, quiet_s=30))
    assert await transport.send("bonjour") == "Lu depuis la page, sans bouton copier."
    assert events.of("conversation.reply_read")[0]["source"] == "dom"


async def test_a_takeover_answered_remotely_presses_the_pages_retry_or_pauses_on_stop(
    site: FixtureSite, shared_browser: BrowserManager
) -> None:
    """As under `xclaw serve` (a surface answers from elsewhere, the browser is headless): the
    2025 page's Retry button sits in its error banner (found by structure); Stop pauses;
    nobody to ask fails at once as in the CLI."""
    answers: list[str | None] = ["retry", "stop", None]
    asked: list[Takeover] = []

    def person(takeover: Takeover) -> Any:
        asked.append(takeover)
        answer = answers.pop(0)
        if answer is None:
            return None  # nobody connected

        async def answered() -> str:
            return answer

        return answered()

    events = Events()
    options = web_options(site, headless_takeover="fail")  # what users get
    transport = ChatGPTWebTransport(
        options, manager=shared_browser, on_takeover=person, on_event=events,
        remote_takeover=lambda: True,
    )  # fmt: skip
    site.queue(Reply("Finished after Retry.", error="Etwas ist schiefgelaufen."))
    assert await transport.send("first") == "Finished after Retry."
    [offer] = events.of("browser.takeover_required")
    assert offer["id"] == asked[0].id and offer["remote"] is True
    assert offer["screenshot"].startswith("data:image/jpeg;base64,")
    assert len(site.posted) == 1  # Retry played it again: not posted twice
    for reply, code in (("Stopped.", "WEB_TAKEOVER_STOPPED"), ("Nobody.", "WEB_TAKEOVER_HEADLESS")):
        site.queue(Reply(reply * 20, error="Etwas ist schiefgelaufen."))
        with pytest.raises((EndRun, ModelRequestRejected)) as caught:
            await transport.send(f"then {code}")
        assert caught.value.code == code and "schiefgelaufen" in caught.value.message
    assert isinstance(caught.value, ModelRequestRejected) and len(asked) == 3
