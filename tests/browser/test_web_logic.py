"""The web adapter's pure logic, without a browser: the completion gate and mode choice."""

from __future__ import annotations

import pytest

from xclaw.core.errors import ConfigError
from xclaw.models.chatgpt_web.completion import CompletionGate, TurnSnapshot
from xclaw.models.chatgpt_web.modes import (
    MenuItem,
    ModeSelection,
    choose_mode,
    current_mode,
    match_score,
    split_mode,
)
from xclaw.models.chatgpt_web.options import timeouts_from

POLL = 0.1


def _gate() -> CompletionGate:
    return CompletionGate(2, stable_window_s=0.5, finished_polls=3, quiet_s=2.0)


def _feed(gate: CompletionGate, snaps: list[TurnSnapshot], start: float = 0.0) -> int | None:
    """The index of the poll at which the gate said done, or None."""
    for i, snap in enumerate(snaps):
        if gate.observe(snap, start + i * POLL):
            return i
    return None


def _snap(text: str, *, generating: bool = False, bar: bool = False, turns: int = 3,
          blocked: bool = False) -> TurnSnapshot:  # fmt: skip
    return TurnSnapshot(turns, text, generating, bar, blocked)


def test_a_finished_turn_completes_after_the_polls_and_the_window() -> None:
    streaming = [_snap("a", generating=True), _snap("ab", generating=True)]
    snaps = streaming + [_snap("ab", bar=True)] * 8
    # text last changed at poll 1; window 0.5 s -> poll 6; three bar polls hold from poll 4.
    assert _feed(_gate(), snaps) == 6


def test_no_new_turn_never_completes() -> None:
    assert _feed(_gate(), [_snap("old", bar=True, turns=2)] * 20) is None


def test_a_still_preamble_shorter_than_the_quiet_window_does_not_complete() -> None:
    gate = _gate()
    preamble = [_snap("Thinking...")] * 15  # still, no stop button, no action bar: 1.5 s
    assert _feed(gate, preamble) is None
    assert not gate.without_bar


def test_a_quiet_turn_without_any_action_bar_completes_after_the_quiet_window() -> None:
    gate = _gate()
    snaps = [_snap("a", generating=True), _snap("ab")] + [_snap("ab")] * 30
    # quiet from poll 1 (stop gone, text still); quiet_s 2.0 -> poll 21, read without a bar.
    assert _feed(gate, snaps) == 21
    assert gate.without_bar


def test_the_quiet_window_restarts_when_the_text_moves_again() -> None:
    cut = [_snap("half")] * 15 + [_snap("half and", generating=True)] * 3
    rest = [_snap("half and more")] * 30
    assert _feed(_gate(), cut + rest) == 18 + 20  # 2.0 s after the stream's last change


def test_an_action_bar_that_flashes_by_does_not_complete() -> None:
    flash = [_snap("Thinking...")] * 8 + [_snap("Thinking...", bar=True)] * 2
    then = [_snap("Thinking...", generating=True)] * 3
    assert _feed(_gate(), flash + then + [_snap("Thinking...")] * 5) is None


def test_a_banner_holds_the_turn_open() -> None:
    assert _feed(_gate(), [_snap("done", bar=True, blocked=True)] * 20) is None
    gate = _gate()
    assert _feed(gate, [_snap("done", bar=True, blocked=True)] * 10) is None
    gate.reset_streak()
    assert _feed(gate, [_snap("done", bar=True)] * 3, start=1.0) == 2


def test_empty_text_never_completes() -> None:
    assert _feed(_gate(), [_snap("  ", bar=True)] * 20) is None


MENU = [
    MenuItem("gpt-5-instant", checked=True),
    MenuItem("gpt-5-thinking"),
    MenuItem("o3-extra-high"),
    MenuItem("gpt-5-pro"),
]


