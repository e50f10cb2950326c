"""When is a reply finished? A composite gate over page snapshots (seed 000 §4.3).

No single signal is trusted: a reasoning preamble can sit still with the stop button gone
for a moment, and an action bar can flash by. A turn is complete only when, together:

1. a NEW assistant turn exists (more turns than before the message was sent);
2. the stop button is gone;
3. the finished-turn action bar (copy button) is in that turn, for ``finished_polls``
   consecutive polls;
4. the turn's text has not changed for ``stable_window_s``;
5. no verification, limit or error banner is showing.

Pure logic over ``TurnSnapshot``s and a clock, so it is tested without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TurnSnapshot:
    turns: int  # assistant turns on the page
    text: str  # the last turn's text
    generating: bool  # the stop button is showing
    finished_bar: bool  # the last turn has its action bar (copy button)
    blocked: bool  # a challenge or banner is showing (even within its grace period)


class CompletionGate:
    def __init__(self, baseline: int, *, stable_window_s: float, finished_polls: int) -> None:
        self.baseline = baseline
        self.stable_window_s = stable_window_s
        self.finished_polls = finished_polls
        self.started = False  # a new turn has been seen
        self._text: str | None = None
        self._changed_at = 0.0
        self._streak = 0
        self._idle_since: float | None = None  # looks done but for the action bar, since

    def observe(self, snap: TurnSnapshot, now: float) -> bool:
        """Feed one poll; True once the turn is complete."""
        if snap.turns <= self.baseline:
            self._streak, self._idle_since = 0, None
            return False
        self.started = True
        if snap.text != self._text:
            self._text, self._changed_at = snap.text, now
        quiet = not snap.generating and not snap.blocked and bool(snap.text.strip())
        self._streak = self._streak + 1 if quiet and snap.finished_bar else 0
        stable = now - self._changed_at >= self.stable_window_s
        if quiet and stable and not snap.finished_bar:
            self._idle_since = self._idle_since if self._idle_since is not None else now
        else:
            self._idle_since = None
        return self._streak >= self.finished_polls and stable

    def idle_without_bar(self, now: float) -> float:
        """How long the turn has looked finished except that no action bar appeared: a long
        wait here means the action-bar locator no longer matches."""
        return 0.0 if self._idle_since is None else now - self._idle_since

    def reset_streak(self) -> None:
        """After a pause (takeover) the streak starts over."""
        self._streak, self._idle_since = 0, None
