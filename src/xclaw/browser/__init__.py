"""The dedicated browser that web adapters drive (seed 000 §4.2): found on the machine, run on
its own profile under the data directory, launched and relaunched only by us, as a person's
browser rather than an automated one (``launch.py``), minimised while nobody is needed.

Shared by every adapter that needs a real browser page (the ChatGPT web model, a page agent).
"""

from xclaw.browser.discovery import (
    BROWSER_ENV,
    CONTAINER_ARGS,
    browser_candidates,
    find_browser,
)
from xclaw.browser.launch import AUTOMATION_DEFAULTS, LaunchPlan, plan_launch
from xclaw.browser.manager import (
    HEADLESS_ENV,
    SHOW_ENV,
    BrowserManager,
    BrowserOptions,
    EventSink,
    headless_from_env,
    minimized_from_env,
)
from xclaw.browser.profile import profile_dir, profile_owner_pid

__all__ = [
    "AUTOMATION_DEFAULTS",
    "BROWSER_ENV",
    "CONTAINER_ARGS",
    "HEADLESS_ENV",
    "SHOW_ENV",
    "BrowserManager",
    "BrowserOptions",
    "EventSink",
    "LaunchPlan",
    "browser_candidates",
    "find_browser",
    "headless_from_env",
    "minimized_from_env",
    "plan_launch",
    "profile_dir",
    "profile_owner_pid",
]
