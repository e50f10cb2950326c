"""Mode selection in the fixture's menu (German labels: only stable attributes are read)."""

from __future__ import annotations

from typing import Any

import pytest
from fixture_server import FixtureSite
from web_support import Events, needs_browser

pytestmark = [needs_browser, pytest.mark.asyncio(loop_scope="module")]


def _menu(*disabled: str) -> list[dict[str, Any]]:
    slugs = ["gpt-5-instant", "gpt-5-thinking", "gpt-5-pro"]
    return [{"slug": s, "label": s.upper(), "disabled": s in disabled} for s in slugs]


async def test_the_configured_mode_is_selected_when_the_chat_opens(
    site: FixtureSite, make_transport: Any
) -> None:
    events = Events()
    site.queue("Answered in pro.")
    transport = make_transport(mode="Pro", on_event=events)
    assert await transport.send("hello") == "Answered in pro."
    assert site.posted[0]["model"] == "gpt-5-pro"
    assert events.of("conversation.mode_selected") == [
        {
            "requested": "Pro",
            "selected": "gpt-5-pro",
            "reason": "selected",
            "confirmed": True,
            "warning": None,
        }
    ]


async def test_a_rate_limited_mode_falls_back_to_the_item_before_it(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(menu=_menu("gpt-5-pro"))
    transport = make_transport()
    await transport.start_conversation()
    chosen = await transport.select_mode("pro")
    assert (chosen.selected, chosen.reason) == ("gpt-5-thinking", "rate_limited_fallback")
    assert site.state.current_mode == "gpt-5-thinking"


async def test_a_missing_mode_keeps_the_current_one(site: FixtureSite, make_transport: Any) -> None:
    events = Events()
    transport = make_transport(on_event=events)
    await transport.start_conversation()
    chosen = await transport.select_mode("o3 extra high")
    assert (chosen.selected, chosen.reason) == ("gpt-5-instant", "target_missing")
    assert site.state.current_mode == "gpt-5-instant"
    [event] = events.of("conversation.mode_selected")
    assert event["reason"] == "target_missing"
    assert (
        event["warning"]
        == "No mode in the menu matches 'o3 extra high'; the chat stays in gpt-5-instant."
    )


async def test_a_menu_that_first_renders_empty_is_opened_once_more(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(menu_empty_first=True)
    transport = make_transport()
    await transport.start_conversation()
    chosen = await transport.select_mode("thinking")
    assert (chosen.selected, chosen.reason) == ("gpt-5-thinking", "selected")
    assert site.state.current_mode == "gpt-5-thinking"


async def test_a_disabled_mode_with_nothing_usable_before_it_keeps_the_current_one(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(menu=_menu("gpt-5-instant", "gpt-5-thinking", "gpt-5-pro"), current_mode="x")
    transport = make_transport()
    await transport.start_conversation()
    chosen = await transport.select_mode("thinking")
    assert (chosen.selected, chosen.reason) == (None, "target_unavailable")
    assert site.state.current_mode == "x"


async def test_the_2026_picker_counts_rows_not_their_effort_controls(
    site_2026: FixtureSite, make_transport_2026: Any
) -> None:
    """The rows carry effort buttons whose test ids also start with model-switcher-, and a
    submenu trigger: only the three models are modes, and a rate-limited Pro falls back to
    Thinking (not to Thinking's effort button), with the page's toast as the notice."""
    menu = [{**m, "disabled": m["slug"] == "gpt-5-5-pro"} for m in site_2026.state.menu]
    site_2026.configure(menu=menu)
    events = Events()
    transport = make_transport_2026(on_event=events)
    await transport.start_conversation()
    chosen = await transport.select_mode("pro")
    assert (chosen.selected, chosen.reason, chosen.confirmed) == (
        "gpt-5-5-thinking",
        "rate_limited_fallback",
        True,
    )
    assert site_2026.state.current_mode == "gpt-5-5-thinking"
    assert chosen.notice is not None and "limite" in chosen.notice
    assert "rate-limited" in (events.of("conversation.mode_selected")[0]["warning"] or "")
    chosen = await transport.select_mode("thinking")
    assert (chosen.selected, chosen.reason) == ("gpt-5-5-thinking", "selected")
