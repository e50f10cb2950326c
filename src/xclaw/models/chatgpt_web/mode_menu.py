"""The model menu on the page: open it, read it as stable attributes, click, confirm.

The menu renders asynchronously (a portal); when it first shows no items it is closed and
opened once more, and a click that did not take effect is tried once more (seed 000 §4.3).
"""

from __future__ import annotations

import asyncio
import time

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.dom import find
from xclaw.models.chatgpt_web.locators import MODE_ITEMS, MODE_TESTID_PREFIX, MODEL_SWITCHER
from xclaw.models.chatgpt_web.modes import (
    MenuItem,
    ModeSelection,
    choose_mode,
    current_mode,
    slug_of,
)
from xclaw.models.chatgpt_web.scripts import MENU_ITEMS

_STEP_S = 0.05


async def select_mode(page: Page, requested: str, *, settle_s: float) -> ModeSelection:
    """Select ``requested`` if the menu allows; ``settle_s`` bounds each wait for the menu."""
    switcher = await find(page, MODEL_SWITCHER)
    if switcher is None:
        return ModeSelection(requested, None, "switcher_not_found")
    button = switcher.first
    items = await _open_menu(page, button, settle_s)
    if not items:
        return ModeSelection(requested, None, "menu_empty")
    choice = choose_mode(requested, items)
    if choice.item is None:
        await _close_menu(page)
        return ModeSelection(requested, current_mode(items), choice.reason)
    target = choice.item
    for attempt in range(2):
        if attempt and not await _open_menu(page, button, settle_s):
            break
        await _click_item(page, target)
        confirmed = await _confirmed(page, button, target.slug, settle_s)
        if confirmed:
            return ModeSelection(requested, target.slug, choice.reason)
    return ModeSelection(requested, current_mode(items), "not_confirmed")


async def _open_menu(page: Page, button: PageLocator, settle_s: float) -> list[MenuItem]:
    for _ in range(2):
        await button.click()
        items = await _read_items(page, settle_s)
        if items:
            return items
        await _close_menu(page)  # an empty first render: close and open once more
    return []


async def _read_items(page: Page, settle_s: float) -> list[MenuItem]:
    deadline = time.monotonic() + settle_s
    while True:
        found = await find(page, MODE_ITEMS)
        if found is not None:
            raw = await found.evaluate_all(MENU_ITEMS)
            return [
                MenuItem(slug_of(str(r["slug"]), MODE_TESTID_PREFIX), r["disabled"], r["checked"])
                for r in raw
            ]
        if time.monotonic() >= deadline:
            return []
        await asyncio.sleep(_STEP_S)


async def _click_item(page: Page, target: MenuItem) -> None:
    found = await find(page, MODE_ITEMS)
    if found is None:
        return
    raw = await found.evaluate_all(MENU_ITEMS)
    slugs = [slug_of(str(r["slug"]), MODE_TESTID_PREFIX) for r in raw]
    if target.slug in slugs:
        await found.nth(slugs.index(target.slug)).click()


async def _confirmed(page: Page, button: PageLocator, slug: str, settle_s: float) -> bool:
    """Reopen the menu and look at which item is checked. A menu that marks no item checked
    cannot confirm anything, so the click is taken as done."""
    deadline = time.monotonic() + settle_s
    while await find(page, MODE_ITEMS) is not None:  # a chosen item closes the menu
        if time.monotonic() >= deadline:
            await _close_menu(page)  # still open: the click did not land
            return False
        await asyncio.sleep(_STEP_S)
    await button.click()
    items = await _read_items(page, settle_s)
    await _close_menu(page)
    checked = current_mode(items)
    return checked is None or checked == slug


async def _close_menu(page: Page) -> None:
    await page.keyboard.press("Escape")
    deadline = time.monotonic() + 1.0
    while True:
        if await find(page, MODE_ITEMS) is None or time.monotonic() >= deadline:
            return
        await asyncio.sleep(_STEP_S)
