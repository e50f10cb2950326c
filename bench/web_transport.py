"""The ChatGPT web transport's own overhead per turn, beside a plain Playwright round trip.

Both drive the same page of the fixture site (tests/browser/fixture_server.py, our own
reproduction of the ChatGPT page states) in the same headless Chromium, launched by
``BrowserManager`` as the product launches it, and the page answers at once (the whole reply
in one step), so everything measured is the adapter's. Plain Playwright (the peer): fill the
composer, click send, wait for the new turn's copy button, read its text. The transport:
``send(text)``, which also checks the page state, waits for its composite completion gate
(stop button gone, action bar present for N polls, text stable for the window) and reads the
reply through the copy button.

Two figures for the transport: with the product's ``WebTimeouts`` (what a user pays per turn,
the figure the issue's 0.5 s target is about) and with a short gate (poll 50 ms, stable window
200 ms, as the tests use), which shows what the gate's deliberate waits cost. Then where the
product turn's time goes, phase by phase (timers wrapped around the transport's steps from
here; the transport is not changed). Nothing here says how chatgpt.com behaves.
Run: ``make bench`` (or ``python bench/web_transport.py 10``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))

from fixture_server import FixtureSite, Reply  # noqa: E402

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser  # noqa: E402
from xclaw.models.chatgpt_web import ChatGPTWebOptions, ChatGPTWebTransport  # noqa: E402
from xclaw.models.chatgpt_web import transport as transport_module  # noqa: E402
from xclaw.models.chatgpt_web import turns as turns_module  # noqa: E402
from xclaw.models.chatgpt_web import watch as watch_module  # noqa: E402
from xclaw.models.chatgpt_web.options import WebTimeouts  # noqa: E402

INSTANT = 100_000  # characters per streamed step: the reply lands in one step
WARMUP = 2  # the first turns open the browser and the conversation
TARGET_MS = 500.0  # issue 23: at most this much added per turn
PRODUCT = WebTimeouts()
SHORT_GATE = replace(PRODUCT, poll_s=0.05, stable_window_s=0.2)


def _options(site: FixtureSite, profile: Path, timeouts: WebTimeouts) -> ChatGPTWebOptions:
    browser = BrowserOptions(
        site="bench", executable=str(find_browser()), profile=profile, headless=True,
        args=CONTAINER_ARGS,
    )  # fmt: skip
    return ChatGPTWebOptions(base_url=site.url, browser=browser, timeouts=timeouts)


class Phases:
    """Time spent in named steps of the transport, by wrapping them where they are called."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    @contextmanager
    def wrapped(self, steps: list[tuple[Any, str, str]]) -> Iterator[None]:
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in steps]
        for (owner, name, label), (_, _, original) in zip(steps, originals, strict=True):
            setattr(owner, name, self._timed(label, original))
        try:
            yield
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)

    def _timed(
        self, label: str, original: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - start
                self.calls[label] += 1

        return timed


# (owner, attribute, label): the transport's steps of one send, by where they are looked up.
# A gate poll (``PageWatch.poll``) is one page.evaluate for blockers and turns together; the
# blocker-only looks before posting (``PageWatch.clear``) go through ``poll`` too, and are
# subtracted from it in the report.
STEPS = [
    (ChatGPTWebTransport, "_ready_page", "page checks before posting (x2 per send)"),
    (ChatGPTWebTransport, "_post", "compose and send (click, type, verify, click)"),
    (turns_module.TurnWaiter, "wait", "completion gate, in all"),
    (watch_module.PageWatch, "poll", "  page look per poll (blockers + turns, 1 evaluate)"),
    (watch_module.PageWatch, "clear", "blocker looks outside the gate"),
    (transport_module, "read_reply", "read the reply (copy button, clipboard)"),
]
GATE, POLL, CLEAR = STEPS[2][2], STEPS[3][2], STEPS[4][2]


async def transport_turns(
    site: FixtureSite, profile: Path, turns: int, timeouts: WebTimeouts, phases: Phases | None
) -> list[float]:
    transport = ChatGPTWebTransport(_options(site, profile, timeouts))
    times: list[float] = []
    try:
        for i in range(turns + WARMUP):
            if i == WARMUP and phases is not None:
                phases.reset()
            site.queue(Reply(f"reply {i}", chunk=INSTANT, interval_ms=0))
            start = time.perf_counter()
            assert await transport.send(f"message {i}") == f"reply {i}"
            times.append((time.perf_counter() - start) * 1000)
    finally:
        await transport.aclose()
    return times[WARMUP:]


async def playwright_turns(site: FixtureSite, profile: Path, turns: int) -> list[float]:
    transport = ChatGPTWebTransport(_options(site, profile, PRODUCT))  # only to launch the page
    page = await transport.manager.page()
    await page.goto(site.url)
    times: list[float] = []
    try:
        for i in range(turns + WARMUP):
            site.queue(Reply(f"reply {i}", chunk=INSTANT, interval_ms=0))
            start = time.perf_counter()
            before = await page.locator('[data-testid="copy-turn-action-button"]').count()
            await page.locator("#prompt-textarea").fill(f"message {i}")
            await page.locator('[data-testid="send-button"]').click()
            copy = page.locator('[data-testid="copy-turn-action-button"]').nth(before)
            await copy.wait_for()
            turn = page.locator('[data-message-author-role="assistant"]').nth(before)
            assert (await turn.inner_text()).strip() == f"reply {i}"
            times.append((time.perf_counter() - start) * 1000)
    finally:
        await transport.aclose()
    return times[WARMUP:]


def _line(label: str, ours: float, plain: float) -> str:
    added = ours - plain
    verdict = "met" if added <= TARGET_MS else "NOT met"
    return (
        f"  {label:<40}: {ours / plain:6.2f}x  (added {added:7.1f} ms per turn; "
        f"target <= {TARGET_MS:.0f} ms: {verdict})"
    )


def _report_phases(phases: Phases, turns: int, timeouts: WebTimeouts) -> None:
    print("where a product-timeouts turn goes (mean ms per turn; indented lines are the gate's)")

    def row(label: str, seconds: float, calls: str = "") -> None:
        print(f"  {label:<48}: {seconds * 1000 / turns:7.1f} ms{calls}")

    seconds, calls = dict(phases.seconds), dict(phases.calls)
    seconds[POLL] = seconds.get(POLL, 0.0) - seconds.get(CLEAR, 0.0)  # clear() polls too
    calls[POLL] = calls.get(POLL, 0) - calls.get(CLEAR, 0)
    for _, _, label in STEPS:
        row(label, seconds.get(label, 0.0), f"  ({calls.get(label, 0) / turns:.1f} calls)")
        if label == POLL:
            row("  sleeping between polls", seconds.get(GATE, 0.0) - seconds[POLL])
    floor = max(timeouts.stable_window_s, (timeouts.finished_polls - 1) * timeouts.poll_s)
    print(
        f"  the gate's floor with these timeouts: {floor * 1000:.0f} ms (stable window "
        f"{timeouts.stable_window_s:g} s, {timeouts.finished_polls} polls of {timeouts.poll_s:g} s)"
    )


async def main(turns: int) -> int:
    site = FixtureSite().start()
    phases = Phases()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            plain = await playwright_turns(site, Path(tmp) / "p1", turns)
            site.reset()
            with phases.wrapped(STEPS):
                product = await transport_turns(site, Path(tmp) / "p2", turns, PRODUCT, phases)
            site.reset()
            short = await transport_turns(site, Path(tmp) / "p3", turns, SHORT_GATE, None)
    finally:
        site.stop()
    o, s, p = statistics.median(product), statistics.median(short), statistics.median(plain)
    print(f"one turn on the fixture page (instant reply), {turns} turns, median ms")
    print(f"  xclaw ChatGPTWebTransport.send, product timeouts: {o:8.1f} ms")
    print(f"  xclaw ChatGPTWebTransport.send, short gate      : {s:8.1f} ms")
    print(f"  plain Playwright fill+click+wait (peer)         : {p:8.1f} ms")
    print("ratio transport/plain")
    print(_line("product timeouts", o, p))
    print(_line("short gate (poll 50 ms, window 200 ms)", s, p))
    _report_phases(phases, turns, PRODUCT)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)))
