"""Resolving a ``Locator`` (ordered fallbacks) against a page or an element, without waiting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.locators import Locator

Scope = Page | PageLocator


@dataclass(frozen=True, slots=True)
class Attempt:
    """One strategy tried, for diagnostics."""

    tier: str
    selector: str
    matches: int

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "selector": self.selector, "matches": self.matches}


def _scoped(scope: Scope, locator: Locator, selector: str) -> PageLocator:
    return scope.locator(selector + (" >> visible=true" if locator.visible else ""))


async def find(scope: Scope, locator: Locator) -> PageLocator | None:
    """All matches of the first strategy that matches anything, or None. ``count()`` does not
    wait, so an absent element costs one round trip per strategy."""
    for strategy in locator.strategies:
        found = _scoped(scope, locator, strategy.selector)
        if await found.count():
            return found
    return None


async def attempts(scope: Scope, locator: Locator) -> list[Attempt]:
    """How many elements every strategy matches (for a diagnostic bundle)."""
    out = []
    for strategy in locator.strategies:
        count = await _scoped(scope, locator, strategy.selector).count()
        out.append(Attempt(strategy.tier, strategy.selector, count))
    return out
