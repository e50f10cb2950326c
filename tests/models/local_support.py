"""What the real local-model tests share: the 0.5B that ``make deps`` pulls, and a check that
no llama.cpp server process is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xclaw.models.local.catalog import catalog
from xclaw.models.local.pull import pulled

MODEL = "qwen2.5-coder-0.5b"


def real_model() -> Path:
    """The pulled 0.5B; a failure, not a skip, when it is missing: CI must have it."""
    entry = catalog()[MODEL]
    if not pulled(entry):
        pytest.fail(
            f"the local model {MODEL} is not pulled: run `make deps` (or "
            f"`xclaw models pull {MODEL}`)"
        )
    return entry.path()


def server_processes() -> set[int]:
    """Pids of llama.cpp server children (``xclaw.models.local._child``) alive now."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"xclaw.models.local._child" in cmdline and state != "Z":
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return pid in server_processes()
