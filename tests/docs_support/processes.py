"""Processes an environment starts for the reader: a server the docs run in the foreground of
a terminal of its own (here in the background, stopped the way the docs stop it), or a run a
crash ends (SIGKILL, the way ``kill -9`` does).

Each runs as the reader would start it (their folder, their environment: the ``xclaw`` first
on their PATH, the warm one of warm.py in the bash blocks' tests, which passes SIGINT and
SIGTERM on and whose child is SIGKILLed when it is), in a process group of its own, its output
in a file next to the reader's folder. Whatever happens, none outlives the ``with`` block that
started it: the whole group is SIGKILLed on the way out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.docs_support.reader import Reader

WAIT_S = 60.0


@dataclass
class Background:
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    @contextlib.contextmanager
    def running(cls, argv: Sequence[str], reader: Reader, name: str) -> Iterator[Background]:
        log = reader.folder.parent / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(argv),
                cwd=reader.folder,
                env=reader.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: killed whole, children included
            )
        started = cls(proc, log)
        try:
            yield started
        finally:
            started.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, ready: str | Callable[[], bool], what: str = "") -> None:
        """Until ``ready`` (a text it prints, or a check) holds; it must not exit first."""
        check = (lambda: ready in self.output()) if isinstance(ready, str) else ready
        deadline = time.monotonic() + WAIT_S
        while not check():
            if self.proc.poll() is not None:
                raise AssertionError(f"it exited {self.proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not {what or ready!r} after {WAIT_S}s:\n{self.output()}")
            time.sleep(0.02)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Send ``sig`` to the process (SIGINT: Ctrl+C in its terminal); its exit code."""
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired as exc:  # pragma: no cover - the message is the point
            raise AssertionError(
                f"still running {WAIT_S}s after {sig!r}:\n{self.output()}"
            ) from exc

    def kill(self) -> None:
        """SIGKILL its whole group (what is left of it), and reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=WAIT_S)


def crash(argv: Sequence[str], reader: Reader, when: Callable[[], bool], name: str) -> str:
    """Run ``argv`` until ``when()`` holds, then SIGKILL it: what it printed until then."""
    with Background.running(argv, reader, name) as run:
        run.wait_for(when, "at the point of the crash")
        run.kill()
        return run.output()
