"""The page run's latest snapshot: read, counted, wrapped, and known to be fresh or stale."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from xclaw.page.metrics import MetricsCollector
from xclaw.page.rounds import wrap_snapshot

_READ_ATTEMPTS = 3


class RefLike(Protocol):
    @property
    def ref(self) -> str: ...


class SnapshotLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def refs(self) -> Sequence[RefLike]: ...


class SnapshotSource(Protocol):
    """What the loop needs of a page driver (``xclaw.page.driver.PageDriver`` provides it).

    A source may also have ``async changed(snapshot) -> bool`` (whether the page may look
    different now); without it every refresh reads a new snapshot."""

    async def snapshot(self, options: Any = ...) -> SnapshotLike: ...


class SnapshotKeeper:
    """Reads snapshots with the run's options; ``fresh`` is False once an action ran after
    the latest one. ``refresh`` (every round) reuses the latest snapshot when the source says
    the page has not changed since. A failed read never stops the run: the model is told it
    is missing."""

    def __init__(self, source: SnapshotSource, options: Any, metrics: MetricsCollector) -> None:
        """``options`` None: the source's own default (the seed's first-round options)."""
        self.source = source
        self.options = options
        self.metrics = metrics
        self.latest: SnapshotLike | None = None
        self.fresh = False
        self.error = ""

    async def read(self) -> SnapshotLike | None:
        for attempt in range(_READ_ATTEMPTS):
            try:
                snap = await (
                    self.source.snapshot()
                    if self.options is None
                    else self.source.snapshot(self.options)
                )
            except Exception as err:  # noqa: BLE001 - a navigating page throws anything
                self.error = f"{type(err).__name__}: {err}"
                await asyncio.sleep(0.1 * (attempt + 1))  # e.g. mid-navigation: let it settle
                continue
            self.latest, self.fresh, self.error = snap, True, ""
            self.metrics.snapshot_read(len(snap.text))
            return snap
        self.fresh = False
        return None

    async def refresh(self) -> SnapshotLike | None:
        """The page as it is now: the latest snapshot when nothing changed, else a new one."""
        if self.latest is not None and not await self.changed():
            self.fresh, self.error = True, ""
            self.metrics.snapshot_reused()
            return self.latest
        return await self.read()

    async def changed(self, *, since_any: bool = False) -> bool:
        """Whether the page may differ from the latest snapshot of this keeper (``since_any``:
        from the latest the source took, e.g. a ``page_info`` snapshot since). True when not
        known: no snapshot yet, a source that cannot tell, or a check that failed."""
        check = getattr(self.source, "changed", None)
        if self.latest is None or check is None:
            return True
        try:
            return bool(await (check() if since_any else check(self.latest)))
        except Exception:  # noqa: BLE001 - a navigating page throws anything
            return True

    @property
    def can_tell(self) -> bool:
        """Whether the source reports page changes (``changed`` means something)."""
        return getattr(self.source, "changed", None) is not None

    def stale(self) -> None:
        self.fresh = False

    @property
    def url(self) -> str:
        return self.latest.url if self.latest is not None else ""

    def has_ref(self, selector: str) -> bool:
        """True when the latest snapshot shows the hash ref ``selector`` (``#a1b2c``)."""
        if self.latest is None or not selector.startswith("#"):
            return False
        want = selector.lstrip("#")
        return any(r.ref.lstrip("#") == want for r in self.latest.refs)

    def wrapped(self) -> str:
        """The latest snapshot between SNAPSHOT_START/END, or why there is none."""
        if self.error:
            return f"(the snapshot could not be read: {self.error[:300]})"
        if self.latest is None:
            return "(no snapshot yet: act on the task, a snapshot follows the first action)"
        return wrap_snapshot(self.latest.text, self.latest.url)
