"""``browser.screenshot`` and ``browser.screenshot_annotated``: PNG files in the run's output
folder (never in the project unless a path is asked for), path and size returned, and the PNG
itself as the result's image (``ToolResult.images``): a model that sees gets the picture, a
text-only one the path and what the picture is of.

The annotated one draws a numbered red box over every visible interactive element; the
numbers are the same agent ids ``browser.content`` shows and the action tools take.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from xclaw.browser.session import BrowserSession
from xclaw.core.errors import ToolError
from xclaw.core.messages import ImagePart, ToolResult
from xclaw.core.tooling import NO_ACCESS, Access, Risk
from xclaw.dirs import run_output_dir
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.tools.base import Tool, ToolContext, tool
from xclaw.tools.browser_frames import frame_boxes
from xclaw.tools.browser_page import live_page, page_error

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    if data[:8] != _PNG_MAGIC or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _write_access(args: Any) -> Access:
    return Access(writes=(args.path,)) if args.path else NO_ACCESS


def _save(
    ctx: ToolContext, session: BrowserSession, data: bytes, path: str | None, stem: str
) -> Path:
    """Into the project only when ``path`` asks for it; else the run's output folder."""
    if path:
        target = ctx.resolve(path, write=True).path
    else:
        base = ctx.workspace.output_dir or run_output_dir("browser")
        folder = base / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        session.shots += 1
        target = folder / f"{stem}-{session.shots:03d}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, data, durable=False)
    return target


async def _shoot(session: BrowserSession, page: Page, full_page: bool) -> bytes:
    try:
        return await page.screenshot(
            type="png", full_page=full_page, timeout=session.timeouts.navigation_s * 1000
        )
    except PlaywrightError as err:
        raise page_error(err, "taking the screenshot") from None


def _result(kind: str, target: Path, data: bytes, where: str, **extra: Any) -> ToolResult:
    """The path and a short description for every model; the picture itself too, which the
    model adapters send to a model that sees (a text-only one gets the words only)."""
    width, height = png_size(data)
    shown = ToolResult.success(
        f"{kind} of {where} saved to {target} ({width}x{height} PNG); the image is attached "
        "for models that can see it.",
        path=str(target),
        width=width,
        height=height,
        **extra,
    )
    return replace(shown, images=(ImagePart("image/png", data),))


async def _where(page: Page) -> str:
    try:
        title = await page.title()
    except PlaywrightError:
        title = ""
    return f"{title or '(untitled)'} — {page.url}"


def screenshot_tools(session: BrowserSession) -> list[Tool]:
    @tool("browser.screenshot", risk=Risk.READ, read_only=True, timeout_s=60, access=_write_access)
    async def screenshot(
        ctx: ToolContext, full_page: bool = False, path: str | None = None
    ) -> ToolResult:
        """Save a PNG screenshot of the current tab and return its file path.

        Args:
            full_page: the whole scrollable page instead of the visible part
            path: where in the project to save it (default: the run's output folder)
        """
        page = await live_page(session)
        data = await _shoot(session, page, full_page)
        where = await _where(page)
        return _result("Screenshot", _save(ctx, session, data, path, "shot"), data, where)

    @tool(
        "browser.screenshot_annotated",
        risk=Risk.READ,
        read_only=False,  # its overlay must not show up in a content read running alongside
        timeout_s=60,
        access=_write_access,
    )
    async def screenshot_annotated(ctx: ToolContext, path: str | None = None) -> ToolResult:
        """Save a PNG of the visible part of the tab with a numbered red box over every
        interactive element; the numbers are the agent ids browser.click takes.

        Args:
            path: where in the project to save it (default: the run's output folder)
        """
        page = await live_page(session)
        try:
            boxes: list[dict[str, Any]] = await page.evaluate(
                "(extra) => window.__xclawContent.annotate(extra)", await frame_boxes(page)
            )
            data = await _shoot(session, page, False)
        except PlaywrightError as err:
            raise page_error(err, "drawing the boxes") from None
        finally:
            try:
                await page.evaluate("() => window.__xclawContent.unannotate()")
            except PlaywrightError:
                pass  # the page went away; nothing is left to clean up
        if not data:
            raise ToolError("The screenshot came back empty.", code="BROWSER_SCREENSHOT_FAILED")
        target = _save(ctx, session, data, path, "annotated")
        ids = [str(b["id"]) for b in boxes]
        result = _result("Annotated screenshot", target, data, await _where(page), boxes=boxes)
        note = f" Red boxes numbered with agent ids: {', '.join(ids) if ids else 'none visible'}."
        return replace(result, message=result.message + note)

    return [screenshot, screenshot_annotated]
