"""``PageDriver``: the five page tools' work on one Playwright page, through the in-page library.

The library (``js/autopilot.js``) is registered with ``page.add_init_script`` so every new
document (and frame) has it before its own scripts run, and evaluated into the current
documents when missing (a page opened before the driver, a frame the init script missed).
Every call goes to the main frame; the library itself walks open shadow roots and same-origin
iframes, so refs reach into those. Cross-origin iframes appear in a snapshot as one line.

``goto``/``back``/``forward``/``reload`` run from Python (``page.goto`` and friends) and wait
for ``load``; the library is re-installed afterwards if the new document lacks it. A call cut
short by a navigation (the execution context destroyed) is retried on the new document, except
a ``dom`` action, which is reported as having started that navigation.

With a ``guard`` (``tools/browser_guard.NavigationGuard``), every request of the page's
context is judged as the policy judges ``navigate goto``: a redirect, a script, a link or a
form that would take the page (or a frame, or a ``fetch``) to a non-web scheme, a file outside
the project or a private address is stopped, and the page tools report it
(``BROWSER_NAVIGATION_BLOCKED``). A ``goto`` the policy (or a human) allowed passes.

``evaluate`` compiles the expression in the page with ``new Function`` (expression first, then
a statement block). A page whose Content-Security-Policy forbids that (no ``unsafe-eval``) is
answered through Playwright's ``page.evaluate_handle`` instead, serialised the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

from xclaw.core.errors import ToolError
from xclaw.page.snapshot import FIRST_ROUND, MANUAL, Snapshot, SnapshotOptions

if TYPE_CHECKING:
    from xclaw.tools.browser_guard import NavigationGuard

__all__ = ["DOM_CHANGING_ACTIONS", "NAVIGATION_ACTIONS", "PageDriver", "library_source"]

NAVIGATION_ACTIONS = frozenset({"goto", "back", "forward", "reload"})
DOM_CHANGING_ACTIONS = frozenset({"click", "press", "select_option", "check", "uncheck"}) | (
    NAVIGATION_ACTIONS
)
"""Actions after which the page agent breaks the round and waits for a fresh snapshot."""
RETRYABLE_CODES = frozenset(
    {"ELEMENT_NOT_FOUND", "ELEMENT_NOT_VISIBLE", "ELEMENT_COVERED", "ELEMENT_DETACHED"}
)
_CALL = """async ([method, args]) => {
  const lib = window.__xclawPage;
  if (!lib) return { __xclawMissing: true };
  return await lib[method](args);
}"""
_SERIALIZE = "(value) => window.__xclawPage.serialize(value)"
_GONE = ("Execution context was destroyed", "navigat", "Target closed", "Frame was detached")


@lru_cache(maxsize=1)
def library_source() -> str:
    """The in-page library's text (``xclaw/page/js/autopilot.js``)."""
    return (files("xclaw.page") / "js" / "autopilot.js").read_text(encoding="utf-8")


class _Navigated(Exception):
    """The document went away while a call ran in it."""


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or ["no detail"])[0]


