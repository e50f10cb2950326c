"""Reading a finished reply: as Markdown through the turn's copy button, captured inside the
page (``scripts.CLIPBOARD_CAPTURE``), else as text from the DOM; the result says which, and
why (the transport reports it as ``conversation.reply_read``).

The text goes to the XML parser as it is: a code fence around the reply, or prose before and
after it, are the parser's to handle (it strips one fence and tolerates text around the root).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.dom import click, find
from xclaw.models.chatgpt_web.locators import COPY_BUTTON, REPLY_CONTENT
from xclaw.models.chatgpt_web.scripts import (
    ARM_CLIPBOARD,
    DISARM_CLIPBOARD,
    DOM_REPLY_TEXT,
    READ_CLIPBOARD,
)

Source = Literal["clipboard", "dom"]
_STEP_S = 0.05


@dataclass(frozen=True, slots=True)
class ReplyRead:
    text: str
    source: Source
    why: str | None = None  # why not the clipboard

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "why": self.why, "chars": len(self.text)}


async def read_reply(page: Page, turn: PageLocator, *, copy_timeout_s: float) -> ReplyRead:
    """The reply in ``turn`` and where it came from."""
    button = await find(turn, COPY_BUTTON)
    if button is None:
        return ReplyRead(await dom_text(turn), "dom", "the turn has no copy button we know")
    copied = await copy_markdown(page, turn, button.last, copy_timeout_s)
    if copied is not None and copied.strip():
        return ReplyRead(copied, "clipboard")
    return ReplyRead(await dom_text(turn), "dom", "the copy button gave no text")


async def copy_markdown(
    page: Page, turn: PageLocator, button: PageLocator, timeout_s: float
) -> str | None:
    """Click ``button`` (the turn's copy button) with the page's clipboard writes captured."""
    if not await page.evaluate(ARM_CLIPBOARD):
        return None
    try:
        if not await button.is_visible():
            await turn.hover(timeout=timeout_s * 1000)  # action bars may show on hover only
        await click(page, button, timeout_s=timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = await page.evaluate(READ_CLIPBOARD)
            if text is not None:
                return str(text)
            await asyncio.sleep(_STEP_S)
        return None
    except PlaywrightError:
        return None  # the DOM still has the text
    finally:
        try:
            await page.evaluate(DISARM_CLIPBOARD)
        except PlaywrightError:
            pass


async def dom_text(turn: PageLocator) -> str:
    content = await find(turn, REPLY_CONTENT)
    target = content if content is not None else turn
    return str(await target.evaluate_all(DOM_REPLY_TEXT))
