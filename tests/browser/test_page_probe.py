"""The one-evaluate poll (``page_state.probe``) sees what the Playwright locators see.

The completion wait reads blockers and turns in one ``page.evaluate`` per poll (and
``count_turns`` counts in one), resolving the locators inside the page (CSS chains and role
queries, ``dom.in_page``). Pages built here, in English so the role strategies are the ones
that match, are read both ways and must agree: roles named by ``aria-label``,
``aria-labelledby`` or their text, hidden and ``aria-hidden`` controls, 2025 and 2026 turn
markup, renamed test ids, and banners a person can or cannot see.
"""

from __future__ import annotations

from typing import Any

import pytest
from fixture_server import FixtureSite
from playwright.async_api import Page
from web_support import needs_browser

from xclaw.browser import BrowserManager
from xclaw.models.chatgpt_web.dom import attempts, find, in_page
from xclaw.models.chatgpt_web.locators import (
    ASSISTANT_TURN,
    COMPOSER,
    FINISHED_TURN,
    MODE_ITEMS,
    STOP_BUTTON,
    USER_TURN,
    Locator,
    Strategy,
)
from xclaw.models.chatgpt_web.page_state import probe
from xclaw.models.chatgpt_web.turns import count_turns

pytestmark = needs_browser

ASSISTANT = '<div data-message-author-role="assistant"><div class="markdown">{}</div></div>'
PAGES = {
    "english 2025 page, named by aria-label": (
        '<main><article data-testid="conversation-turn-1"><div data-message-author-role="user">'
        "hi</div></article>"
        f'<article data-testid="conversation-turn-2">{ASSISTANT.format("The answer.")}'
        '<div><button aria-label="Copy">c</button></div></article></main>'
        '<form><div role="textbox" contenteditable="true"></div>'
        '<button aria-label="Stop streaming">s</button></form>'
        '<div role="alert">Something went wrong.</div>'
        '<div aria-hidden="true"><div role="alert">Hidden from assistive technology.</div></div>'
        '<p role="alert" style="position:absolute;width:1px;height:1px;overflow:hidden">'
        "announcer</p>",
        "Something went wrong.",
    ),
    "named by text content and aria-labelledby": (
        '<main><section data-testid="conversation-turn-1" data-turn="assistant">'
        f"{ASSISTANT.format('First.')}</section>"
        '<section data-testid="conversation-turn-2" data-turn="assistant">'
        f'{ASSISTANT.format("Second, <b>bold</b>.")}<span id="lbl">copy</span>'
        '<button aria-labelledby="lbl">⧉</button></section></main>'
        "<form><textarea></textarea><button>Stop generating</button></form>",
        None,
    ),
    "hidden controls do not count": (
        f'<main><article data-testid="conversation-turn-1">{ASSISTANT.format("Still going")}'
        '<div aria-hidden="true"><button aria-label="Copy">c</button></div>'
        '<button aria-label="Copy code">cc</button></article></main>'
        '<form><button aria-label="Stop streaming" hidden>s</button>'
        '<button data-testid="stop-button" style="visibility:hidden">s</button>'
        '<button aria-label="Send prompt">go</button></form>'
        '<div data-testid="rate-error-banner" style="display:none">Limit.</div>',
        None,
    ),
    "renamed: only the structural fallbacks": (
        '<main><div data-turn="assistant"><div class="markdown">Renamed turn.</div>'
        '<button data-testid="good-response-turn-action-button">+</button></div></main>'
        '<form><button data-testid="composer-stop-button" aria-label="Arrêter">■</button></form>'
        '<div class="text-token-text-error" style="padding:8px">Une erreur est survenue.</div>',
        "Une erreur est survenue.",
    ),
    "no turns at all": ("<main><p>Empty chat.</p></main><form><textarea></textarea></form>", None),
}


async def _first_strategy(page: Page, locator: Locator) -> int:
    return next((i for i, a in enumerate(await attempts(page, locator)) if a.matches), -1)


async def _seen_by_playwright(page: Page) -> dict[str, Any]:
    turns = await find(page, ASSISTANT_TURN)
    count = 0 if turns is None else await turns.count()
    last = turns.nth(count - 1) if turns is not None and count else None
    return {
        "generating": await find(page, STOP_BUTTON) is not None,
        "strategy": await _first_strategy(page, ASSISTANT_TURN),
        "count": count,
        "text": "" if last is None else await last.inner_text(),
        "bar": last is not None and await find(last, FINISHED_TURN) is not None,
    }


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", list(PAGES))
async def test_the_in_page_poll_agrees_with_the_locators(
    site: FixtureSite, shared_browser: BrowserManager, name: str
) -> None:
    html, banner = PAGES[name]
    page = await shared_browser.page()
    await page.goto(site.url)  # an http page of the site: the probe only looks at those
    await page.set_content(f"<!doctype html><title>chat</title><body>{html}</body>")
    seen = await probe(page, site.url, turns=True)
    assert seen.turns is not None
    ours = {
        "generating": seen.turns.generating,
        "strategy": seen.turn_strategy,
        "count": seen.turns.turns,
        "text": seen.turns.text,
        "bar": seen.turns.finished_bar,
    }
    assert ours == await _seen_by_playwright(page)
    for locator in (ASSISTANT_TURN, USER_TURN):  # count_turns resolves them in the page too
        found = await find(page, locator)
        assert await count_turns(page, locator) == (0 if found is None else await found.count())
    assert seen.evidence.banner == banner
    assert seen.turns.blocked is (banner is not None)


def test_selectors_the_page_cannot_resolve_are_refused_not_guessed() -> None:
    assert in_page(STOP_BUTTON)["strategies"][0] == [
        {"css": "form"},
        {"role": "button", "name": "^stop", "flags": "i"},
    ]
    assert in_page(COMPOSER)["strategies"][0][1] == {"role": "textbox", "name": None, "flags": ""}
    assert in_page(MODE_ITEMS)["strategies"][2] == [{"css": '[role="menu"] [role^="menuitem"]'}]
    with pytest.raises(ValueError, match="cannot be resolved inside the page"):
        in_page(Locator("copy", (Strategy("role", "text=Copy"),)))
