"""Sandboxes whose xclaw died: found by the owner mark in their launcher's environment.

Every sandbox launcher (``setpriv``/``nsenter``/``bwrap``) carries ``XCLAW_OWNER=<pid>:<start>``
naming the xclaw process that started it. Each launcher dies with its parent, except in the
instant between the spawn and the parent-death signal taking hold; if xclaw is killed in that
instant the launcher lives on. ``reap_orphans`` finds those and stops them (the sandbox's PID
namespace ends with its launcher). Linux ``/proc`` only; elsewhere it finds nothing.
"""

from __future__ import annotations

import functools
import os
import signal

from xclaw.sandbox.proctree import read_stat

OWNER_VAR = "XCLAW_OWNER"
_LAUNCHERS = frozenset({"bwrap", "nsenter", "setpriv"})


@functools.cache
def owner_mark() -> str:
    """This process's mark: pid and start time, so a recycled pid never matches."""
    info = read_stat(os.getpid())
    return f"{os.getpid()}:{info.start if info else 0}"


def _owner_alive(mark: str) -> bool:
    pid, _, start = mark.partition(":")
    if not pid.isdigit() or not start.isdigit():
        return True  # not ours to judge
    info = read_stat(int(pid))
    return info is not None and not info.zombie and info.start == int(start)


def _mark_of(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", "rb") as fh:
            if fh.read().strip().decode(errors="replace") not in _LAUNCHERS:
                return None
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except OSError:
        return None
    prefix = f"{OWNER_VAR}=".encode()
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def reap_orphans() -> int:
    """Stop sandbox launchers whose xclaw is gone; returns how many were stopped."""
    if not os.path.isdir("/proc/self"):
        return 0
    stopped = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        mark = _mark_of(name)
        if mark is None or _owner_alive(mark):
            continue
        try:
            os.kill(int(name), signal.SIGKILL)
            stopped += 1
        except (ProcessLookupError, PermissionError):
            continue
    return stopped