def _present(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def raise_for(out: Any, what: str) -> dict[str, Any]:
    """The library's ``{ok: false, code, message, hint}`` as a ``ToolError``; else the dict."""
    if not isinstance(out, dict):
        raise ToolError(f"The page returned nothing usable for {what}.", code="PAGE_SCRIPT_ERROR")
    if out.get("ok", False):
        return out
    code = str(out.get("code") or "PAGE_SCRIPT_ERROR")
    data = {k: out[k] for k in ("action", "selector") if out.get(k) is not None}
    raise ToolError(
        str(out.get("message") or f"{what} failed."),
        code=code,
        hint=str(out.get("hint") or ""),
        retryable=code in RETRYABLE_CODES,
        data=data,
    )


class _NavigationWatch:
    """Notices a main-frame navigation an action starts (a link, a form submit, a pushState)."""

    GRACE_S = 0.15  # a click's navigation request leaves a task or two after the click

    def __init__(self, page: Page) -> None:
        self.page = page
        self.requested = asyncio.Event()
        self.committed = asyncio.Event()
        page.on("request", self._on_request)
        page.on("framenavigated", self._on_navigated)

    def _on_request(self, request: Any) -> None:
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self.requested.set()

    def _on_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.committed.set()

    async def settle(self, timeout_s: float) -> bool:
        """Whether the page navigated; if it did, wait (bounded) for the new page's load."""
        try:
            async with asyncio.timeout(self.GRACE_S):
                await self.requested.wait()
        except TimeoutError:
            return self.committed.is_set()  # same-document moves commit without a request
        try:
            async with asyncio.timeout(timeout_s):
                await self.committed.wait()
            await self.page.wait_for_load_state("load", timeout=timeout_s * 1000)
        except (TimeoutError, PlaywrightError):
            pass  # still loading: the next snapshot retries on the new document
        return True

    def close(self) -> None:
        self.page.remove_listener("request", self._on_request)
        self.page.remove_listener("framenavigated", self._on_navigated)


class PageDriver:
    """The page tools' implementation on one Playwright ``Page``."""

    def __init__(
        self,
        page: Page,
        *,
        project_root: Path | None = None,
        navigation_timeout_s: float = 30.0,
        guard: NavigationGuard | None = None,
    ) -> None:
        self.page = page
        self.project_root = project_root
        self.navigation_timeout_s = navigation_timeout_s
        self.guard = guard
        self._guard_installed = False
        self._init_script_added = False

    # ------------------------------------------------------------------ installing
    async def install(self) -> None:
        """Register the library for future documents and put it into the current ones."""
        if self.guard is not None and not self._guard_installed:
            await self.guard.install(self.page.context)
            self._guard_installed = True
        if not self._init_script_added:
            await self.page.add_init_script(script=library_source())
            self._init_script_added = True
        for frame in self.page.frames:
            try:
                await self._ensure(frame)
            except PlaywrightError:
                pass  # a frame that is going away, or not ready yet: next call retries

    async def _ensure(self, frame: Frame) -> None:
        if not await frame.evaluate("() => !!window.__xclawPage"):
            await frame.evaluate(library_source())

    async def _call(self, method: str, args: Any, *, retry: bool = True) -> Any:
        if not self._init_script_added:
            await self.install()
        for attempt in range(3):
            if self.page.is_closed():
                raise ToolError("The page was closed.", code="PAGE_CLOSED")
            frame = self.page.main_frame
            try:
                out = await frame.evaluate(_CALL, [method, args])
                if isinstance(out, dict) and out.get("__xclawMissing"):
                    await self._ensure(frame)
                    continue
                return out
            except PlaywrightError as err:
                gone = any(mark in str(err) for mark in _GONE)
                if not gone:
                    raise ToolError(
                        f"The page could not run {method}: {_first_line(err)}",
                        code="PAGE_SCRIPT_ERROR",
                    ) from None
                if not retry or attempt == 2:
                    raise _Navigated() from None
                await self._settle()
        raise ToolError(
            f"The page library could not be installed for {method}.", code="PAGE_SCRIPT_ERROR"
        )

    async def _settle(self) -> None:
        try:
            await self.page.wait_for_load_state(
                "domcontentloaded", timeout=self.navigation_timeout_s * 1000
            )
        except PlaywrightError:
            pass  # still loading: the caller's retry sees it

    async def _call_settled(self, method: str, args: Any) -> Any:
        try:
            return await self._call(method, args)
        except _Navigated:
            raise ToolError(
                f"The page kept navigating while {method} ran.",
                code="PAGE_NAVIGATING",
                hint="Wait for the page to load (wait_for_stable), then try again.",
                retryable=True,
            ) from None

    # ------------------------------------------------------------------ the five tools
    async def snapshot(self, options: SnapshotOptions = FIRST_ROUND) -> Snapshot:
        """The page as the model sees it (seed 002 §5); rebuilds the ref store."""
        out = await self._call_settled("snapshot", options.to_js())
        return Snapshot.from_js(raise_for(out, "snapshot"))

    async def dom(self, action: str, selector: str, **args: Any) -> dict[str, Any]:
        """One ``dom`` action (click, fill, ...). Raises ``ToolError`` with the seed's codes.

        After a DOM-changing action, a navigation it started is awaited (up to ``load``) and
        reported as ``navigated: True`` with the new ``url``."""
        payload = {"action": action, "selector": selector, **_present(args)}
        watch = _NavigationWatch(self.page)
        try:
            try:
                out = raise_for(await self._call("dom", payload, retry=False), f"dom {action}")
            except _Navigated:
                out = {
                    "ok": True,
                    "action": action,
                    "selector": selector,
                    "message": f"{action} on {selector} started a navigation.",
                }
            if action in DOM_CHANGING_ACTIONS:
                if await watch.settle(self.navigation_timeout_s):
                    out["navigated"] = True
                out["url"] = self.page.url
        finally:
            watch.close()
        return out

    async def navigate(self, action: str, **args: Any) -> dict[str, Any]:
        """goto / back / forward / reload (Playwright, waiting for load) or scroll (in page)."""
        if action == "scroll":
            out = await self._call_settled("scroll", _present(args))
            return raise_for(out, "navigate scroll")
        if action not in NAVIGATION_ACTIONS:
            raise ToolError(
                f"Unknown navigate action {action!r}.",
                code="INVALID_ARGUMENT",
                hint="Use goto, back, forward, reload or scroll.",
            )
        before = self.page.url
        if self.guard is not None and not self._guard_installed:
            await self.install()
        url_arg = args.get("url")
        if self.guard is not None and action == "goto" and isinstance(url_arg, str):
            await self.guard.approve(url_arg.strip())  # the policy allowed it, or a human
        with self.guard.during() if self.guard is not None else contextlib.nullcontext():
            status = await self._navigate(action, url_arg)
        await self._ensure_main()
        url = self.page.url
        moved = url != before or action in ("goto", "reload")
        message = f"Now at {url}" if moved else f"No page to go {action} to; still at {url}"
        return {
            "ok": True,
            "action": action,
            "url": url,
            "title": await self.page.title(),
            "status": status,
            "navigated": moved,
            "message": message,
        }

    async def _navigate(self, action: str, url: Any) -> int | None:
        timeout = self.navigation_timeout_s * 1000
        try:
            if action == "goto":
                if not isinstance(url, str) or not url.strip():
                    raise ToolError("goto needs url.", code="INVALID_ARGUMENT")
                response = await self.page.goto(url.strip(), wait_until="load", timeout=timeout)
            elif action == "back":
                response = await self.page.go_back(wait_until="load", timeout=timeout)
            elif action == "forward":
                response = await self.page.go_forward(wait_until="load", timeout=timeout)
            else:
                response = await self.page.reload(wait_until="load", timeout=timeout)
        except PlaywrightError as err:
            raise ToolError(
                f"{action} failed: {_first_line(err)}",
                code="NAVIGATION_FAILED",
                hint="Check the URL, or wait and retry if the site is slow.",
                retryable=True,
            ) from None
        return response.status if response is not None else None

    async def _ensure_main(self) -> None:
        try:
            await self._ensure(self.page.main_frame)
        except PlaywrightError:
            await self._settle()
            await self._ensure(self.page.main_frame)

    async def wait(self, action: str, **args: Any) -> dict[str, Any]:
        """wait_for_selector / wait_for_hidden / wait_for_text / wait_for_stable."""
        out = await self._call_settled("wait", {"action": action, **_present(args)})
        return raise_for(out, f"wait {action}")

    async def page_info(self, action: str, **args: Any) -> dict[str, Any] | str:
        """URL, title, selection, viewport (a dict), snapshot text, or query_all matches."""
        if action == "snapshot":
            options = SnapshotOptions(
                max_depth=int(args.get("maxDepth") or MANUAL.max_depth),
                viewport_only=bool(args.get("viewportOnly", MANUAL.viewport_only)),
                prune_layout=bool(args.get("pruneLayout", MANUAL.prune_layout)),
                max_nodes=int(args.get("maxNodes") or MANUAL.max_nodes),
                max_children=int(args.get("maxChildren") or MANUAL.max_children),
                max_text_length=int(args.get("maxTextLength") or MANUAL.max_text_length),
            )
            return (await self.snapshot(options)).text
        out = raise_for(
            await self._call_settled("pageInfo", {"action": action, **_present(args)}),
            f"page_info {action}",
        )
        if action == "get_viewport":
            return {k: v for k, v in out.items() if k != "ok"}
        return str(out.get("result", ""))

    async def evaluate(self, expression: str) -> str:
        """Run JavaScript in the page; the value serialised (elements as ``<tag#id> "text"``)."""
        out = await self._call_settled("evaluate", expression)
        if isinstance(out, dict) and out.get("code") == "EVALUATE_BLOCKED":
            return await self._evaluate_outside_csp(expression)
        return str(raise_for(out, "evaluate").get("result", ""))

    async def _evaluate_outside_csp(self, expression: str) -> str:
        try:
            handle = await self.page.evaluate_handle(expression)
            try:
                return str(await self.page.evaluate(_SERIALIZE, handle))
            finally:
                await handle.dispose()
        except PlaywrightError as err:
            raise ToolError(
                f"evaluate failed: {_first_line(err)}",
                code="EVALUATE_FAILED",
                hint="Check the expression; statements need a block the page's CSP allows.",
            ) from None
