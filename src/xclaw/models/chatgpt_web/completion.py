"""When is a reply finished? A composite gate over page snapshots (seed 000 §4.3).

No single signal is trusted: a reasoning preamble can sit still with the stop button gone
for a moment, and an action bar can flash by. A turn is complete only when, together:

1. a NEW assistant turn exists (more turns than before the message was sent);
2. the stop button is gone;
3. the turn's text has not changed for ``stable_window_s``;
4. no verification, limit or error banner is showing;
5. and either the finished-turn action bar is in that turn, with the text unchanged, for
   ``finished_polls`` consecutive polls, or, when the page draws no action bar we know, 1-4
   have held for ``quiet_s``.

The last rule is why completion never hinges on one control: a page whose action bar (or copy
button) was renamed still completes, a little later, and is read from the DOM.

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
    def __init__(
        self, baseline: int, *, stable_window_s: float, finished_polls: int, quiet_s: float
    ) -> None:
        self.baseline = baseline
        self.stable_window_s = stable_window_s
        self.finished_polls = finished_polls
        self.quiet_s = quiet_s
        self.started = False  # a new turn has been seen
        self.without_bar = False  # it completed on the quiet rule: no action bar was found
        self._text: str | None = None
        self._changed_at = 0.0
        self._streak = 0
        self._quiet_since: float | None = None  # quiet (stop gone, no banner, text), since

    def observe(self, snap: TurnSnapshot, now: float) -> bool:
        """Feed one poll; True once the turn is complete."""
        if snap.turns <= self.baseline:
            self._streak, self._quiet_since = 0, None
            return False
        self.started = True
        if snap.text != self._text:
            self._text, self._changed_at = snap.text, now
            self._quiet_since, self._streak = None, 0
        quiet = not snap.generating and not snap.blocked and bool(snap.text.strip())
        self._streak = self._streak + 1 if quiet and snap.finished_bar else 0
        if not quiet:
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = now
        stable = now - self._changed_at >= self.stable_window_s
        if self._streak >= self.finished_polls and stable:
            return True
        if quiet and not snap.finished_bar and now - (self._quiet_since or now) >= self.quiet_s:
            self.without_bar = True
            return True
        return False

    def reset_streak(self) -> None:
        """After a pause (takeover) the streak starts over."""
        self._streak, self._quiet_since = 0, None
