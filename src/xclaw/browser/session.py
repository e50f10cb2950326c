"""One browser for many sessions, one ``BrowserContext`` per session (seed 003 ch. 07).

``BrowserManager`` drives one persistent profile (a login that must survive); the assistant's
browser tools need the opposite: every session its own cookie jar, storage and cache, gone when
the session ends, so session A's login never shows up in session B. ``BrowserPool`` launches
one browser without a profile and hands out fresh contexts; ``BrowserSession`` owns one context,
its current page (the newest tab) and what the tools track about it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    Request,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from xclaw.browser.discovery import find_browser
from xclaw.browser.launch import BASE_ARGS
from xclaw.browser.manager import BrowserOptions, headless_from_env, launch_failed

Resolver = Callable[[str], Awaitable[tuple[str, ...]]]


class ContextGuard(Protocol):
    """Watches every request of a context (``tools/browser_guard.py``: what may be opened)."""

    async def install(self, context: BrowserContext) -> None: ...


async def resolve_host(host: str, timeout_s: float = 2.0) -> tuple[str, ...]:
    """The addresses ``host`` resolves to; empty when it does not resolve in time."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError, UnicodeError):
        return ()
    return tuple(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class BrowserTimeouts:
    navigation_s: float = 20.0  # page.goto until the DOM is parsed
    action_s: float = 5.0  # a click or fill waiting for its element to be actionable
    settle_s: float = 3.0  # after an action: network quiet and DOM stable, at most this
    quiet_ms: int = 250  # how long the DOM must not change to count as stable


class BrowserPool:
    """One launched browser without a profile; ``new_context()`` per session."""

    def __init__(self, options: BrowserOptions | None = None) -> None:
        self.options = options or BrowserOptions(headless=True)
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()

    async def new_context(self, **settings: Any) -> BrowserContext:
        """A fresh, isolated context (Playwright ``new_context`` settings pass through)."""
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                await self._launch()
            assert self._browser is not None
            return await self._browser.new_context(**settings)

    async def _launch(self) -> None:
        opts = self.options
        executable = find_browser(opts.executable)
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        headless = headless_from_env() if opts.headless is None else opts.headless
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=executable,
                headless=headless,
                args=[*BASE_ARGS, *opts.args],
                timeout=opts.launch_timeout_s * 1000,
            )
        except PlaywrightError as err:
            raise launch_failed(
                executable, err, "Set XCLAW_BROWSER to another Chrome or Chromium."
            ) from None

    async def __aenter__(self) -> BrowserPool:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._browser is not None:
            try:
                await self._browser.close()
            except PlaywrightError:
                pass  # already gone
            self._browser = None
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None


@dataclass(slots=True)
class _Traffic:
    """Requests in flight on the session's pages, with when each started."""

    pending: dict[Request, float] = field(default_factory=dict)

    def started(self, request: Request) -> None:
        self.pending[request] = time.monotonic()

    def ended(self, request: Request) -> None:
        self.pending.pop(request, None)

    def busy(self, ignore_older_than_s: float = 1.5) -> bool:
        """A request started recently is still running (long polls and streams are not)."""
        now = time.monotonic()
        return any(now - t < ignore_older_than_s for t in self.pending.values())


class BrowserSession:
    """A session's own context, opened on first use; its current page is the newest tab."""

    def __init__(
        self,
        pool: BrowserPool,
        *,
        viewport: tuple[int, int] = (1280, 800),
        timeouts: BrowserTimeouts | None = None,
        resolver: Resolver = resolve_host,
        context_settings: dict[str, Any] | None = None,
    ) -> None:
        self.pool = pool
        self.viewport = viewport
        self.timeouts = timeouts or BrowserTimeouts()
        self.resolver = resolver
        self.context_settings = dict(context_settings or {})
        self.version = 0  # goes up with every action that may change the page
        self.shots = 0  # screenshots taken, for file names
        self.traffic = _Traffic()
        self.init_scripts: list[str] = []
        self.memo: dict[str, Any] = {}  # what the tools keep between calls (content pages)
        # Installed on the context before its first page, so no request escapes it.
        self.guard: ContextGuard | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._new_tab = False

    @property
    def context(self) -> BrowserContext | None:
        return self._context

    async def page(self) -> Page:
        """The page the tools act on, opening the context (and a first tab) when needed."""
        if self._context is None:
            width, height = self.viewport
            settings: dict[str, Any] = {"viewport": {"width": width, "height": height}}
            if self.guard is not None:  # a service worker's own fetches would not be routed
                settings["service_workers"] = "block"
            settings.update(self.context_settings)
            context = await self.pool.new_context(**settings)
            if self.guard is not None:
                await self.guard.install(context)
            for script in self.init_scripts:
                await context.add_init_script(script)
            context.on("page", self._adopt)
            self._context = context
            self._adopt(await context.new_page())
            self._new_tab = False
        if self._page is None or self._page.is_closed():
            assert self._context is not None
            open_pages = [p for p in self._context.pages if not p.is_closed()]
            self._adopt(open_pages[-1] if open_pages else await self._context.new_page())
        assert self._page is not None
        return self._page

    def take_new_tab(self) -> bool:
        """Whether a new tab became the current page since the last call."""
        seen, self._new_tab = self._new_tab, False
        return seen

    def _adopt(self, page: Page) -> None:
        if page is self._page:
            return
        self._page, self._new_tab = page, True
        traffic = self.traffic  # plain functions: Playwright tags its handlers
        page.on("request", lambda request: traffic.started(request))
        page.on("requestfinished", lambda request: traffic.ended(request))
        page.on("requestfailed", lambda request: traffic.ended(request))

    async def __aenter__(self) -> BrowserSession:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the context: its cookies, storage and pages are gone."""
        context, self._context, self._page = self._context, None, None
        self.memo.clear()
        if context is not None:
            try:
                await context.close()
            except PlaywrightError:
                pass
