"""Helpers of the MCP tests: the demo server as a stdio definition."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DEMO = Path(__file__).with_name("demo_server.py")


def stdio_definition(calls: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(DEMO), "stdio"],
        "env": {"DEMO_CALLS": str(calls)},
        **extra,
    }
