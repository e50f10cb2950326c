"""The built-in plugin: the coding tools enter the registry through ``PluginApi`` like any
plugin's (simonw/llm registers its own models through its plugin hooks the same way)."""

from __future__ import annotations

from xclaw.plugins.api import PluginApi
from xclaw.tools.base import Tool

BUILTIN_ID = "builtin"


def register(api: PluginApi) -> None:
    from xclaw.tools.exec import exec_tools
    from xclaw.tools.fs import fs_tools
    from xclaw.tools.process import process_tools
    from xclaw.tools.project import project_tools

    for t in [*fs_tools(), *exec_tools(), *process_tools(), *project_tools()]:
        api.register_tool(t)


def builtin_tools() -> list[Tool]:
    """The coding tools, in their registration order."""
    api = PluginApi(BUILTIN_ID)
    register(api)
    return api.tools
