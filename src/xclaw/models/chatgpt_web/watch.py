"""Watching for what stops a conversation, and pausing for a person when it lasts.

Strong challenge evidence pauses at once; weak evidence and banners only when they last their
grace period. A pause emits ``browser.takeover_required``, brings the window forward, calls
the ``on_takeover`` hook, then waits until the page is clear (``WEB_TAKEOVER_TIMEOUT`` if it
never is). A headless browser has no window: there the takeover fails at once with
``WEB_TAKEOVER_HEADLESS``, unless a surface asks the person elsewhere (``remote``: the
gateway's web UI). Then the event carries a masked screenshot of the page, and the hook's
answer decides: "retry" presses the page's own Retry control (or reloads the page) and waits
for it to clear, asking again if it does not; "stop" pauses the session
(``WEB_TAKEOVER_STOPPED``); no answer within ``takeover_s`` is ``WEB_TAKEOVER_TIMEOUT``.
Nothing is clicked or bypassed but on the person's answer (seed 000 §13).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import time
from collections.abc import Callable
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from xclaw.browser.manager import BrowserManager, EventSink
from xclaw.core.events import EventType
from xclaw.models.chatgpt_web.completion import TurnSnapshot
from xclaw.models.chatgpt_web.diagnostics import masked_screenshot
from xclaw.models.chatgpt_web.dom import find
from xclaw.models.chatgpt_web.failures import (
    takeover_headless,
    takeover_stopped,
    takeover_timeout,
)
from xclaw.models.chatgpt_web.locators import RETRY_BUTTON
from xclaw.models.chatgpt_web.options import TakeoverAnswer, TakeoverHook, WebTimeouts
from xclaw.models.chatgpt_web.page_state import Evidence, PageLook, Takeover, probe
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
        remote: Callable[[], bool] | None = None,
    ) -> None:
        self.manager = manager
        self.wait_headless = wait_headless
        self.remote = remote  # whether a surface answers takeovers from elsewhere, right now
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

    async def look(self, page: Page, *, turns: bool = False) -> PageLook:
        """The page's blockers (and turns); a page in the middle of navigating counts as not
        clear."""
        try:
            return await probe(page, self.base_url, turns=turns)
        except PlaywrightError:
            if not self.manager.alive or page.is_closed():
                raise
            empty = TurnSnapshot(0, "", False, False, True) if turns else None
            return PageLook(Evidence(challenge_weak=True), empty)

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
        seen, paused = await self.poll(page, turns=False)
        return seen.evidence, paused

    async def poll(self, page: Page, *, turns: bool = True) -> tuple[PageLook, float]:
        """``clear`` with the turns seen in the same look (the completion wait's poll)."""
        seen = await self.look(page, turns=turns)
        takeover = self.due(seen.evidence, page.url)
        if takeover is None:
            return seen, 0.0
        return seen, await self.take_over(page, takeover)

    async def take_over(self, page: Page, takeover: Takeover) -> float:
        """Pause until the page is clear (see the module); returns the seconds paused."""
        self.takeovers += 1
        started = time.monotonic()
        remote = self.manager.headless and self.remote is not None and self.remote()
        if self.manager.headless and not (self.wait_headless or remote):
            self.emit("browser.takeover_required", {**takeover.to_dict(), "headless": True})
            raise takeover_headless(takeover)
        await self.manager.show()
        deadline = started + self.timeouts.takeover_s
        while True:
            answer = await self._ask(page, takeover, deadline, remote=remote)
            if answer == "stop":
                raise takeover_stopped(takeover)
            if answer == "retry":
                await self._press_retry(page)
            # after a Retry the page has one page load to clear, else the person is asked again
            settle = time.monotonic() + self.timeouts.page_load_s if answer else deadline
            if await self._until_clear(page, min(settle, deadline)):
                break
            if answer is None or time.monotonic() >= deadline:
                raise takeover_timeout(takeover, self.timeouts.takeover_s)
            takeover = Takeover(takeover.code, takeover.message, takeover.url)  # a new question
        self._weak_since = self._banner_since = None
        if self.manager.options.start_minimized:
            await self.manager.minimize()
        return time.monotonic() - started

    async def _ask(
        self, page: Page, takeover: Takeover, deadline: float, *, remote: bool
    ) -> TakeoverAnswer | None:
        """Tell the surface (asked remotely, with the page's screenshot); its answer, if any."""
        payload: dict[str, Any] = {**takeover.to_dict(), "headless": False, "remote": remote}
        if remote:
            payload["screenshot"] = await self._screenshot(page)
        outcome = self.on_takeover(takeover) if self.on_takeover is not None else None
        self.emit("browser.takeover_required", payload)
        if not inspect.isawaitable(outcome):
            if remote:  # nobody connected to answer: as windowless as the CLI
                raise takeover_headless(takeover)
            return None
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                answer = await outcome
        except TimeoutError:
            raise takeover_timeout(takeover, self.timeouts.takeover_s) from None
        return answer if answer in ("retry", "stop") else None

    async def _press_retry(self, page: Page) -> None:
        """The person's "Retry": the page's own Retry control, else a reload."""
        button = await find(page, RETRY_BUTTON)
        if button is not None:
            await button.first.click()
        else:
            await page.reload(wait_until="load", timeout=self.timeouts.page_load_s * 1000)

    async def _until_clear(self, page: Page, until: float) -> bool:
        while (await self.look(page)).evidence.any:
            if time.monotonic() > until:
                return False
            await asyncio.sleep(self.timeouts.poll_s)
        return True

    async def _screenshot(self, page: Page) -> str | None:
        """The page as a data URL (typed text masked); None when the page cannot give one."""
        try:
            shot = await masked_screenshot(page, jpeg=True)
        except PlaywrightError:
            return None
        return "data:image/jpeg;base64," + base64.b64encode(shot).decode("ascii")
