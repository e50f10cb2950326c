"""What a user sees on stderr while a local model loads or is pulled (rich).

On a terminal: a spinner with the load stage and elapsed time, a progress bar for a pull.
Otherwise (CI, pipes): one plain line per stage, so logs stay readable.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.status import Status

__all__ = ["PullBar", "StderrLoadReporter"]


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


class StderrLoadReporter:
    """A ``LoadReporter`` for one model."""

    def __init__(self, label: str, console: Console | None = None) -> None:
        self.label = label
        self.console = console or _stderr()
        self._status: Status | None = None
        self._last_stage = ""

    def update(self, stage: str, elapsed_s: float) -> None:
        text = f"local model {escape(self.label)}: {stage} ({elapsed_s:.0f}s)"
        if self.console.is_terminal:
            if self._status is None:
                self._status = self.console.status(text)
                self._status.start()
            else:
                self._status.update(text)
        elif stage != self._last_stage:
            self.console.print(f"local model {escape(self.label)}: {stage}")
        self._last_stage = stage

    def ready(self, url: str, elapsed_s: float) -> None:
        self._stop()
        self.console.print(
            f"[dim]local model {escape(self.label)} ready at {escape(url)} in {elapsed_s:.1f}s[/]"
        )

    def failed(self) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


class PullBar:
    """A ``PullProgress`` drawn as rich progress bars: parts downloaded, bytes assembled."""

    def __init__(self, label: str, console: Console | None = None) -> None:
        self.label = label
        self.console = console or _stderr()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def phase(self, name: str, total: int) -> None:
        """Each phase gets a bar of its own: parts are counted, bytes are sized."""
        self.close()
        counted = name == "download"
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn() if counted else DownloadColumn(),
            TextColumn("") if counted else TransferSpeedColumn(),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[detail]}"),
            console=self.console,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            f"{escape(self.label)}: {name}", total=total, detail=""
        )

    def advance(self, amount: int, detail: str = "") -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=amount, detail=escape(detail))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
