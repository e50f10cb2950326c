"""``BrowserManager``: one dedicated browser, launched by us, kept alive, relaunched after a crash.

It launches a Playwright persistent context on the dedicated profile (``profile.py``) with the
browser found by ``discovery.py``. It never connects to a browser it did not start (no CDP
attach) and refuses a profile another live browser holds open. A crash (the browser process
gone, the context or page closed) is noticed through Playwright's events; the next ``page()``
relaunches with the same profile, so the login survives, and reopens the URL it is given.

The browser is started as a person's would be (``launch.py``: no automation flags,
``navigator.webdriver`` false, its own sandbox) and, with a window, minimised right after the
launch (seed 000 §4.2: through CDP, since ``--start-minimized`` does nothing on macOS); it is
shown when a person is needed and minimised again afterwards. ``XCLAW_BROWSER_SHOW=1`` (or
``BrowserOptions(start_minimized=False)``) keeps the window shown.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, Page, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from xclaw.browser.discovery import find_browser
from xclaw.browser.launch import LaunchPlan, plan_launch
from xclaw.browser.profile import profile_dir, profile_owner_pid
from xclaw.core.errors import ConfigError, XclawError
from xclaw.core.events import EventType
from xclaw.redact import redact

HEADLESS_ENV = "XCLAW_BROWSER_HEADLESS"
SHOW_ENV = "XCLAW_BROWSER_SHOW"
EventSink = Callable[[EventType, dict[str, Any]], None]
_TRUE = frozenset({"1", "true", "yes", "on"})


def launch_failed(executable: Path | str, err: Exception, hint: str) -> XclawError:
    """``BROWSER_LAUNCH_FAILED`` with the first line of what the browser said, redacted."""
    first_line = (str(err).strip().splitlines() or ["no detail"])[0]
    return XclawError(
        f"The browser at {executable} did not start: {redact(first_line)}",
        code="BROWSER_LAUNCH_FAILED",
        hint=hint,
    )


def headless_from_env() -> bool:
    return os.environ.get(HEADLESS_ENV, "").strip().lower() in _TRUE


def minimized_from_env() -> bool:
    """Minimised unless ``XCLAW_BROWSER_SHOW`` asks for the window to stay shown."""
    return os.environ.get(SHOW_ENV, "").strip().lower() not in _TRUE


@dataclass(frozen=True, slots=True)
class BrowserOptions:
    """How to launch the dedicated browser. With a window it starts minimised (seed 000
    §4.2) and is shown whenever a person is needed."""

    site: str = "default"  # names the profile: <data dir>/browser/<site>/
    executable: str | None = None  # else XCLAW_BROWSER, else the usual install places
    profile: Path | None = None  # overrides the profile directory (still never in a project)
    headless: bool | None = None  # None: XCLAW_BROWSER_HEADLESS=1 turns headless on
    # minimise after launch (XCLAW_BROWSER_SHOW=1: stay shown); show() brings the window back
    start_minimized: bool = field(default_factory=minimized_from_env)
    args: tuple[str, ...] = ()  # extra command-line flags
    project_roots: tuple[Path, ...] = ()  # the profile must not lie inside these
    init_scripts: tuple[str, ...] = ()  # JavaScript run in every page before the page's own
    launch_timeout_s: float = 30.0


class BrowserManager:
    """Owns one browser process, its persistent context and the page we drive."""

    def __init__(self, options: BrowserOptions | None = None, *, on_event: EventSink | None = None):
        self.options = options or BrowserOptions()
        self.on_event = on_event
        self.launches = 0  # how many times a browser was started (relaunches included)
        self.generation = 0  # goes up with every new page: a caller's cue to restore its state
        self.profile: Path | None = None
        self.plan: LaunchPlan | None = None  # the flags of the latest launch
        self._playwright: Playwright | None = None
        self._context: BrowserContext | None = None
        self._page: Page | None = None
        self._context_lost = False
        self._page_lost = False
        self._init_scripts: list[str] = list(self.options.init_scripts)

    @property
    def headless(self) -> bool:
        chosen = self.options.headless
        return headless_from_env() if chosen is None else chosen

    @property
    def alive(self) -> bool:
        """Whether the browser we launched is still there (its context not closed)."""
        return self._context is not None and not self._context_lost

    async def page(self, reopen_url: str | None = None) -> Page:
        """The live page, launching the browser first if needed. After a crash the browser is
        relaunched with the same profile and a lost page is replaced; whenever the page is a
        new one (``generation`` went up) it opens ``reopen_url`` when given."""
        if not self.alive:
            await self._close_context()
            await self._launch()
        elif self._page is None or self._page_lost or self._page.is_closed():
            assert self._context is not None
            self._watch_page(await self._context.new_page())
        else:
            return self._page
        if reopen_url:
            await self._open(reopen_url)
        assert self._page is not None
        return self._page

    async def relaunch(self, reopen_url: str | None = None) -> Page:
        """Close whatever is left of the browser and start it again on the same profile."""
        await self._close_context()
        await self._launch()
        if reopen_url:
            await self._open(reopen_url)
        assert self._page is not None
        return self._page

    async def add_init_script(self, script: str) -> None:
        """Run ``script`` in every page from its next navigation on, across relaunches."""
        if script in self._init_scripts:
            return
        self._init_scripts.append(script)
        if self._context is not None and self.alive:
            await self._context.add_init_script(script)

    async def show(self) -> None:
        """Bring the window to the front (restoring it if minimised): a person is needed."""
        await self._window_state("normal")
        if self._page is not None and not self._page.is_closed():
            try:
                await self._page.bring_to_front()
            except PlaywrightError:
                pass  # a page that just died is relaunched by the next page() call

    async def minimize(self) -> None:
        """Minimise the window again; pages keep rendering."""
        await self._window_state("minimized")

    async def close(self) -> None:
        await self._close_context()
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    async def _launch(self) -> None:
        opts = self.options
        executable = find_browser(opts.executable)
        self.profile = profile_dir(opts.site, path=opts.profile, project_roots=opts.project_roots)
        owner = profile_owner_pid(self.profile)
        if owner is not None:
            raise ConfigError(
                f"Another browser (pid {owner}) already has the profile {self.profile} open.",
                code="BROWSER_PROFILE_IN_USE",
                hint="Close that browser window (or the other xclaw run), then try again.",
            )
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        self.plan = plan = plan_launch(executable, opts.args, headless=self.headless)
        try:
            context = await self._playwright.chromium.launch_persistent_context(
                self.profile,
                executable_path=executable,
                headless=self.headless,
                args=list(plan.args),
                ignore_default_args=list(plan.ignore_default_args),
                chromium_sandbox=plan.chromium_sandbox,
                no_viewport=not self.headless,  # a real window sizes the page itself
                timeout=opts.launch_timeout_s * 1000,
            )
        except PlaywrightError as err:
            raise launch_failed(executable, err, _launch_hint(err)) from None
        await self._adopt(context)
        self._emit(executable, await self._user_agent())
        if opts.start_minimized and not self.headless:
            await self.minimize()

    async def _adopt(self, context: BrowserContext) -> None:
        self._context, self._context_lost = context, False
        self.launches += 1

        def lost(_: object) -> None:
            if self._context is context:
                self._context_lost = True

        context.on("close", lost)
        for script in self._init_scripts:
            await context.add_init_script(script)
        # A persistent context opens with one blank tab; drive that one instead of adding one.
        self._watch_page(context.pages[0] if context.pages else await context.new_page())

    def _watch_page(self, page: Page) -> None:
        self._page, self._page_lost = page, False
        self.generation += 1

        def lost(_: object) -> None:
            if self._page is page:
                self._page_lost = True

        page.on("close", lost)
        page.on("crash", lost)

    async def _open(self, url: str) -> None:
        assert self._page is not None
        await self._page.goto(url, wait_until="domcontentloaded")

    async def _close_context(self) -> None:
        context, self._context, self._page = self._context, None, None
        if context is not None:
            try:
                await context.close()
            except PlaywrightError:
                pass  # already gone with its browser

    async def _window_state(self, state: str) -> None:
        if self.headless or self._context is None or self._page is None or not self.alive:
            return
        try:
            cdp = await self._context.new_cdp_session(self._page)
            window = await cdp.send("Browser.getWindowForTarget")
            bounds = {"windowState": state}
            await cdp.send(
                "Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": bounds}
            )
            await cdp.detach()
        except PlaywrightError:
            pass  # window management is a courtesy; the page works either way

    async def _user_agent(self) -> str | None:
        """The user agent the pages send, as the browser reports it."""
        if self._context is None or self._page is None:
            return None
        try:
            cdp = await self._context.new_cdp_session(self._page)
            version = await cdp.send("Browser.getVersion")
            await cdp.detach()
        except PlaywrightError:
            return None  # the browser is already gone: the next page() relaunches it
        return str(version.get("userAgent", "")) or None

    def _emit(self, executable: Path, user_agent: str | None) -> None:
        if self.on_event is None:
            return
        self.on_event(
            "browser.started",
            {
                "executable": str(executable),
                "profile": str(self.profile),
                "headless": self.headless,
                "minimized": self.options.start_minimized and not self.headless,
                "user_agent": user_agent,
                "launch": self.launches,
            },
        )


def _launch_hint(err: Exception) -> str:
    if "sandbox" in str(err).lower():  # e.g. a container without user namespaces
        return (
            "The browser's sandbox could not start here: fix the container's user namespaces, "
            "or add --no-sandbox to XCLAW_BROWSER_ARGS."
        )
    return (
        "Close other windows using this profile, or set XCLAW_BROWSER to another Chrome or "
        "Chromium."
    )
