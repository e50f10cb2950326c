"""The page agent's five tools (seed 002 §6): ``dom``, ``navigate``, ``page_info``, ``wait``,
``evaluate``, with the seed's argument names, over one ``PageDriver``.

Failures are ``ToolError``s with the seed's codes (ELEMENT_NOT_FOUND, ELEMENT_NOT_VISIBLE,
ELEMENT_DISABLED, ELEMENT_DETACHED, UNSUPPORTED_FILL_TARGET, ELEMENT_NOT_EDITABLE,
ELEMENT_COVERED, INVALID_ARGUMENT, WAIT_TIMEOUT, ...); the dispatcher turns them into failed
results, so the loop never crashes on a page that changed under it.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field

from xclaw.core.messages import ImagePart, ToolResult
from xclaw.core.tooling import NO_ACCESS, Access, Risk, WebAddress
from xclaw.dirs import run_output_dir
from xclaw.page.driver import DOM_CHANGING_ACTIONS, PageDriver
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.tools.base import Tool, ToolContext, tool

__all__ = ["PAGE_TOOL_NAMES", "page_tools"]

PAGE_TOOL_NAMES = ("dom", "navigate", "page_info", "wait", "evaluate")

DomAction = Literal[
    "click",
    "fill",
    "type",
    "press",
    "select_option",
    "check",
    "uncheck",
    "clear",
    "focus",
    "hover",
    "get_text",
    "get_attr",
    "set_attr",
    "add_class",
    "remove_class",
]
NavigateAction = Literal["goto", "back", "forward", "reload", "scroll"]
PageInfoAction = Literal[
    "get_url",
    "get_title",
    "get_selection",
    "get_viewport",
    "snapshot",
    "query_all",
    "screenshot",
    "screenshot_annotated",
]
WaitAction = Literal["wait_for_selector", "wait_for_hidden", "wait_for_text", "wait_for_stable"]
WaitState = Literal[
    "attached", "visible", "hidden", "detached", "enabled", "disabled", "checked", "unchecked"
]
Millis = Annotated[int, Field(ge=0, le=60_000)]
_QUIET = ("ok", "message")


def _result(out: dict[str, Any]) -> ToolResult:
    details = {k: v for k, v in out.items() if k not in _QUIET}
    return ToolResult.success(str(out.get("message", "")), **details)


def _dom_tool(driver: PageDriver) -> Tool:
    @tool("dom", risk=Risk.WRITE, read_only=False, timeout_s=90.0)
    async def dom(
        action: DomAction,
        selector: str,
        value: str | None = None,
        key: str | None = None,
        label: str | None = None,
        index: Annotated[int, Field(ge=0)] | None = None,
        attribute: str | None = None,
        className: str | None = None,  # noqa: N803 - the seed's argument name
        clickCount: Annotated[int, Field(ge=1, le=3)] | None = None,  # noqa: N803
        waitMs: Millis | None = None,  # noqa: N803
        waitSeconds: Annotated[float, Field(ge=0, le=60)] | None = None,  # noqa: N803
        force: bool = False,
    ) -> ToolResult:
        """Act on one page element: click, fill, type, press, select_option, check, uncheck,
        clear, focus, hover, get_text, get_attr, set_attr, add_class, remove_class.

        Args:
            action: What to do.
            selector: A #ref from the snapshot (e.g. #a1b2c), or a CSS selector.
            value: Text for fill/type/set_attr, class for add_class/remove_class, option value
                for select_option.
            key: For press: Enter, Tab, Escape, ArrowDown, Control+a, Shift+Enter, ...
            label: For select_option: the option's visible text.
            index: For select_option: the option's position, from 0.
            attribute: For get_attr/set_attr: the attribute (checked, value, href, ...).
            className: Older name of value for add_class/remove_class.
            clickCount: For click: 2 double-clicks, 3 triple-clicks.
            waitMs: How long to wait for the element to appear and be actionable: visible,
                enabled, editable for typing, not covered (default 2000).
            waitSeconds: The same in seconds (waitMs wins).
            force: Skip the visible/stable/enabled/editable/not-covered waits.
        """
        out = await driver.dom(
            action,
            selector,
            value=value,
            key=key,
            label=label,
            index=index,
            attribute=attribute,
            className=className,
            clickCount=clickCount,
            waitMs=waitMs,
            waitSeconds=waitSeconds,
            force=force or None,
        )
        out.setdefault("dom_changing", action in DOM_CHANGING_ACTIONS)
        return _result(out)

    return dom


def _opens(args: Any) -> Access:
    """What a goto would open, for the policy (schemes, files, private hosts: seed 003 ch. 07)."""
    url = args.url if args.action == "goto" and args.url else None
    return Access(opens=(WebAddress(url.strip()),)) if url else NO_ACCESS


def _resolver(driver: PageDriver) -> Any:
    async def resolved(args: Any) -> Access:
        """A goto within the origin of the page the agent is on opens nothing new (as a link
        there would not); any other address is resolved and judged."""
        from xclaw.policy.browsing import site_origin
        from xclaw.tools.browser_judge import web_address

        url = args.url.strip() if args.action == "goto" and args.url else None
        if not url:
            return NO_ACCESS
        here = site_origin(driver.page.url)
        if here and site_origin(url) == here:
            return NO_ACCESS
        return Access(opens=(await web_address(url),))

    return resolved


def _navigate_tool(driver: PageDriver) -> Tool:
    @tool(
        "navigate",
        risk=Risk.WRITE,
        read_only=False,
        timeout_s=90.0,
        access=_opens,
        inspector=_resolver(driver),
    )
    async def navigate(
        action: NavigateAction,
        url: str | None = None,
        selector: str | None = None,
        x: float | None = None,
        y: float | None = None,
    ) -> ToolResult:
        """Go to a URL, back, forward, reload, or scroll to an element or position.

        Args:
            action: goto, back, forward, reload or scroll.
            url: For goto: the address to open.
            selector: For scroll: a #ref or CSS selector to bring into view.
            x: For scroll: horizontal position in pixels.
            y: For scroll: vertical position in pixels.
        """
        out = await driver.navigate(action, url=url, selector=selector, x=x, y=y)
        return _result(out)

    return navigate


def _screenshot(ctx: ToolContext, shot: dict[str, Any], annotated: bool) -> ToolResult:
    """Save the PNG in the run's output folder; the result carries the picture (for models
    that see) and says what it is of and where it is (for those that do not)."""
    folder = (ctx.workspace.output_dir or run_output_dir(ctx.session_id or "page")) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "annotated" if annotated else "shot"
    target = folder / f"{stem}-{time.strftime('%H%M%S')}-{secrets.token_hex(2)}.png"
    atomic_write_bytes(target, shot["png"], durable=False)
    what = "Annotated screenshot" if annotated else "Screenshot"
    text = (
        f"{what} of the viewport of {shot['title'] or '(untitled)'} — {shot['url']} "
        f"({shot['width']}x{shot['height']} PNG), saved to {target}; the image is attached to "
        "the next round for models that can see it."
    )
    boxes = shot["boxes"]
    if annotated:
        refs = ", ".join(b["ref"] for b in boxes[:60]) + (" …" if len(boxes) > 60 else "")
        text += f" Red boxes are labelled with the refs of the latest snapshot: {refs or 'none'}."
    result = ToolResult.success(
        text,
        action="screenshot_annotated" if annotated else "screenshot",
        path=str(target),
        width=shot["width"],
        height=shot["height"],
        **({"boxes": boxes} if annotated else {}),
    )
    return replace(result, images=(ImagePart("image/png", shot["png"]),))


def _page_info_tool(driver: PageDriver) -> Tool:
    @tool("page_info", risk=Risk.READ, timeout_s=60.0, output_cap=64_000)
    async def page_info(
        ctx: ToolContext,
        action: PageInfoAction,
        selector: str | None = None,
        maxDepth: Annotated[int, Field(ge=1, le=50)] | None = None,  # noqa: N803
        viewportOnly: bool | None = None,  # noqa: N803
        pruneLayout: bool | None = None,  # noqa: N803
        maxNodes: Annotated[int, Field(ge=1, le=5000)] | None = None,  # noqa: N803
        maxChildren: Annotated[int, Field(ge=1, le=1000)] | None = None,  # noqa: N803
        maxTextLength: Annotated[int, Field(ge=1, le=1000)] | None = None,  # noqa: N803
    ) -> ToolResult:
        """Read the page: get_url, get_title, get_selection, get_viewport, snapshot, query_all,
        screenshot (the viewport as an image) or screenshot_annotated (with a red box labelled
        with its ref on each control). The loop already shows the latest snapshot each round;
        call this only when it cannot, or to see what the page looks like.

        Args:
            action: What to read.
            selector: For query_all: the CSS selector.
            maxDepth: Snapshot depth (default 6).
            viewportOnly: Snapshot only what is in the viewport (default true).
            pruneLayout: Fold layout-only containers (default true).
            maxNodes: Snapshot node budget (default 220).
            maxChildren: Children kept per parent (default 25).
            maxTextLength: Characters of text per node (default 40).
        """
        if action in ("screenshot", "screenshot_annotated"):
            annotated = action == "screenshot_annotated"
            return _screenshot(ctx, await driver.screenshot(annotated=annotated), annotated)
        args = {
            "selector": selector,
            "maxDepth": maxDepth,
            "viewportOnly": viewportOnly,
            "pruneLayout": pruneLayout,
            "maxNodes": maxNodes,
            "maxChildren": maxChildren,
            "maxTextLength": maxTextLength,
        }
        got = await driver.page_info(action, **{k: v for k, v in args.items() if v is not None})
        if isinstance(got, dict):
            return ToolResult.success(json.dumps(got), action=action, **got)
        return ToolResult.success(got, action=action)

    return page_info


def _wait_tool(driver: PageDriver) -> Tool:
    # Not read-only for the dispatcher: read-only neighbours run together, and what follows a
    # wait in a batch (a snapshot, a click) must run after the wait is over. (It still counts as
    # a read for idle-round detection: ``recovery.is_read_only_call``.)
    @tool("wait", risk=Risk.READ, read_only=False, timeout_s=150.0)
    async def wait(
        action: WaitAction,
        selector: str | None = None,
        state: WaitState | None = None,
        text: str | None = None,
        timeout: Annotated[int, Field(ge=0, le=120_000)] | None = None,  # noqa: ASYNC109
        quietMs: Annotated[int, Field(ge=0, le=60_000)] | None = None,  # noqa: N803
    ) -> ToolResult:
        """Wait for an element state, a text, or a quiet page (polling every 80 ms).

        Args:
            action: wait_for_selector, wait_for_hidden, wait_for_text or wait_for_stable.
            selector: For wait_for_selector/wait_for_hidden: a #ref or CSS selector.
            state: For wait_for_selector: attached (default), visible, hidden, detached,
                enabled, disabled, checked or unchecked (a #ref works as the selector).
            text: For wait_for_text: the text to wait for.
            timeout: Milliseconds before giving up (default 10000).
            quietMs: For wait_for_stable: how long the page must not change (default 300).
        """
        out = await driver.wait(
            action, selector=selector, state=state, text=text, timeout=timeout, quietMs=quietMs
        )
        return _result(out)

    return wait


def _evaluate_tool(driver: PageDriver) -> Tool:
    @tool("evaluate", risk=Risk.EXECUTE, read_only=False, timeout_s=60.0)
    async def evaluate(expression: str) -> ToolResult:
        """Run JavaScript in the page and return its value. A last resort: prefer dom,
        navigate and wait, which check what they act on.

        Args:
            expression: An expression (e.g. document.title) or a statement block with return.
        """
        return ToolResult.success(await driver.evaluate(expression))

    return evaluate


def page_tools(driver: PageDriver) -> list[Tool]:
    """The five page tools, bound to ``driver``. With the driver's navigation guard, each
    result also says what the guard blocked since the previous call (page_info included)."""
    tools = [
        _dom_tool(driver),
        _navigate_tool(driver),
        _page_info_tool(driver),
        _wait_tool(driver),
        _evaluate_tool(driver),
    ]
    if driver.guard is None:
        return tools
    from xclaw.tools.browser_guard import reporting

    guard = driver.guard
    return [reporting(t, guard, navigating=t.name in ("dom", "navigate")) for t in tools]
