"""Resolving a ``Locator`` (ordered fallbacks) against a page or an element, without waiting;
and the same locator written for a script that resolves it inside the page (``in_page``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.models.chatgpt_web.locators import Locator
from xclaw.models.chatgpt_web.scripts import CLICK_SPOT

Scope = Page | PageLocator
_ENGINE = re.compile(r"^[a-z][a-z-]*=")  # "text=", "visible=", ...: not CSS
_ROLE = re.compile(r"^role=(?P<role>[a-z]+)(?:\[name=/(?P<name>.+)/(?P<flags>[a-z]*)\])?$")


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


async def click(page: Page, target: PageLocator, *, timeout_s: float | None = None) -> None:
    """A person's click on ``target``: straight at its centre (trusted mouse input) when it is
    in view and nothing covers it, one look first; else Playwright's click, which scrolls to it
    and waits until it can be clicked. (Playwright's own checks wait two animation frames per
    click: most of the transport's time per turn after the completion gate.)"""
    spot = await target.evaluate(CLICK_SPOT)
    if spot:
        await page.mouse.click(float(spot["x"]), float(spot["y"]))
    else:
        await target.click(timeout=None if timeout_s is None else timeout_s * 1000)


def nth_match(scope: Scope, locator: Locator, strategy: int, n: int) -> PageLocator:
    """The ``n``-th match of ``locator``'s strategy number ``strategy`` (the one a script in
    the page found matching), without a round trip."""
    return _scoped(scope, locator, locator.strategies[strategy].selector).nth(n)


def in_page(locator: Locator) -> dict[str, Any]:
    """``locator`` for ``scripts.PAGE_PROBE``: each strategy a chain of ``{"css": ...}`` and
    ``{"role", "name", "flags"}`` parts. Only CSS and ``role=R[name=/re/flags]`` translate;
    any other selector engine is a ``ValueError`` (raised where the locator is prepared, at
    import)."""
    return {
        "visible": locator.visible,
        "strategies": [_chain(s.selector) for s in locator.strategies],
    }


def _chain(selector: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in selector.split(" >> "):
        role = _ROLE.match(part)
        if role is not None:
            parts.append({"role": role["role"], "name": role["name"], "flags": role["flags"] or ""})
        elif _ENGINE.match(part):
            raise ValueError(f"{selector!r}: {part!r} cannot be resolved inside the page")
        else:
            parts.append({"css": part})
    return parts
