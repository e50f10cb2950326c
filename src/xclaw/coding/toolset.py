"""The V1 coding tool set (seed 000 §7.2), as a fresh registry instance; with a browser
session, the browser tools (seed 003 ch. 07) join it on that session's own context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xclaw.plugins.builtin import builtin_tools
from xclaw.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from xclaw.browser.session import BrowserSession


def coding_registry(
    browser: BrowserSession | None = None, *, allow_hosts: Sequence[str] = ()
) -> ToolRegistry:
    """The coding tools; with ``browser``, also ``browser.*`` on it. ``allow_hosts``: the
    user config's ``browsing.allow_hosts``, opened without asking."""
    tools = builtin_tools()  # registered through PluginApi, as every plugin's tools are
    if browser is None:
        return ToolRegistry(tools)
    from xclaw.tools.browser import browser_registry  # Playwright: only when asked for

    return browser_registry(browser, allow_hosts=allow_hosts, extra=tools)
