"""Watching for what stops a conversation, and pausing for a person when it lasts.

Strong challenge evidence pauses at once; weak evidence and banners only when they last their
grace period. A pause emits ``browser.takeover_required``, brings the window forward, calls
the ``on_takeover`` hook, then waits until the page is clear (``WEB_TAKEOVER_TIMEOUT`` if it
never is). A headless browser has no window: there the takeover fails at once with
``WEB_TAKEOVER_HEADLESS`` (unless the surface lets a person act otherwise: ``wait_headless``).
Nothing is clicked or bypassed for the person (seed 000 §13).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from xclaw.browser.manager import BrowserManager, EventSink
from xclaw.core.events import EventType
from xclaw.models.chatgpt_web.failures import takeover_headless, takeover_timeout
from xclaw.models.chatgpt_web.options import TakeoverHook, WebTimeouts
from xclaw.models.chatgpt_web.page_state import Evidence, Takeover, look
from xclaw.redact import redact


class PageWatch:
    def __init__(
        self,
        manager: BrowserManager,
        base_url: str,
        timeouts: WebTimeouts,
        *,
        on_takeover: TakeoverHook | None,
        on_event: EventSink | None,
        wait_headless: bool = False,
    ) -> None:
        self.manager = manager
        self.wait_headless = wait_headless
        self.base_url = base_url
        self.timeouts = timeouts
        self.on_takeover = on_takeover
        self.on_event = on_event
        self.takeovers = 0
        self._weak_since: float | None = None
        self._banner_since: float | None = None

    def emit(self, kind: EventType, payload: dict[str, Any]) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(kind, payload)
        except Exception:  # noqa: BLE001 - a broken view must not stop the conversation
            pass

    async def look(self, page: Page) -> Evidence:
        """The evidence on the page; a page in the middle of navigating counts as not clear."""
        try:
            return await look(page, self.base_url)
        except PlaywrightError:
            if not self.manager.alive or page.is_closed():
                raise
            return Evidence(challenge_weak=True)

    def due(self, evidence: Evidence, url: str) -> Takeover | None:
        """The takeover to start now, counting grace periods across calls."""
        now = time.monotonic()
        t = self.timeouts
        if not evidence.challenge_weak:
            self._weak_since = None
        elif self._weak_since is None:
            self._weak_since = now
        if not evidence.banner:
            self._banner_since = None
        elif self._banner_since is None:
            self._banner_since = now
        weak_lasted = self._weak_since is not None and now - self._weak_since >= t.challenge_grace_s
        if evidence.challenge_strong or weak_lasted:
            return Takeover(
                "WEB_CHALLENGE",
                "A verification challenge is showing in the browser; please complete it there.",
                redact(url),
            )
        if self._banner_since is not None and now - self._banner_since >= t.banner_grace_s:
            return Takeover(
                "WEB_BANNER",
                f"The chat page shows a message: {evidence.banner}",
                redact(url),
            )
        return None

    async def clear(self, page: Page) -> tuple[Evidence, float]:
        """Look once; when a takeover is due, pause for it. Returns the evidence seen and the
        seconds spent paused (callers stretch their own deadlines by that)."""
        evidence = await self.look(page)
        takeover = self.due(evidence, page.url)
        if takeover is None:
            return evidence, 0.0
        return evidence, await self.take_over(page, takeover)

    async def take_over(self, page: Page, takeover: Takeover) -> float:
        self.takeovers += 1
        headless = self.manager.headless and not self.wait_headless
        self.emit("browser.takeover_required", {**takeover.to_dict(), "headless": headless})
        if headless:
            raise takeover_headless(takeover)
        await self.manager.show()
        started = time.monotonic()
        if self.on_takeover is not None:
            outcome = self.on_takeover(takeover)
            if inspect.isawaitable(outcome):
                await outcome
        while (await self.look(page)).any:
            if time.monotonic() - started > self.timeouts.takeover_s:
                raise takeover_timeout(takeover, self.timeouts.takeover_s)
            await asyncio.sleep(self.timeouts.poll_s)
        self._weak_since = self._banner_since = None
        if self.manager.options.start_minimized:
            await self.manager.minimize()
        return time.monotonic() - started
