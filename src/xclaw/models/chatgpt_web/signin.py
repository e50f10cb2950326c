"""Signed in or not, as the transport asks it: once (``auth_once``), or after a page load until
the page says so (``require_login``), pausing for a person when a challenge stands in the way.
"""

from __future__ import annotations

import asyncio
import time

from playwright.async_api import Page

from xclaw.models.chatgpt_web.dom import find
from xclaw.models.chatgpt_web.failures import signed_out
from xclaw.models.chatgpt_web.locators import COMPOSER
from xclaw.models.chatgpt_web.page_state import AuthState, session_state
from xclaw.models.chatgpt_web.watch import PageWatch
from xclaw.redact import redact


async def auth_once(watch: PageWatch, page: Page) -> AuthState:
    """One look: a challenge, else what the site's session endpoint says."""
    evidence = (await watch.look(page)).evidence
    if evidence.challenge_strong or evidence.challenge_weak:
        return AuthState.CHALLENGE
    return await session_state(page, watch.base_url)


async def require_login(watch: PageWatch, page: Page) -> None:
    """Return once the loaded page is signed in (or undecided after ``page_load_s``: the
    composer check that follows has the last word); a signed-out page pauses the session
    (``WEB_LOGIN_REQUIRED``). Time spent in a takeover does not count."""
    t = watch.timeouts
    deadline = time.monotonic() + t.page_load_s
    while True:
        evidence, paused = await watch.clear(page)
        deadline += paused
        if not paused and not (evidence.challenge_weak or evidence.challenge_strong):
            state = await session_state(page, watch.base_url)
            if state is AuthState.LOGGED_OUT:
                watch.emit("browser.auth_required", {"url": redact(page.url)})
                raise signed_out()
            # Signed in, or the endpoint did not say and the chat page is there to use.
            if state is AuthState.LOGGED_IN or (
                state is AuthState.UNKNOWN and await find(page, COMPOSER) is not None
            ):
                return
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(t.poll_s)
