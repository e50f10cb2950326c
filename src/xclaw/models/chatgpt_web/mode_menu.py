"""The model menu on the page: open it, read its rows as stable attributes, click, confirm.

The opener is the 2025 header switcher or the 2026 composer pill (``locators.MODEL_SWITCHER``).
Rows are models; the effort controls and submenus inside or beside them are not
(``scripts.MENU_ITEMS``). The menu renders asynchronously (a portal); when it first shows no
rows it is closed and opened once more, and a click that did not take effect is tried once more
(seed 000 §4.3). Toasts shown meanwhile (a usage limit) go into the selection's ``notice``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.dom import find
from xclaw.models.chatgpt_web.locators import (
    MODE_ITEMS,
    MODE_TESTID_PREFIX,
    MODEL_SWITCHER,
    TOAST,
)
from xclaw.models.chatgpt_web.modes import (
    MenuItem,
    ModeSelection,
    choose_mode,
    current_mode,
    slug_of,
)
from xclaw.models.chatgpt_web.scripts import MENU_ITEMS, TOAST_TEXTS

_STEP_S = 0.05
_NOTICE_CHARS = 300


@dataclass(frozen=True, slots=True)
class _Row:
    item: MenuItem
    index: int  # among the locator's candidates


async def select_mode(page: Page, requested: str, *, settle_s: float) -> ModeSelection:
    """Select ``requested`` if the menu allows; ``settle_s`` bounds each wait for the menu."""
    selection = await _select(page, requested, settle_s)
    notice = await _toasts(page)
    return replace(selection, notice=notice) if notice else selection


async def _select(page: Page, requested: str, settle_s: float) -> ModeSelection:
    switcher = await find(page, MODEL_SWITCHER)
    if switcher is None:
        return ModeSelection(requested, None, "switcher_not_found")
    button = switcher.first
    rows = await _open_menu(page, button, settle_s)
    if not rows:
        return ModeSelection(requested, None, "menu_empty")
    items = [r.item for r in rows]
    choice = choose_mode(requested, items)
    if choice.item is None:
        await _close_menu(page)
        return ModeSelection(requested, current_mode(items), choice.reason)
    target = choice.item
    for attempt in range(2):
        if attempt and not await _open_menu(page, button, settle_s):
            break
        await _click_row(page, target)
        checked = await _checked_after_click(page, button, settle_s)
        if checked is not False:
            confirmed = checked == target.slug
            if checked is None or confirmed:
                return ModeSelection(requested, target.slug, choice.reason, confirmed=confirmed)
    return ModeSelection(requested, current_mode(items), "not_confirmed", confirmed=False)


async def _open_menu(page: Page, button: PageLocator, settle_s: float) -> list[_Row]:
    for _ in range(2):
        await button.click()
        rows = await _read_rows(page, settle_s)
        if rows:
            return rows
        await _close_menu(page)  # an empty first render: close and open once more
    return []


async def _rows_now(found: PageLocator) -> list[_Row]:
    raw = await found.evaluate_all(MENU_ITEMS)
    return [
        _Row(
            MenuItem(slug_of(str(r["slug"]), MODE_TESTID_PREFIX), r["disabled"], r["checked"]),
            int(r["index"]),
        )
        for r in raw
    ]


async def _read_rows(page: Page, settle_s: float) -> list[_Row]:
    deadline = time.monotonic() + settle_s
    while True:
        found = await find(page, MODE_ITEMS)
        if found is not None:
            rows = await _rows_now(found)
            if rows:
                return rows
        if time.monotonic() >= deadline:
            return []
        await asyncio.sleep(_STEP_S)


async def _click_row(page: Page, target: MenuItem) -> None:
    found = await find(page, MODE_ITEMS)
    if found is None:
        return
    for row in await _rows_now(found):
        if row.item.slug == target.slug:
            await found.nth(row.index).click()
            return


async def _checked_after_click(
    page: Page, button: PageLocator, settle_s: float
) -> str | None | bool:
    """Reopen the menu and read which row is checked: its slug, None when the menu marks no
    row checked (nothing can be confirmed), False when the click did not land."""
    deadline = time.monotonic() + settle_s
    while await find(page, MODE_ITEMS) is not None:  # a chosen row closes the menu
        if time.monotonic() >= deadline:
            await _close_menu(page)  # still open: the click did not land
            return False
        await asyncio.sleep(_STEP_S)
    await button.click()
    rows = await _read_rows(page, settle_s)
    await _close_menu(page)
    return current_mode([r.item for r in rows])


async def _close_menu(page: Page) -> None:
    await page.keyboard.press("Escape")
    deadline = time.monotonic() + 1.0
    while True:
        if await find(page, MODE_ITEMS) is None or time.monotonic() >= deadline:
            return
        await asyncio.sleep(_STEP_S)


async def _toasts(page: Page) -> str | None:
    found = await find(page, TOAST)
    if found is None:
        return None
    texts = [str(t) for t in await found.evaluate_all(TOAST_TEXTS)]
    return " ".join(" ".join(texts).split())[:_NOTICE_CHARS] or None
