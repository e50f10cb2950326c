"""Choosing a mode in the model menu without reading its (localised) text: seed 000 §4.3.

Pure functions over the menu as stable attributes: each item's ``slug`` (its ``data-testid``
without the ``model-switcher-`` prefix, else ``data-value`` or ``id``) and its ARIA state.

- The requested mode matches a slug by normalised tokens: a short request (``pro``, ``o3``)
  must equal a whole segment or run of segments; a longer one may also be a substring once
  separators are dropped (``Extra high`` → ``o3-extra-high``). The best match wins, then the
  first in menu order.
- A disabled (rate-limited) target falls back to the item just before it, if that one is
  available; otherwise, and when nothing matches, the current mode is kept (no guessing).

Any outcome but a confirmed ``selected`` carries a ``warning`` (a plain sentence the live view
prints); a strict request (``chatgpt-web:pro!``) turns it into ``WEB_MODE_UNAVAILABLE``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

_MIN_SUBSTRING = 5  # requests this long may match inside a slug
_SEPARATORS = re.compile(r"[^a-z0-9]+")

Reason = Literal[
    "selected",  # the requested mode is now the mode (or already was)
    "rate_limited_fallback",  # it was disabled: the item before it was chosen
    "target_missing",  # no item matches: current mode kept
    "target_unavailable",  # disabled, and no available item before it: current mode kept
    "menu_empty",  # the menu rendered no items, twice: current mode kept
    "switcher_not_found",  # no model switcher on the page: current mode kept
    "not_confirmed",  # the click did not take effect, twice: current mode kept
]


@dataclass(frozen=True, slots=True)
class MenuItem:
    slug: str
    disabled: bool = False
    checked: bool = False


@dataclass(frozen=True, slots=True)
class ModeChoice:
    item: MenuItem | None  # what to click; None keeps the current mode
    reason: Reason


@dataclass(frozen=True, slots=True)
class ModeSelection:
    """The outcome, as reported in the ``conversation.mode_selected`` event."""

    requested: str
    selected: str | None  # the slug now in use when known
    reason: Reason
    confirmed: bool = True  # the menu showed the choice checked afterwards
    notice: str | None = None  # what the page announced meanwhile (a limit toast), verbatim

    @property
    def warning(self) -> str | None:
        """A plain sentence when the mode in use is not, or not known to be, the one asked."""
        if self.reason == "selected" and self.confirmed:
            return None
        want, now = repr(self.requested), self.selected or "its current mode"
        sentence = {
            "selected": f"{want} was chosen, but the menu does not show which mode is active, "
            "so the choice is not confirmed.",
            "rate_limited_fallback": f"{want} is disabled (rate-limited); using {now}, the "
            "mode before it in the menu.",
            "target_missing": f"No mode in the menu matches {want}; the chat stays in {now}.",
            "target_unavailable": f"{want} is disabled (rate-limited) and no usable mode comes "
            f"before it; the chat stays in {now}.",
            "menu_empty": f"The model menu showed no modes; the chat stays in {now}.",
            "switcher_not_found": f"No model menu was found on the page; the chat stays in {now}.",
            "not_confirmed": f"Choosing {want} did not take effect; the chat stays in {now}.",
        }[self.reason]
        if self.reason == "rate_limited_fallback" and not self.confirmed:
            sentence += " The menu does not show which mode is active, so this is not confirmed."
        return sentence + (f" The page says: {self.notice}" if self.notice else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "selected": self.selected,
            "reason": self.reason,
            "confirmed": self.confirmed,
            "warning": self.warning,
        }


def split_mode(spec: str | None) -> tuple[str | None, bool]:
    """``"pro!"`` → ``("pro", True)``: a trailing ``!`` asks for the mode strictly."""
    if not spec:
        return None, False
    strict = spec.endswith("!")
    mode = spec.rstrip("!").strip()
    return (mode or None), strict and bool(mode)


def slug_of(identifier: str, prefix: str) -> str:
    return identifier[len(prefix) :] if identifier.startswith(prefix) else identifier


def _segments(text: str) -> list[str]:
    return [s for s in _SEPARATORS.split(text.lower()) if s]


def match_score(requested: str, slug: str) -> int:
    """3: same once separators are dropped; 2: a run of whole segments; 1: a long request
    inside the slug; 0: no match."""
    want, have = "".join(_segments(requested)), "".join(_segments(slug))
    if not want:
        return 0
    if want == have:
        return 3
    wanted, segments = _segments(requested), _segments(slug)
    runs = (segments[i : i + len(wanted)] for i in range(len(segments) - len(wanted) + 1))
    if any(run == wanted for run in runs):
        return 2
    return 1 if len(want) >= _MIN_SUBSTRING and want in have else 0


def choose_mode(requested: str, items: Sequence[MenuItem]) -> ModeChoice:
    """Which item to click for ``requested`` (see the module docstring)."""
    scored = [(match_score(requested, item.slug), -i, i) for i, item in enumerate(items)]
    best = max(scored, default=(0, 0, -1))
    if best[0] == 0:
        return ModeChoice(None, "target_missing")
    index = best[2]
    target = items[index]
    if not target.disabled:
        return ModeChoice(target, "selected")
    before = items[index - 1] if index > 0 else None
    if before is not None and not before.disabled:
        return ModeChoice(before, "rate_limited_fallback")
    return ModeChoice(None, "target_unavailable")


def current_mode(items: Sequence[MenuItem]) -> str | None:
    return next((item.slug for item in items if item.checked), None)
