"""``PageDriver``: the five page tools' work on one Playwright page, through the in-page library.

The library (``js/autopilot.js``) is registered with ``page.add_init_script`` so every new
document (and frame) has it before its own scripts run, and evaluated into the current
documents when missing (a page opened before the driver, a frame the init script missed).
Calls go to the main frame; the library itself walks open shadow roots and same-origin
iframes, so refs reach into those. A cross-origin iframe is read through Playwright's frame API
(``xclaw.browser.frames``): the library runs in that frame too, its snapshot goes under the
frame's line and its refs carry the frame (``#f1:a1b2c``); ``dom``, ``wait`` and ``navigate
scroll`` with such a ref run in that frame, and a ``wait_for_text`` watches every frame read.

Every snapshot records the library's change key of each frame it read; ``changed`` asks the
frames again (one cheap call each), so a loop can reuse a snapshot of a page that did not
change.

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
import json
from dataclasses import replace
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

from xclaw.browser.frames import FrameIds, slot_frames
from xclaw.core.errors import ToolError
from xclaw.page.snapshot import FIRST_ROUND, FRAME_REF, MANUAL, Snapshot, SnapshotOptions

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
_MAX_FRAME_DEPTH = 3  # cross-origin frames inside cross-origin frames, this deep at most
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


def _unpack(out: dict[str, Any]) -> dict[str, Any]:
    """A snapshot result asked for ``packed``: the object is one JSON string (faster)."""
    packed = out.get("packed")
    if isinstance(packed, str):
        unpacked: dict[str, Any] = json.loads(packed)
        return unpacked
    return out


def _frame_gone(method: str) -> ToolError:
    return ToolError(
        f"The frame to run {method} in is gone (removed, or replaced by the page).",
        code="ELEMENT_NOT_FOUND",
        hint="Use a ref from the latest snapshot; the frame's refs changed with it.",
        retryable=True,
    )


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
        self.last: Snapshot | None = None  # the latest snapshot taken, for ``changed``
        self._frames = FrameIds(page)  # "f1" -> a cross-origin frame a snapshot read

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

    async def _call(
        self, method: str, args: Any, *, retry: bool = True, frame: Frame | None = None
    ) -> Any:
        """Run the library's ``method`` in ``frame`` (default: the main frame)."""
        if not self._init_script_added:
            await self.install()
        for attempt in range(3):
            if self.page.is_closed():
                raise ToolError("The page was closed.", code="PAGE_CLOSED")
            if frame is not None and frame.is_detached():
                raise _frame_gone(method)
            target = frame or self.page.main_frame
            try:
                out = await target.evaluate(_CALL, [method, args])
                if isinstance(out, dict) and out.get("__xclawMissing"):
                    await self._ensure(target)
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
                await self._settle(target)
        raise ToolError(
            f"The page library could not be installed for {method}.", code="PAGE_SCRIPT_ERROR"
        )

    async def _settle(self, frame: Frame | None = None) -> None:
        try:
            await (frame or self.page.main_frame).wait_for_load_state(
                "domcontentloaded", timeout=self.navigation_timeout_s * 1000
            )
        except PlaywrightError:
            pass  # still loading (or detached): the caller's retry sees it

    async def _call_settled(self, method: str, args: Any, frame: Frame | None = None) -> Any:
        try:
            return await self._call(method, args, frame=frame)
        except _Navigated:
            raise ToolError(
                f"The page kept navigating while {method} ran.",
                code="PAGE_NAVIGATING",
                hint="Wait for the page to load (wait_for_stable), then try again.",
                retryable=True,
            ) from None

    # ------------------------------------------------------------------ the five tools
    async def snapshot(
        self, options: SnapshotOptions = FIRST_ROUND, *, keep_refs: bool = False
    ) -> Snapshot:
        """The page as the model sees it (seed 002 §5); rebuilds the ref store (``keep_refs``:
        adds to it, so the refs of the loop's snapshot keep working after a manual one).
        Cross-origin frames are read through Playwright's frame API and put in place."""
        args = options.to_js()
        if keep_refs:
            args["keepRefs"] = True
        raw = _unpack(raise_for(await self._call_settled("snapshot", args), "snapshot"))
        snap = await self._with_frames(Snapshot.from_js(raw), raw, self.page.main_frame, args, 0)
        self.last = snap
        return snap

    async def changed(self, snapshot: Snapshot | None = None) -> bool:
        """Whether the page may look different from ``snapshot`` (default: the latest snapshot
        this driver took, whatever its options) now: its DOM mutated, a value, an image, the
        scroll position, the viewport or the URL changed, or an animation runs (the page
        library's change counter, in each frame the snapshot read). True when that cannot be
        told."""
        snapshot = snapshot or self.last
        if snapshot is None or not snapshot.keys or self.page.is_closed():
            return True
        for frame_id, key in snapshot.keys.items():
            frame = self._frames.get(frame_id) if frame_id else self.page.main_frame
            if frame is None:
                return True
            try:
                now = await self._call("changeKey", None, retry=False, frame=frame)
            except (_Navigated, ToolError):
                return True
            if now != key:
                return True
        return False

    # ------------------------------------------------------------------ frames
    async def _with_frames(
        self, snap: Snapshot, raw: dict[str, Any], frame: Frame, args: dict[str, Any], depth: int
    ) -> Snapshot:
        """``snap`` with the snapshot of each cross-origin frame it left a slot for, indented
        under that frame's line; their refs carry the frame (``#f1:a1b2c``)."""
        slots = [s for s in raw.get("frames") or [] if isinstance(s, dict)]
        if not slots:
            return snap
        by_slot = await slot_frames(frame) if depth < _MAX_FRAME_DEPTH else {}
        lines = snap.text.split("\n")
        inserts: list[tuple[int, list[str]]] = []
        refs, keys = list(snap.refs), dict(snap.keys)
        nodes, interactive, truncated = snap.stats.nodes, snap.stats.interactive, False
        placed = [
            (int(s.get("line", -1)), int(s.get("indent", 0)), by_slot.get(str(s.get("slot"))))
            for s in slots
        ]
        placed = [(at, indent, child) for at, indent, child in placed if 0 <= at < len(lines)]
        subs = await asyncio.gather(
            *(self._frame_snapshot(c, args, depth) for _, _, c in placed if c is not None)
        )
        found = iter(subs)
        for at, indent, child in placed:
            sub = next(found) if child is not None else None
            if sub is None:
                lines[at] += " (not loaded)" if child is None else " (not readable)"
                continue
            pad = "  " * (indent + 1)
            inserts.append((at, [pad + line for line in sub.text.split("\n")]))
            refs += sub.refs
            keys.update(sub.keys)
            nodes += sub.stats.nodes
            interactive += sub.stats.interactive
            truncated = truncated or sub.stats.truncated
        for at, block in sorted(inserts, reverse=True):
            lines[at + 1 : at + 1] = block
        stats = replace(
            snap.stats,
            nodes=nodes,
            interactive=interactive,
            truncated=snap.stats.truncated or truncated,
        )
        return replace(snap, text="\n".join(lines), refs=refs, stats=stats, keys=keys)

    async def _frame_snapshot(
        self, frame: Frame, args: dict[str, Any], depth: int
    ) -> Snapshot | None:
        frame_id = self._frames.id_of(frame)
        try:
            out = await self._call(
                "snapshot", {**args, "refPrefix": f"{frame_id}:"}, retry=False, frame=frame
            )
            raw = _unpack(raise_for(out, "snapshot"))
        except (_Navigated, ToolError, PlaywrightError):
            return None  # loading, gone, or a document the library cannot run in
        snap = Snapshot.from_js(raw)
        snap = replace(snap, keys={frame_id: snap.keys[""]} if "" in snap.keys else {})
        return await self._with_frames(snap, raw, frame, args, depth + 1)

    def _route(self, selector: str | None) -> tuple[Frame | None, str | None]:
        """The frame a ref like ``#f1:a1b2c`` lives in and the ref within it (``#a1b2c``);
        other selectors run in the main frame (None)."""
        found = FRAME_REF.match(selector.strip()) if isinstance(selector, str) else None
        if found is None:
            return None, selector
        frame = self._frames.get(found.group(1))
        if frame is None:
            raise ToolError(
                f"The frame of {selector} is gone (removed, or replaced by the page).",
                code="ELEMENT_NOT_FOUND",
                hint="Use a ref from the latest snapshot; the frame's refs changed with it.",
                retryable=True,
                data={"selector": selector},
            )
        return frame, "#" + found.group(2)

    async def dom(self, action: str, selector: str, **args: Any) -> dict[str, Any]:
        """One ``dom`` action (click, fill, ...). Raises ``ToolError`` with the seed's codes.

        After a DOM-changing action, a navigation it started is awaited (up to ``load``) and
        reported as ``navigated: True`` with the new ``url``."""
        frame, inner = self._route(selector)
        payload = {"action": action, "selector": inner, **_present(args)}
        watch = _NavigationWatch(self.page)
        try:
            try:
                got = await self._call("dom", payload, retry=False, frame=frame)
                if isinstance(got, dict) and got.get("selector") is not None:
                    got["selector"] = selector  # as the model wrote it
                out = raise_for(got, f"dom {action}")
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
            frame, inner = self._route(args.get("selector"))
            out = await self._call_settled("scroll", _present({**args, "selector": inner}), frame)
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
        """wait_for_selector / wait_for_hidden / wait_for_text / wait_for_stable. A frame's
        ref waits in that frame; a text is waited for in the page and in every cross-origin
        frame the latest snapshot read (the first to show it answers)."""
        frame, inner = self._route(args.get("selector"))
        payload = {"action": action, **_present({**args, "selector": inner})}
        if action == "wait_for_text" and self.last is not None:
            others = [f for k in self.last.keys if k and (f := self._frames.get(k)) is not None]
            if others:
                return await self._wait_anywhere(payload, others)
        out = await self._call_settled("wait", payload, frame)
        if isinstance(out, dict) and out.get("selector") is not None:
            out["selector"] = args.get("selector")
        return raise_for(out, f"wait {action}")

    async def _wait_anywhere(self, payload: dict[str, Any], frames: list[Frame]) -> dict[str, Any]:
        """The same wait in the main frame and ``frames`` at once: the first success, else the
        main frame's failure (a frame that went away meanwhile just drops out)."""
        targets: list[Frame | None] = [None, *frames]
        tasks = [asyncio.ensure_future(self._call_settled("wait", payload, f)) for f in targets]
        try:
            for done in asyncio.as_completed(tasks):
                try:
                    out = await done
                except ToolError:
                    continue
                if isinstance(out, dict) and out.get("ok"):
                    return out
        finally:
            for task in tasks:
                task.cancel()
        error = tasks[0].exception()  # every task is done here: as_completed went through all
        if error is not None:
            raise error
        return raise_for(tasks[0].result(), f"wait {payload.get('action')}")

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
            return (await self.snapshot(options, keep_refs=True)).text
        out = raise_for(
            await self._call_settled("pageInfo", {"action": action, **_present(args)}),
            f"page_info {action}",
        )
        if action == "get_viewport":
            return {k: v for k, v in out.items() if k != "ok"}
        return str(out.get("result", ""))

    async def screenshot(self, *, annotated: bool = False) -> dict[str, Any]:
        """A PNG of the viewport: ``{"png", "width", "height", "url", "title", "boxes"}``.
        ``annotated``: red boxes labelled with the latest snapshot's refs drawn over it first
        (cross-origin frames' refs too); ``boxes`` lists them (``{ref, x, y, w, h}``)."""
        boxes: list[dict[str, Any]] = []
        try:
            if annotated:
                extra = await self._frame_boxes()
                out = raise_for(await self._call_settled("annotate", extra), "annotate")
                boxes = list(out.get("boxes") or [])
            # caret="initial": hiding the caret adds a style element, a change of the page
            png = await self.page.screenshot(
                type="png", timeout=self.navigation_timeout_s * 1000, caret="initial"
            )
        except PlaywrightError as err:
            raise ToolError(
                f"The screenshot failed: {_first_line(err)}",
                code="SCREENSHOT_FAILED",
                hint="Wait for the page to settle (wait_for_stable), then try again.",
                retryable=True,
            ) from None
        finally:
            if annotated:
                with contextlib.suppress(ToolError, _Navigated, PlaywrightError):
                    await self._call("unannotate", None, retry=False)
        size = self.page.viewport_size or {"width": 0, "height": 0}
        return {
            "png": png,
            "width": size["width"],
            "height": size["height"],
            "url": self.page.url,
            "title": await self.page.title(),
            "boxes": boxes,
        }

    async def _frame_boxes(self) -> list[dict[str, Any]]:
        """The ref boxes of the cross-origin frames the latest snapshot read, in the page's
        viewport coordinates."""
        out: list[dict[str, Any]] = []
        for frame_id in self.last.keys if self.last is not None else {}:
            frame = self._frames.get(frame_id) if frame_id else None
            if frame is None:
                continue
            try:
                inner = await self._call("boxes", None, retry=False, frame=frame)
                element = await frame.frame_element()
                box = await element.bounding_box()
                await element.dispose()
            except (ToolError, _Navigated, PlaywrightError):
                continue  # gone or navigating: no boxes from it
            if box is None or not isinstance(inner, list):
                continue
            for b in inner:
                ref = f"#{frame_id}:{str(b['ref']).lstrip('#')}"
                out.append(
                    {**b, "ref": ref, "x": round(box["x"] + b["x"]), "y": round(box["y"] + b["y"])}
                )
        return out

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
