"""What the page agent sees of a page (seed 002 §5): the snapshot text, its refs and budgets.

The text comes from the in-page library (``js/autopilot.js``): one line per element kept,
``[tag] "name" key=attrs runtime-state #ref``, children indented. Only interactive elements
carry a ref; text held by a layout element prints as ``"text"`` alone. Layout containers are
folded away (their children promoted; several promoted siblings are bracketed in a
``collapsed-group { ... }`` block). No budget cuts an interactive element: past ``max_depth``
controls are hoisted without their surroundings, past ``max_children`` children without a
control are cut and the others shrink to their controls, past ``max_nodes`` text and structure
are cut; the notes ``... (N children omitted[, M more shown by their controls only])`` and
``... (truncated, N nodes emitted)`` say so. Consecutive plain links share one line,
``[a] "News" #r1 · "Sports" #r2``; a control that is rendered but transparent or clipped away
is listed with the state ``hidden``.

A ref is ``#`` + base36 of FNV-1a-32 of the page URL (without fragment) and the element's
XPath, kept to five digits (mod 36**5, as in the seed's ``#a1b2c``), so the same element at the
same place keeps its ref from one snapshot to the next.

Frames: a same-origin iframe's document is walked in place (its XPaths run through
``/#document/``). A cross-origin iframe is out of the page's reach: the driver reads it with
Playwright's frame API (the library runs in every frame) and puts its lines under the
``[iframe]`` line, one level deeper; its refs carry the frame, ``#f1:a1b2c``, and ``dom``,
``wait`` and ``navigate scroll`` act on them inside that frame.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "FIRST_ROUND",
    "MANUAL",
    "Ref",
    "Snapshot",
    "SnapshotOptions",
    "SnapshotStats",
]


@dataclass(frozen=True)
class SnapshotOptions:
    """Budgets of one snapshot; the defaults are seed 002's for a ``chat()`` first round."""

    max_depth: int = 8
    viewport_only: bool = False
    prune_layout: bool = True
    max_nodes: int = 500
    max_children: int = 30
    max_text_length: int = 40
    viewport_margin: int = 0  # with viewport_only: this many pixels above and below it too

    def to_js(self) -> dict[str, Any]:
        """The camelCase options ``window.__xclawPage.snapshot`` takes."""
        return {
            "maxDepth": self.max_depth,
            "viewportOnly": self.viewport_only,
            "viewportMargin": self.viewport_margin,
            "pruneLayout": self.prune_layout,
            "maxNodes": self.max_nodes,
            "maxChildren": self.max_children,
            "maxTextLength": self.max_text_length,
            "packed": True,  # the result as one JSON string: see ``Snapshot.from_js``
        }


FIRST_ROUND = SnapshotOptions()
"""``chat()`` first round and the loop's refreshes: completeness first."""
MANUAL = SnapshotOptions(6, True, True, 220, 25, 40)
"""``page_info`` ``snapshot`` called by hand: the viewport, smaller."""


FRAME_REF = re.compile(r"^#(f\d+):([0-9a-z]{1,8}(?:_\d+)?)$")
"""A ref inside a cross-origin frame: ``#f1:a1b2c`` (the frame, then the hash in it)."""


@dataclass(frozen=True)
class Ref:
    ref: str  # "#a1b2c" (or "#f1:a1b2c" in a frame), exactly as the text shows it
    xpath: str  # in the document of its frame
    role: str
    name: str
    frame: str = ""  # "" for the page's own document (same-origin frames included), else "f1"


@dataclass(frozen=True)
class SnapshotStats:
    nodes: int
    interactive: int
    truncated: bool
    ms: float


@dataclass(frozen=True)
class Snapshot:
    text: str
    refs: list[Ref]
    stats: SnapshotStats
    url: str
    # The in-page change key of each frame read ("" the main frame): equal keys later mean
    # the page would snapshot the same (``PageDriver.changed``).
    keys: dict[str, str] = field(default_factory=dict)
    reused: bool = False  # True: the page had not changed, so this is the previous snapshot

    def to_json(self) -> dict[str, Any]:
        """``{"text", "refs": [{ref, xpath, role, name[, frame]}], "stats": {nodes,
        interactive, truncated, ms}}`` — what ``xclaw page snapshot --json`` prints (``frame``
        only on the refs of a cross-origin frame)."""
        return {
            "text": self.text,
            "refs": [{k: v for k, v in asdict(r).items() if k != "frame" or v} for r in self.refs],
            "stats": asdict(self.stats),
        }

    @classmethod
    def from_js(cls, raw: dict[str, Any]) -> Snapshot:
        """Build from what the in-page library returned: the result object, or (asked with
        ``packed``) ``{"ok": true, "packed": "<that object as JSON>"}``, which crosses from the
        page several times faster than the object itself."""
        if isinstance(raw.get("packed"), str):
            raw = json.loads(raw["packed"])
        stats = raw.get("stats") or {}
        return cls(
            text=str(raw.get("text", "")),
            refs=[
                Ref(str(r["ref"]), str(r["xpath"]), str(r["role"]), str(r["name"]), _frame(r))
                for r in raw.get("refs") or []
            ],
            stats=SnapshotStats(
                nodes=int(stats.get("nodes", 0)),
                interactive=int(stats.get("interactive", 0)),
                truncated=bool(stats.get("truncated", False)),
                ms=float(stats.get("ms", 0.0)),
            ),
            url=str(raw.get("url", "")),
            keys={"": str(raw["key"])} if raw.get("key") else {},
        )


def _frame(ref: dict[str, Any]) -> str:
    found = FRAME_REF.match(str(ref["ref"]))
    return found.group(1) if found else ""
