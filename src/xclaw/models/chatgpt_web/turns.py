"""Observing one reply until the completion gate says it is finished (``completion.py``).

Each poll: look for blockers (and pause for a person when one lasts), take a snapshot of the
turns, report new text and the conversation URL, feed the gate, and check the stall limits:
no new turn in time (``WEB_TURN_NOT_STARTED``), a reply running (stop button) where no turn
locator finds it for ``controls_s`` (``WEB_ADAPTER_OUTDATED``, in seconds), or the whole reply
taking too long (``TurnTimedOut``: the transport retries once, safely). A sign-in page pauses
the session (``WEB_LOGIN_REQUIRED``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.core.errors import ModelError
from xclaw.models.chatgpt_web.completion import CompletionGate, TurnSnapshot
from xclaw.models.chatgpt_web.dom import Scope, find
from xclaw.models.chatgpt_web.failures import signed_out, turn_not_started
from xclaw.models.chatgpt_web.locators import (
    ASSISTANT_TURN,
    FINISHED_TURN,
    STOP_BUTTON,
    USER_TURN,
    Locator,
)
from xclaw.models.chatgpt_web.options import WebTimeouts
from xclaw.models.chatgpt_web.scripts import TURNS_SNAPSHOT
from xclaw.models.chatgpt_web.watch import PageWatch

Outdated = Callable[[Locator, Scope], Awaitable[ModelError]]


class TurnTimedOut(Exception):  # noqa: N818 - internal signal, never shown to a user
    """The reply did not finish within ``turn_s`` (the transport decides what follows)."""


async def count_turns(page: Page, locator: Locator = ASSISTANT_TURN) -> int:
    turns = await find(page, locator)
    return 0 if turns is None else await turns.count()


async def count_user_turns(page: Page) -> int:
    return await count_turns(page, USER_TURN)


async def snapshot(page: Page, blocked: bool) -> tuple[TurnSnapshot, PageLocator | None]:
    """The page as the gate sees it, and the last assistant turn (if any)."""
    generating = await find(page, STOP_BUTTON) is not None
    turns = await find(page, ASSISTANT_TURN)
    data: dict[str, Any] = {"count": 0, "text": ""}
    if turns is not None:
        data = await turns.evaluate_all(TURNS_SNAPSHOT)
    count = int(data["count"])
    if turns is None or count == 0:
        return TurnSnapshot(0, "", generating, False, blocked), None
    last = turns.nth(count - 1)
    bar = await find(last, FINISHED_TURN) is not None
    return TurnSnapshot(count, str(data["text"]), generating, bar, blocked), last


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
            evidence, pause = await self.watch.clear(page)
            if evidence.auth_page:
                raise signed_out("The browser was signed out while the reply was running.")
            if pause:
                paused += pause
                gate.reset_streak()
                continue
            snap, turn = await snapshot(page, evidence.any)
            self.on_url(page.url)
            if gate.started or snap.turns > baseline:
                self.on_text(snap.text)
            now = time.monotonic()
            if gate.observe(snap, now) and turn is not None:
                return turn, gate.without_bar
            if gate.started or not snap.generating:
                generating_since = None
            elif generating_since is None:
                generating_since = now
            await self._check_stalls(page, gate, snap, generating_since, now - started - paused)
            # one poll every poll_s: a poll's own round trips count towards the interval
            await asyncio.sleep(max(0.0, t.poll_s - (time.monotonic() - polled)))

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
