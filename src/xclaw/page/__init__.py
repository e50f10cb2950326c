"""The page agent (seed 002, AutoPilot): operates a live web page from compact DOM snapshots.

``PageDriver`` runs the in-page library (``js/autopilot.js``) on a Playwright page;
``page_tools(driver)`` gives the loop the five tools ``dom``, ``navigate``, ``page_info``,
``wait`` and ``evaluate``; ``Snapshot`` is what the model reads. ``WebAgent`` runs the one
loop on a page with the REMAINING protocol, recovery and route skills.
"""

import importlib
from typing import TYPE_CHECKING, Any

from xclaw.page.driver import DOM_CHANGING_ACTIONS, NAVIGATION_ACTIONS, PageDriver, library_source
from xclaw.page.snapshot import (
    FIRST_ROUND,
    MANUAL,
    Ref,
    Snapshot,
    SnapshotOptions,
    SnapshotStats,
)
from xclaw.page.tools import PAGE_TOOL_NAMES, page_tools

__all__ = [
    "AgentLoopMetrics",
    "AgentLoopResult",
    "DOM_CHANGING_ACTIONS",
    "FIRST_ROUND",
    "MANUAL",
    "NAVIGATION_ACTIONS",
    "PAGE_TOOL_NAMES",
    "PageDriver",
    "PageLoopSettings",
    "Ref",
    "RouteSkill",
    "Snapshot",
    "SnapshotOptions",
    "SnapshotStats",
    "WebAgent",
    "WebAgentCallbacks",
    "library_source",
    "page_tools",
]

if TYPE_CHECKING:
    from xclaw.page.agent import AgentLoopResult, WebAgent
    from xclaw.page.callbacks import WebAgentCallbacks
    from xclaw.page.metrics import AgentLoopMetrics
    from xclaw.page.recovery import PageLoopSettings
    from xclaw.page.routes import RouteSkill

# The agent side is imported on first use: `xclaw --help` should not pay for the loop.
_LAZY = {
    "AgentLoopMetrics": "xclaw.page.metrics",
    "AgentLoopResult": "xclaw.page.agent",
    "PageLoopSettings": "xclaw.page.recovery",
    "RouteSkill": "xclaw.page.routes",
    "WebAgent": "xclaw.page.agent",
    "WebAgentCallbacks": "xclaw.page.callbacks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'xclaw.page' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
