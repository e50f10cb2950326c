"""Observing one reply until the completion gate says it is finished (``completion.py``).

Each poll: look for blockers (and pause for a person when one lasts), take a snapshot of the
turns, report new text and the conversation URL, feed the gate, and check the stall limits:
no new turn in time (``WEB_TURN_NOT_STARTED``, or ``WEB_ADAPTER_OUTDATED`` when the stop
button shows that a reply is running where no turn locator finds it), a quiet turn that never
gets its action bar (outdated), or the whole reply taking too long (``WEB_TURN_TIMEOUT``).
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
from xclaw.models.chatgpt_web.failures import login_required, turn_not_started, turn_timeout
from xclaw.models.chatgpt_web.locators import ASSISTANT_TURN, COPY_BUTTON, STOP_BUTTON, Locator
from xclaw.models.chatgpt_web.options import WebTimeouts
from xclaw.models.chatgpt_web.scripts import TURNS_SNAPSHOT
from xclaw.models.chatgpt_web.watch import PageWatch

Outdated = Callable[[Locator, Scope], Awaitable[ModelError]]


async def count_turns(page: Page) -> int:
    turns = await find(page, ASSISTANT_TURN)
    return 0 if turns is None else await turns.count()


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
    bar = await find(last, COPY_BUTTON) is not None
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

    async def wait(self, page: Page, baseline: int) -> PageLocator:
        """Poll until the reply after ``baseline`` turns is complete; returns its turn."""
        t = self.timeouts
        gate = CompletionGate(
            baseline, stable_window_s=t.stable_window_s, finished_polls=t.finished_polls
        )
        started = time.monotonic()
        paused = 0.0
        while True:
            evidence, pause = await self.watch.clear(page)
            if evidence.auth_page:
                raise login_required("The browser was signed out while the reply was running.")
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
                return turn
            await self._check_stalls(page, gate, snap, turn, now - started - paused)
            await asyncio.sleep(t.poll_s)

    async def _check_stalls(
        self,
        page: Page,
        gate: CompletionGate,
        snap: TurnSnapshot,
        turn: PageLocator | None,
        elapsed: float,
    ) -> None:
        t = self.timeouts
        if not gate.started and elapsed > t.new_turn_s:
            if snap.generating:  # a reply is running that no turn locator can see
                raise await self.outdated(ASSISTANT_TURN, page)
            raise turn_not_started(t.new_turn_s)
        if turn is not None and gate.idle_without_bar(time.monotonic()) > t.action_bar_grace_s:
            raise await self.outdated(COPY_BUTTON, turn)
        if elapsed > t.turn_s:
            raise turn_timeout(t.turn_s)
