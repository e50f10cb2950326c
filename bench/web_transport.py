"""The ChatGPT web transport's own overhead per turn, beside a plain Playwright round trip.

Both drive the same page of the fixture site (tests/browser/fixture_server.py, our own
reproduction of the ChatGPT page states) in the same headless Chromium, and the page answers
at once (the whole reply in one step). Plain Playwright: fill the composer, click send, wait
for the new turn's copy button, read its text. The transport: ``send(text)``, which also
checks the page state, waits for its composite completion gate (stop button gone, action bar
present for 3 polls, text stable for the window) and reads the reply through the copy button.
The gate's waits are the test timeouts (poll 50 ms, stable window 200 ms); they are part of
the figure, because they are what a turn costs. Nothing here says how chatgpt.com behaves.
Run: ``make bench`` (or ``python bench/web_transport.py 20``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))

from fixture_server import FixtureSite, Reply  # noqa: E402
from web_support import web_options  # noqa: E402

from xclaw.models.chatgpt_web import ChatGPTWebTransport  # noqa: E402

INSTANT = 100_000  # characters per streamed step: the reply lands in one step


async def transport_turns(site: FixtureSite, profile: Path, turns: int) -> list[float]:
    transport = ChatGPTWebTransport(web_options(site, profile))
    times: list[float] = []
    try:
        for i in range(turns + 2):
            site.queue(Reply(f"reply {i}", chunk=INSTANT, interval_ms=0))
            start = time.perf_counter()
            assert await transport.send(f"message {i}") == f"reply {i}"
            times.append((time.perf_counter() - start) * 1000)
    finally:
        await transport.aclose()
    return times[2:]  # the first turns open the browser and the conversation


async def playwright_turns(site: FixtureSite, profile: Path, turns: int) -> list[float]:
    transport = ChatGPTWebTransport(web_options(site, profile))  # only to launch the page
    page = await transport.manager.page()
    await page.goto(site.url)
    times: list[float] = []
    try:
        for i in range(turns + 2):
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
    return times[2:]


async def main(turns: int) -> int:
    site = FixtureSite().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            plain = await playwright_turns(site, Path(tmp) / "p1", turns)
            site.reset()
            ours = await transport_turns(site, Path(tmp) / "p2", turns)
    finally:
        site.stop()
    o, p = statistics.median(ours), statistics.median(plain)
    print(f"one turn on the fixture page (instant reply), {turns} turns, median ms")
    print(f"  xclaw ChatGPTWebTransport.send : {o:8.1f} ms")
    print(f"  plain Playwright fill+click+wait: {p:8.1f} ms")
    print(f"  ratio transport/plain           : {o / p:8.2f}x  (added {o - p:.1f} ms per turn)")
    gate = web_options(site).timeouts
    waits = (gate.stable_window_s + gate.finished_polls * gate.poll_s) * 1000
    print(f"  of the added time, the completion gate's deliberate waits: >= {waits:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)))
