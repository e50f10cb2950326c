"""Frames for the browser tools: same-origin iframes are read in place by ``content.js``; a
cross-origin one is left as an empty ``<iframe ... data-xclaw-frame="SLOT"></iframe>`` that this
module fills with that frame's own reading, through Playwright's frame API. The frame's helper
numbers its controls with the frame's id (``data-agent-id="f1:3"``), so an agent id says which
frame to act in (``frame_for``); an element of a same-origin frame is re-found in its own
frame (``in_own_frame``) before Playwright acts on it.
"""

from __future__ import annotations

import re
from typing import Any
from weakref import WeakKeyDictionary

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from xclaw.browser.frames import READABLE, FrameIds, slot_frames
from xclaw.core.errors import ToolError

FRAME_AGENT_ID = re.compile(r"^(f\d+):\d+$")
_SLOT = re.compile(r'(<iframe[^>]*?) data-xclaw-frame="([^"]+)"></iframe>')
_MAX_DEPTH = 3
_READ = {
    "full": "() => window.__xclawContent.distill(true)",
    "interactive": "() => window.__xclawContent.interactiveOnly(true)",
}
_IDS: WeakKeyDictionary[Page, FrameIds] = WeakKeyDictionary()


def frame_ids(page: Page) -> FrameIds:
    ids = _IDS.get(page)
    if ids is None:
        ids = _IDS[page] = FrameIds(page)
    return ids


async def with_frames(page: Page, text: str, mode: str, script: str) -> str:
    """``text`` (the main frame's reading) with every cross-origin frame's reading in place."""
    return await _fill(page, page.main_frame, text, mode, script, 0)


async def _fill(page: Page, parent: Frame, text: str, mode: str, script: str, depth: int) -> str:
    marks = list(_SLOT.finditer(text))
    if not marks:
        return text
    by_slot = await slot_frames(parent) if depth < _MAX_DEPTH else {}
    parts: list[str] = []
    at = 0
    for mark in marks:
        parts.append(text[at : mark.start()])
        at = mark.end()
        head, frame = mark.group(1), by_slot.get(mark.group(2))
        inner = await _read(page, frame, mode, script, depth) if frame is not None else None
        if inner is None:
            parts.append(f"{head}>(not loaded)</iframe>")
        elif mode == "interactive":
            parts.append(f"{head}>\n{inner}\n</iframe>" if inner else f"{head}></iframe>")
        else:
            parts.append(f"{head}>\n{inner}\n</iframe>")
    parts.append(text[at:])
    return "".join(parts)


async def _read(page: Page, frame: Frame, mode: str, script: str, depth: int) -> str | None:
    prefix = frame_ids(page).id_of(frame) + ":"
    try:
        if not await frame.evaluate("() => !!window.__xclawContent"):
            await frame.evaluate(script)
        await frame.evaluate("p => window.__xclawContent.prefix(p)", prefix)
        text: str = await frame.evaluate(_READ[mode])
    except PlaywrightError:
        return None  # loading, gone, or a document the helper cannot run in
    return await _fill(page, frame, text, mode, script, depth + 1)


def frame_for(page: Page, agent_id: str) -> Frame | None:
    """The frame an agent id like ``f1:3`` belongs to (None: the page's own document).
    Raises BROWSER_ELEMENT_NOT_FOUND when that frame is gone."""
    found = FRAME_AGENT_ID.match(agent_id)
    if found is None:
        return None
    frame = frame_ids(page).get(found.group(1))
    if frame is None:
        raise ToolError(
            f"The frame of agent id {agent_id} is gone (removed, or replaced by the page).",
            code="BROWSER_ELEMENT_NOT_FOUND",
            hint="Call browser.content to see the current agent ids, then use one of those.",
            retryable=True,
        )
    return frame


async def in_own_frame(
    page: Page, element: ElementHandle, agent_id: str, script: str
) -> ElementHandle:
    """``element`` as its own frame sees it: an element of a same-origin iframe found from
    another document is re-found in its frame (by its agent id, with the helper installed
    there), so Playwright scrolls, measures and clicks it in the right document and the
    policy reads its facts there."""
    owner = await element.owner_frame()
    found_in = frame_for(page, agent_id) or page.main_frame
    if owner is None or owner == found_in:
        return element
    try:
        if not await owner.evaluate("() => !!window.__xclawContent"):
            await owner.evaluate(script)
        again = await owner.query_selector(f'[data-agent-id="{agent_id}"]')
    except PlaywrightError:
        return element
    if again is None:
        return element
    await element.dispose()
    return again


async def frame_boxes(page: Page) -> list[dict[str, Any]]:
    """The agent-id boxes of the cross-origin frames a reading numbered (their helper has a
    prefix), in the page's viewport coordinates (for the annotated screenshot)."""
    out: list[dict[str, Any]] = []
    for frame in page.frames:
        if frame == page.main_frame or not frame.url.startswith(READABLE):
            continue
        try:
            numbered = await frame.evaluate(
                "() => !!window.__xclawContent && !!window.__xclawContent.prefix()"
            )
            if not numbered:
                continue
            element = await frame.frame_element()
            box = await element.bounding_box()
            await element.dispose()
            inner: list[dict[str, Any]] = await frame.evaluate(
                "() => window.__xclawContent.boxes()"
            )
        except PlaywrightError:
            continue  # gone or navigating: no boxes from it
        if box is None:
            continue
        out += [{**b, "x": round(box["x"] + b["x"]), "y": round(box["y"] + b["y"])} for b in inner]
    return out
