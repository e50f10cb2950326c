"""tests/obs use the gateway's test support (a real gateway with scripted models)."""

from __future__ import annotations

import sys
from pathlib import Path

_GATEWAY_TESTS = str(Path(__file__).resolve().parent.parent / "gateway")
if _GATEWAY_TESTS not in sys.path:
    sys.path.insert(0, _GATEWAY_TESTS)
