"""Observing one reply until the completion gate says it is finished (``completion.py``).

Each poll, in one look at the page (``page_state.probe``): the blockers (pausing for a person
when one lasts) and a snapshot of the turns; then report new text and the conversation URL,
feed the gate, and check the stall limits: no new turn in time (``WEB_TURN_NOT_STARTED``), a
reply running (stop button) where no turn locator finds it for ``controls_s``
(``WEB_ADAPTER_OUTDATED``, in seconds), or the whole reply taking too long (``TurnTimedOut``:
the transport retries once, safely). A sign-in page pauses the session (``WEB_LOGIN_REQUIRED``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.core.errors import ModelError
from xclaw.models.chatgpt_web.completion import CompletionGate, TurnSnapshot
from xclaw.models.chatgpt_web.dom import Scope, in_page, nth_match
from xclaw.models.chatgpt_web.failures import signed_out, turn_not_started
from xclaw.models.chatgpt_web.locators import ASSISTANT_TURN, USER_TURN, Locator
from xclaw.models.chatgpt_web.options import WebTimeouts
from xclaw.models.chatgpt_web.scripts import COUNT_MATCHES
from xclaw.models.chatgpt_web.watch import PageWatch

Outdated = Callable[[Locator, Scope], Awaitable[ModelError]]
_EARLY_S = 2.0  # after sending, the new turn is looked for four times as often this long


class TurnTimedOut(Exception):  # noqa: N818 - internal signal, never shown to a user
    """The reply did not finish within ``turn_s`` (the transport decides what follows)."""


_COUNTED = {locator: in_page(locator) for locator in (ASSISTANT_TURN, USER_TURN)}


async def count_turns(page: Page, locator: Locator = ASSISTANT_TURN) -> int:
    """The turns on the page (one round trip, resolved inside the page)."""
    return int(await page.evaluate(COUNT_MATCHES, _COUNTED.get(locator) or in_page(locator)))


async def count_user_turns(page: Page) -> int:
    return await count_turns(page, USER_TURN)


class TurnWaiter:
    def __init__(
        self,
        watch: PageWatch,
        timeouts: WebTimeouts,
        *,
        outdated: Outdated,
        on_text: Callable[[str], None],
        on_url: Callable[[str], None],
    ) -> None:
        self.watch = watch
        self.timeouts = timeouts
        self.outdated = outdated
        self.on_text = on_text
        self.on_url = on_url

    async def wait(self, page: Page, baseline: int) -> tuple[PageLocator, bool]:
        """Poll until the reply after ``baseline`` turns is complete; returns its turn, and
        whether it completed without an action bar (so without a copy button to read it)."""
        t = self.timeouts
        gate = CompletionGate(
            baseline,
            stable_window_s=t.stable_window_s,
            finished_polls=t.finished_polls,
            quiet_s=t.quiet_s,
        )
        started = time.monotonic()
        paused = 0.0
        generating_since: float | None = None  # the stop button shows, yet no new turn
        while True:
            polled = time.monotonic()
            seen, pause = await self.watch.poll(page)  # blockers and turns: one round trip
            if seen.evidence.auth_page:
                raise signed_out("The browser was signed out while the reply was running.")
            if pause:
                paused += pause
                gate.reset_streak()
                continue
            snap = seen.turns or TurnSnapshot(0, "", False, False, True)
            self.on_url(page.url)
            if gate.started or snap.turns > baseline:
                self.on_text(snap.text)
            now = time.monotonic()
            if gate.observe(snap, now) and seen.turn_strategy >= 0:
                turn = nth_match(page, ASSISTANT_TURN, seen.turn_strategy, snap.turns - 1)
                return turn, gate.without_bar
            if gate.started or not snap.generating:
                generating_since = None
            elif generating_since is None:
                generating_since = now
            await self._check_stalls(page, gate, snap, generating_since, now - started - paused)
            # one poll every poll_s (a poll's own round trip counts towards it); while the
            # reply has not started, shortly after sending, four: the gate's stable window
            # then starts when the reply does, not up to a poll later
            early = not gate.started and now - started < _EARLY_S
            interval = t.poll_s / 4 if early else t.poll_s
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - polled)))

    async def _check_stalls(
        self,
        page: Page,
        gate: CompletionGate,
        snap: TurnSnapshot,
        generating_since: float | None,
        elapsed: float,
    ) -> None:
        t = self.timeouts
        if generating_since is not None and time.monotonic() - generating_since > t.controls_s:
            raise await self.outdated(ASSISTANT_TURN, page)  # a reply runs where we see none
        if not gate.started and elapsed > t.new_turn_s:
            raise turn_not_started(t.new_turn_s)
        if elapsed > t.turn_s:
            raise TurnTimedOut()
