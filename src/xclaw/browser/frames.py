"""Cross-origin frames for the two in-page readers (the page agent's ``autopilot.js`` and the
browser tools' ``content.js``).

A same-origin iframe is read by the page's own script, in place. A cross-origin one is out of
its reach: the script marks the frame element with a slot (``data-xclaw-frame="<slot>"``) and
leaves its place empty; the Python side finds the Playwright ``Frame`` whose element carries
that slot (``slot_frames``), reads it with the same script running in that frame, and puts the
result in place. Elements of such a frame are named with the frame's id, ``f1``, ``f2`` ...
(``FrameIds``), so an action can be sent to the right frame.
"""

from __future__ import annotations

import asyncio

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

__all__ = ["READABLE", "SLOT_ATTR", "FrameIds", "slot_frames"]

SLOT_ATTR = "data-xclaw-frame"
READABLE = ("http:", "https:", "file:")
"""Frame URLs worth reading: not an error page (``chrome-error://``, a blocked or failed load)
and not a blank one still loading."""


class FrameIds:
    """``f1``, ``f2``, ...: one id per frame of one page, kept while the frame lives (a frame
    that navigates keeps its id; one removed and added again gets a new one)."""

    def __init__(self, page: Page) -> None:
        self._frames: dict[str, Frame] = {}
        self._count = 0
        page.on("framedetached", self._forget)

    def id_of(self, frame: Frame) -> str:
        for known, f in self._frames.items():
            if f is frame:
                return known
        self._count += 1
        frame_id = f"f{self._count}"
        self._frames[frame_id] = frame
        return frame_id

    def get(self, frame_id: str) -> Frame | None:
        """The attached frame of ``frame_id``, or None when it is gone."""
        frame = self._frames.get(frame_id)
        return frame if frame is not None and not frame.is_detached() else None

    def _forget(self, frame: Frame) -> None:
        for known, f in list(self._frames.items()):
            if f is frame:
                del self._frames[known]


async def slot_frames(parent: Frame) -> dict[str, Frame]:
    """The readable frames under ``parent`` (any depth) whose element a reader marked with a
    slot, by slot."""
    found: list[Frame] = []
    stack = list(parent.child_frames)
    while stack:
        frame = stack.pop()
        if frame.url.startswith(READABLE):
            found.append(frame)
        stack.extend(frame.child_frames)

    async def slot_of(frame: Frame) -> str | None:
        try:
            element = await frame.frame_element()
        except PlaywrightError:
            return None  # detached meanwhile
        try:
            return await element.get_attribute(SLOT_ATTR)
        except PlaywrightError:
            return None
        finally:
            await element.dispose()

    slots = await asyncio.gather(*(slot_of(f) for f in found))
    return {slot: f for slot, f in zip(slots, found, strict=True) if slot}
