"""The page face, assembled: the WebAgent of ``xclaw page run`` (seed 002) from the resolved
configuration, and the browser ``xclaw page snapshot`` opens.

    runtime = build_page(config, Path.cwd(), Overrides(model=spec), PageFlags(headless=True))
    result = await runtime.run(url, task, bus=bus, callbacks=callbacks)

The chain: model (``--model`` or ``model:``, with ``models:``) → approver (``--approval`` or
``approval:``) → rounds (``--max-rounds``) → browsing policy (``browsing.allow_hosts``) →
browser (``--headless``, ``--browser``, ``XCLAW_BROWSER_ARGS``). The page agent starts no
program, so it has no command sandbox: each run gets a fresh, non-persistent browser
context, and every request the page makes is judged by the browsing policy.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.compose.coding import face_model
from xclaw.compose.settings import Overrides, approval_mode, mode_approver
from xclaw.config import XclawConfig
from xclaw.core.extras import require

if TYPE_CHECKING:
    from xclaw.browser import BrowserOptions
    from xclaw.browser.session import BrowserPool
    from xclaw.core.events import EventBus
    from xclaw.core.model import Model
    from xclaw.core.state import RunControl
    from xclaw.core.tooling import Approver
    from xclaw.page.agent import AgentLoopResult
    from xclaw.page.callbacks import WebAgentCallbacks
    from xclaw.page.driver import PageDriver
    from xclaw.page.snapshot import Snapshot, SnapshotOptions

__all__ = ["PageFlags", "PageRuntime", "build_page", "browser_options", "snapshot_page"]

VIEWPORT = {"width": 1280, "height": 800}
DEFAULT_MAX_ROUNDS = 40


@dataclass(frozen=True, slots=True)
class PageFlags:
    """``xclaw page``'s own flags, beside the common ``Overrides`` (model, approval)."""

    headless: bool = False
    browser: str | None = None  # a Chromium/Chrome executable
    max_rounds: int = DEFAULT_MAX_ROUNDS


def browser_options(flags: PageFlags) -> BrowserOptions:
    """The browser of a page command: ``--browser``, ``--headless`` (else the environment's
    choice), and the Chromium flags of ``XCLAW_BROWSER_ARGS``."""
    from xclaw.browser import BrowserOptions

    extra = tuple(shlex.split(os.environ.get("XCLAW_BROWSER_ARGS", "")))
    return BrowserOptions(executable=flags.browser, headless=flags.headless or None, args=extra)


@dataclass(slots=True)
class PageRuntime:
    """An assembled page agent: what ``run`` opens a page with and drives it by."""

    config: XclawConfig
    directory: Path  # the run's workspace: the browsing policy's root and grants
    model: Model
    model_spec: str
    approver: Approver
    flags: PageFlags

    @property
    def allow_hosts(self) -> tuple[str, ...]:
        return tuple(self.config.browsing.allow_hosts)

    async def run(
        self,
        url: str,
        task: str,
        *,
        bus: EventBus | None = None,
        callbacks: WebAgentCallbacks | None = None,
        control: RunControl | None = None,
    ) -> AgentLoopResult:
        """Open ``url`` in a fresh context of a new browser and chat ``task`` on it; the
        browser and the model are closed after."""
        from xclaw.browser.session import BrowserPool
        from xclaw.page.agent import WebAgent

        pool = BrowserPool(browser_options(self.flags))
        try:
            driver = await self._open(pool, url)
            agent = WebAgent(
                self.model,
                driver,
                max_rounds=self.flags.max_rounds,
                callbacks=callbacks,
                approval=self.approver,
                bus=bus,
            )
            return await agent.chat(task, control=control)
        finally:
            await pool.close()
            await self.model.aclose()

    async def _open(self, pool: BrowserPool, url: str) -> PageDriver:
        from xclaw.page.driver import PageDriver
        from xclaw.tools.base import Workspace
        from xclaw.tools.browser_guard import NavigationGuard, NavigationRules

        context = await pool.new_context(viewport=VIEWPORT)
        # Every later request is judged by the browsing policy; the address typed here is
        # the user's own choice, so the first goto is approved by the driver.
        rules = NavigationRules(allow_hosts=self.allow_hosts)
        rules.attach(Workspace(self.directory))
        driver = PageDriver(await context.new_page(), guard=NavigationGuard(rules))
        await driver.install()
        await driver.navigate("goto", url=url)
        return driver

    def describe(self) -> dict[str, Any]:
        """What was assembled, comparable across surfaces: tools, limits, model, sandbox and
        policy (the approver and the browsing policy), and the browser."""
        from xclaw.page.tools import PAGE_TOOL_NAMES

        options = browser_options(self.flags)
        return {
            "tools": sorted(PAGE_TOOL_NAMES),
            "limits": {"max_rounds": self.flags.max_rounds},
            "model": self.model_spec,
            "sandbox": None,  # no program runs: a fresh browser context per run instead
            "policy": {
                "approver": type(self.approver).__name__,
                "mode": getattr(self.approver, "mode", "ask"),
                "allow_hosts": list(self.allow_hosts),
            },
            "browser": {"executable": options.executable, "headless": options.headless},
        }


def build_page(
    config: XclawConfig,
    directory: Path,
    overrides: Overrides | None = None,
    flags: PageFlags | None = None,
    *,
    approver_for: Callable[[str | None], Approver] = mode_approver,
    model: Model | None = None,
    model_spec: str | None = None,
) -> PageRuntime:
    """The page agent of a command on ``directory`` from the resolved ``config``.
    ``approver_for`` makes the approver of the approval mode (``--approval``, else
    ``approval:``); a terminal surface passes one that can ask. ``model``: a model object
    instead of ``--model``/``model:`` (``model_spec`` saying what it was made from)."""
    require("browser", "the page agent")
    given = overrides or Overrides()
    spec = model_spec or ""
    if model is None:
        model, spec = face_model(config, directory, given)
    return PageRuntime(
        config,
        directory,
        model,
        spec,
        approver_for(approval_mode(config, given)),
        flags or PageFlags(),
    )


async def snapshot_page(url: str, options: SnapshotOptions, flags: PageFlags) -> Snapshot:
    """Open ``url`` in a fresh context of a new browser, let it settle, and snapshot it."""
    require("browser", "a page snapshot")
    from xclaw.browser.session import BrowserPool
    from xclaw.core.errors import XclawError
    from xclaw.page.driver import PageDriver

    pool = BrowserPool(browser_options(flags))
    try:
        context = await pool.new_context(viewport=VIEWPORT)
        driver = PageDriver(await context.new_page())
        await driver.install()
        await driver.navigate("goto", url=url)
        try:
            await driver.wait("wait_for_stable", quietMs=300, timeout=3000)
        except XclawError:
            pass  # a page that never stops changing is snapshotted as it is
        return await driver.snapshot(options)
    finally:
        await pool.close()
