"""Process helpers the exec and process tests share."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a killed orphan may wait for its new parent to reap it


def tree_alive(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``, seen from the host. Pids a
    sandboxed program writes are those of its own PID namespace, so they can't be used."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and alive(int(name)):
                found.append(int(name))
        except OSError:
            continue
    return found
