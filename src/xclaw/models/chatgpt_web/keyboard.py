"""Typing a message into the composer with trusted input only (CDP ``Input.insertText``),
checked against what the composer then holds; an editor that drops inserted newlines gets the
text line by line (``Shift+Enter`` between lines)."""

from __future__ import annotations

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.scripts import COMPOSER_TEXT


def lines(text: str) -> list[str]:
    """Text as an editor may echo it: each non-blank line with its spacing normalised (an
    editor's blank lines and non-breaking spaces differ, its line breaks must not)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


async def type_message(page: Page, composer: PageLocator, text: str) -> bool:
    """Replace what the focused ``composer`` holds with ``text``; False when it still does not
    hold it (an editor the adapter no longer matches)."""
    keyboard = page.keyboard
    await keyboard.press("ControlOrMeta+A")
    await keyboard.press("Delete")
    await keyboard.insert_text(text)
    if lines(await composer.evaluate(COMPOSER_TEXT)) == lines(text):
        return True
    await keyboard.press("ControlOrMeta+A")
    await keyboard.press("Delete")
    for i, line in enumerate(text.split("\n")):
        if i:
            await keyboard.press("Shift+Enter")
        if line:
            await keyboard.insert_text(line)
    return lines(await composer.evaluate(COMPOSER_TEXT)) == lines(text)