@pytest.mark.parametrize(
    ("requested", "slug", "score"),
    [
        ("gpt-5-pro", "gpt-5-pro", 3),
        ("GPT 5 Pro", "gpt-5-pro", 3),
        ("pro", "gpt-5-pro", 2),
        ("Extra high", "o3-extra-high", 2),
        ("extrahigh", "o3-extra-high", 1),
        ("pro", "gpt-5-prompt", 0),  # short requests match whole segments only
        ("o3", "gpt-5-pro", 0),
        ("", "gpt-5-pro", 0),
    ],
)
def test_match_scores(requested: str, slug: str, score: int) -> None:
    assert match_score(requested, slug) == score


def test_an_available_target_is_chosen() -> None:
    choice = choose_mode("Extra High", MENU)
    assert (choice.item, choice.reason) == (MENU[2], "selected")


def test_the_best_match_wins_over_menu_order() -> None:
    items = [MenuItem("gpt-5-pro-legacy"), MenuItem("pro")]
    assert choose_mode("pro", items).item == items[1]


def test_a_disabled_target_falls_back_to_the_item_just_before() -> None:
    items = [MenuItem("a"), MenuItem("gpt-5-thinking"), MenuItem("gpt-5-pro", disabled=True)]
    choice = choose_mode("pro", items)
    assert (choice.item, choice.reason) == (items[1], "rate_limited_fallback")


@pytest.mark.parametrize(
    "items",
    [
        [MenuItem("gpt-5-pro", disabled=True)],  # nothing before it
        [MenuItem("a"), MenuItem("b", disabled=True), MenuItem("gpt-5-pro", disabled=True)],
    ],
)
def test_no_usable_item_before_a_disabled_target_keeps_the_mode(items: list[MenuItem]) -> None:
    choice = choose_mode("pro", items)
    assert (choice.item, choice.reason) == (None, "target_unavailable")


def test_a_missing_target_keeps_the_mode() -> None:
    assert choose_mode("o1 mini", MENU).reason == "target_missing"
    assert choose_mode("pro", []).reason == "target_missing"
    assert current_mode(MENU) == "gpt-5-instant"


def test_the_2026_effort_controls_are_not_modes_once_filtered() -> None:
    """``choose_mode`` sees rows only (``scripts.MENU_ITEMS`` drops the effort controls): a
    rate-limited Pro falls back to the Thinking row."""
    rows = [
        MenuItem("gpt-5-3", checked=True),
        MenuItem("gpt-5-5-thinking"),
        MenuItem("gpt-5-5-pro", disabled=True),
    ]
    choice = choose_mode("pro", rows)
    assert choice.item == rows[1] and choice.reason == "rate_limited_fallback"


def test_a_fallback_the_menu_cannot_confirm_says_so() -> None:
    confirmed = ModeSelection("pro", "gpt-5-thinking", "rate_limited_fallback")
    unsure = ModeSelection("pro", "gpt-5-thinking", "rate_limited_fallback", confirmed=False)
    assert confirmed.warning is not None and "not confirmed" not in confirmed.warning
    assert unsure.warning == (
        "'pro' is disabled (rate-limited); using gpt-5-thinking, the mode before it in the "
        "menu. The menu does not show which mode is active, so this is not confirmed."
    )


@pytest.mark.parametrize(
    ("spec", "split"),
    [("pro", ("pro", False)), ("pro!", ("pro", True)), ("!", (None, False)), (None, (None, False))],
)
def test_a_trailing_bang_asks_for_the_mode_strictly(
    spec: str | None, split: tuple[str | None, bool]
) -> None:
    assert split_mode(spec) == split


def test_web_timeouts_come_from_one_variable_and_bad_ones_are_coded() -> None:
    t = timeouts_from("turn_s=2.5, finished_polls=4")
    assert (t.turn_s, t.finished_polls, t.page_load_s) == (2.5, 4, 45.0)
    for bad in ("nope=1", "turn_s=-1", "turn_s"):
        with pytest.raises(ConfigError) as caught:
            timeouts_from(bad)
        assert caught.value.code == "CONFIG_INVALID"
