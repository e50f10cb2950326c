"""Helpers of the eval tests: a tiny fixture project and the scripts that work on it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BUGGY = "def double(x):\n    return x + x + 1\n"
FIXED = "def double(x):\n    return x + x\n"
TESTS = (
    "import unittest\n\nfrom calc import double\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_double(self):\n        self.assertEqual(double(4), 8)\n"
)
# This interpreter, not the `python3` on PATH: no launcher shim to start on every command.
PYTHON = sys.executable
UNITTEST = [PYTHON, "-m", "unittest", "-q", "test_calc"]

MakeDataset = Callable[..., Path]


USAGE = {"input_tokens": 100, "output_tokens": 10}


def fix_script(reply: str = "Fixed double; the tests pass.") -> list[Any]:
    """Read calc.py, fix it, run the tests, answer (each turn reports 100 in, 10 out)."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "fs.read", "arguments": {"path": "calc.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "fs.edit",
                    "arguments": {
                        "path": "calc.py",
                        "old_text": "x + x + 1",
                        "new_text": "x + x",
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "terminal.exec",
                    "arguments": {"program": UNITTEST[0], "argv": UNITTEST[1:]},
                }
            ]
        },
        {"text": reply},
    ]
    return [{**t, "usage": USAGE} for t in turns]


def fix_case(case_id: str = "fix", script: str = "fix.yaml", **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": case_id,
        "task": "Fix double() in calc.py and run the tests.",
        "fixture": "proj",
        "model": f"scripted:{script}",
        "allow": [f"program {Path(PYTHON).name}"],
        "expected_tools": ["fs.edit", "terminal.exec"],
        "assertions": {
            "files": [{"path": "test_calc.py", "unchanged": True}],
            "commands": [{"argv": UNITTEST}],
            "reply": {"contains": ["Fixed"]},
        },
    }
    case.update(extra)
    return case
