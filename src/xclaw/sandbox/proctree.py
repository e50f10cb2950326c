"""Find and stop every process a spawned command became (Linux ``/proc``).

A command runs in its own session (``start_new_session=True``), so its process group and
session ids equal the leader's pid. Descendants can still escape both with ``setsid`` or
``setpgid``, and a double-forked daemon is reparented away from the tree, so a process is
counted as a member when any of these holds:

- its group or session id is the leader's pid;
- it is a descendant (by parent pid) of a member;
- its environment carries the command's tag variable, which children inherit across
  ``fork`` and ``exec`` (this is what finds orphans that left the session);
- it was a member at an earlier look and is still the same process (same start time).

Signals go through a pidfd after re-checking the start time, so a recycled pid is never hit.
This is policy-level cleanup, not a sandbox: a process that clears its environment, leaves
the session and gets reparented before the first look is not found. It lives with the
sandboxes, which tag what they launch (``TAG_VAR``) and reap what a killed xclaw left; the
command tools above use it to stop what they started.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass

TAG_VAR = "XCLAW_PROCESS_TAG"
GRACE_S = 2.0
"""How long members get after SIGTERM before SIGKILL."""

_POLL_S = 0.02
_KILL_ROUNDS = 20
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_HAVE_PROC = os.path.isdir("/proc/self")  # elsewhere only the process group can be reached


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks since boot; with the pid it names one process for good
    zombie: bool


def read_stat(pid: int) -> ProcInfo | None:
    """Parse ``/proc/<pid>/stat``; None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # The command name sits in parentheses and may itself contain spaces or ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    return ProcInfo(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        start=int(fields[19]),
        zombie=fields[0] in (b"Z", b"X"),
    )


def is_alive(pid: int, start: int | None = None) -> bool:
    """True while ``pid`` runs (zombies count as dead), and is the same process if given."""
    info = read_stat(pid)
    return info is not None and not info.zombie and (start is None or info.start == start)


def boot_ticks_floor() -> int:
    """A start-time floor taken before spawning: every descendant starts at or after it."""
    if not _HAVE_PROC:
        return 0
    with open("/proc/uptime", "rb") as fh:
        uptime = float(fh.read().split()[0])
    return max(int((uptime - 1.0) * _CLK_TCK), 0)  # one second of slack for clock rounding


def _scan(floor: int) -> dict[int, ProcInfo]:
    table: dict[int, ProcInfo] = {}
    for name in os.listdir("/proc") if _HAVE_PROC else ():
        if name.isdigit():
            info = read_stat(int(name))
            if info is not None and info.start >= floor:
                table[info.pid] = info
    return table


def _has_tag(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return entry in fh.read().split(b"\0")
    except OSError:
        return False


class ProcessTree:
    """The processes one spawned command became; see the module docstring for membership."""

    def __init__(self, leader: int, tag: str, floor: int, *, wrapper: bool = False) -> None:
        self.leader = leader
        # A sandbox launcher as leader (bwrap) is spared SIGTERM: it exits by itself when the
        # program does, reporting the program's status; killing it first would skip the grace.
        self._wrapper = wrapper
        self._tag_entry = f"{TAG_VAR}={tag}".encode()
        self._floor = floor
        self._known: dict[int, int] = {}  # pid -> start time
        info = read_stat(leader)
        if info is not None:
            self._known[leader] = info.start

    def collect(self) -> list[ProcInfo]:
        """Look at ``/proc`` now and return the live members (remembering them)."""
        table = _scan(self._floor)
        members = {
            pid
            for pid, info in table.items()
            if self.leader in (info.pgid, info.sid) or self._known.get(pid) == info.start
        }
        members |= {pid for pid in table.keys() - members if _has_tag(pid, self._tag_entry)}
        children: dict[int, list[int]] = {}
        for info in table.values():
            children.setdefault(info.ppid, []).append(info.pid)
        stack = list(members)
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in members:
                    members.add(child)
                    stack.append(child)
        members -= {0, 1, os.getpid()}
        for pid in members:
            self._known[pid] = table[pid].start
        return [table[pid] for pid in sorted(members) if not table[pid].zombie]

    def alive(self) -> bool:
        """Whether any member seen so far still runs (no new ``/proc`` scan)."""
        if not _HAVE_PROC:
            return _signal_group(self.leader, 0)
        return any(is_alive(pid, start) for pid, start in self._known.items())

    def signal(self, sig: signal.Signals) -> int:
        """Send ``sig`` to every live member; returns how many were signalled."""
        if not _HAVE_PROC:
            return int(_signal_group(self.leader, sig))
        members = self.collect()
        if sig is signal.SIGTERM and self._wrapper:
            members = [m for m in members if m.pid != self.leader]
        elif any(m.pgid == self.leader for m in members):
            # The group signal reaches members forked after the scan, atomically.
            _signal_group(self.leader, sig)
        sent = 0
        for m in members:
            sent += _send(m, sig)
            if sig is signal.SIGTERM:
                _send(m, signal.SIGCONT)  # a stopped process must run to act on SIGTERM
        return sent


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _send(member: ProcInfo, sig: signal.Signals) -> int:
    try:
        fd = os.pidfd_open(member.pid)
    except ProcessLookupError:
        return 0
    except OSError:  # kernel without pidfd: accept the (tiny) pid-reuse race
        try:
            os.kill(member.pid, sig)
        except (ProcessLookupError, PermissionError):
            return 0
        return 1
    try:
        again = read_stat(member.pid)
        if again is None or again.start != member.start:
            return 0  # the pid now names another process
        signal.pidfd_send_signal(fd, sig)
        return 1
    except (ProcessLookupError, PermissionError):
        return 0
    finally:
        os.close(fd)


async def terminate_tree(tree: ProcessTree, grace_s: float | None = None) -> None:
    """SIGTERM every member, wait up to the grace period, then SIGKILL whatever remains.

    SIGKILL is repeated with a fresh look each round, because a member may fork between a
    scan and its signal; the rounds end when a scan finds nobody alive.
    """
    grace = GRACE_S if grace_s is None else grace_s
    if tree.signal(signal.SIGTERM):
        # Polled: /proc offers no event for "a process that is not our child has exited".
        deadline = asyncio.get_running_loop().time() + grace
        for _ in range(int(grace / _POLL_S) + 1):
            if not tree.alive() or asyncio.get_running_loop().time() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
    for _ in range(_KILL_ROUNDS):
        if not tree.signal(signal.SIGKILL):
            return
        await asyncio.sleep(_POLL_S)
