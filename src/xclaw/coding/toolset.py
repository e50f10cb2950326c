"""The V1 coding tool set (seed 000 §7.2), as a fresh registry instance."""

from __future__ import annotations

from xclaw.tools.exec import exec_tools
from xclaw.tools.fs import fs_tools
from xclaw.tools.process import process_tools
from xclaw.tools.project import project_tools
from xclaw.tools.registry import ToolRegistry


def coding_registry() -> ToolRegistry:
    return ToolRegistry([*fs_tools(), *exec_tools(), *process_tools(), *project_tools()])
