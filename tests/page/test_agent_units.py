"""The page loop's pieces with no browser: REMAINING, round messages, guards, metrics, routes,
prompts."""

from __future__ import annotations

import pytest

from xclaw.core.events import Event
from xclaw.core.messages import Message, ToolResult
from xclaw.page import recovery as rc
from xclaw.page.metrics import MetricsCollector
from xclaw.page.prompt import SYSTEM_PROMPT, PromptRegistry, build_system_prompt
from xclaw.page.remaining import (
    is_done,
    parse_remaining,
    reduce_heuristically,
    split_steps,
    strip_remaining,
)
from xclaw.page.rounds import (
    SNAPSHOT_OUTDATED,
    RoundInput,
    build_round_message,
    deduplicate_snapshots,
    describe_call,
    describe_result,
    latest_snapshot,
    normalise_output,
    wrap_snapshot,
)
from xclaw.page.routes import RouteSkill, RouteSkills, url_path

LINEAR = '点击按钮 -> 输入框输入 "abc" -> 发送'


# -- REMAINING ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value", "done"),
    [
        ("clicked it\nREMAINING: fill the form -> send", "fill the form -> send", False),
        ("REMAINING: DONE", "DONE", True),
        ("**REMAINING:** done.", "done.", True),
        ("REMAINING：发送", "发送", False),
        ("remaining: x\nmore text\nREMAINING: y", "y", False),  # the last line counts
        ("no protocol line here", None, False),
        ("REMAINING:", "", True),
    ],
)
def test_parse_remaining(text: str, value: str | None, done: bool) -> None:
    parsed = parse_remaining(text)
    assert (parsed.value, parsed.done, parsed.given) == (value, done, value is not None)


def test_strip_remaining_keeps_the_prose() -> None:
    assert strip_remaining("Clicked the button.\nREMAINING: send") == "Clicked the button."


def test_linear_instruction_splits_into_steps() -> None:
    assert split_steps(LINEAR) == ["点击按钮", '输入框输入 "abc"', "发送"]
    assert split_steps("1. open the menu\n2. pick Settings") == ["open the menu", "pick Settings"]
    assert split_steps("open the dialog, then fill the title and then save") == [
        "open the dialog",
        "fill the title",
        "save",
    ]
    assert split_steps("打开弹窗，然后填写标题；提交") == ["打开弹窗", "填写标题", "提交"]


def test_heuristic_reduction_is_the_seed_linear_example() -> None:
    round2 = reduce_heuristically(LINEAR, 1)
    assert round2 == '输入框输入 "abc" -> 发送'
    round3 = reduce_heuristically(round2, 1)
    assert round3 == "发送"
    assert reduce_heuristically(round3, 1) == "" and is_done("")
    assert reduce_heuristically(LINEAR, 0) == LINEAR  # no action: nothing is consumed
    assert reduce_heuristically(LINEAR, 5) == ""


# -- round messages -----------------------------------------------------------------------
def test_round_zero_carries_the_task_and_the_snapshot() -> None:
    snap = wrap_snapshot('[button] "Open" #a1', "http://x/")
    text = build_round_message(RoundInput(0, LINEAR, LINEAR, snap))
    assert text.startswith(f"## Task\n{LINEAR}")
    assert "## Latest DOM snapshot\nSNAPSHOT_START url=http://x/\n[button]" in text
    assert "remaining instruction" not in text


def test_later_rounds_are_remaining_driven_and_do_not_repeat_the_task() -> None:
    inp = RoundInput(
        2,
        "the original task text",
        "发送",
        wrap_snapshot("[button] Send #b2"),
        done_steps=["dom.click #a1", 'dom.fill #c3 "abc"'],
        previous_planned=['dom.fill #c3 "abc"'],
        previous_output="filled\nREMAINING: 发送",
        previous_results=['✓ dom.fill #c3 "abc" → filled'],
        extra_sections=[("Protocol violation", "act or say DONE")],
    )
    text = build_round_message(inp)
    assert "the original task text" not in text
    titles = [line for line in text.splitlines() if line.startswith("## ")]
    assert titles == [
        "## Current remaining instruction",
        "## Done steps (do NOT repeat)",
        "## Previous round planned task array",
        "## Previous round model output (normalized)",
        "## Previous round results",
        "## Protocol violation",
        "## Latest DOM snapshot",
    ]
    assert '1. dom.click #a1\n2. dom.fill #c3 "abc"' in text
    assert '["dom.fill #c3 \\"abc\\""]' in text


def test_done_remaining_asks_for_the_summary() -> None:
    text = build_round_message(RoundInput(1, "t", "", "(none)", done_steps=["x"]))
    assert "DONE — nothing is left" in text


def test_only_the_latest_snapshot_survives() -> None:
    msgs = [
        Message.user(wrap_snapshot("old page")),
        Message("assistant", ()),
        Message.user("before\n" + wrap_snapshot("new page")),
    ]
    out = deduplicate_snapshots(msgs)
    assert out[0].text == SNAPSHOT_OUTDATED
    assert latest_snapshot(out[2].text) == "SNAPSHOT_START\nnew page\nSNAPSHOT_END"
    assert out[1] is msgs[1] and out[2] is msgs[2]


def test_calls_and_outputs_are_described_compactly() -> None:
    assert describe_call("dom", {"action": "fill", "selector": "#a", "value": "abc"}) == (
        'dom.fill #a "abc"'
    )
    assert describe_call("navigate", {"action": "goto", "url": "http://x/"}) == (
        "navigate.goto http://x/"
    )
    assert describe_call("evaluate", {"expression": "1+1"}) == 'evaluate {"expression": "1+1"}'
    fail = ToolResult.failure("ELEMENT_NOT_FOUND", "no #a")
    assert describe_result("dom", {"action": "click", "selector": "#a"}, fail) == (
        "✗ dom.click #a → ELEMENT_NOT_FOUND: no #a"
    )
    assert (
        normalise_output("  I  clicked\n\nit.\nREMAINING: DONE") == "I clicked it.\nREMAINING: DONE"
    )
    assert normalise_output("") == "(no text)"


# -- guards ---------------------------------------------------------------------------------
def test_page_info_is_intercepted_while_the_snapshot_is_fresh() -> None:
    skipped = rc.redundant_page_info("get_url", True, "http://x/")
    assert skipped is not None and skipped.error_code == rc.REDUNDANT_PAGE_INFO_SKIPPED
    assert rc.redundant_page_info("get_url", False, "http://x/") is None
    assert rc.redundant_page_info("get_selection", True, "http://x/") is None


def test_snapshot_debounce_refuses_the_second_in_a_row() -> None:
    d = rc.SnapshotDebounce(2)
    snap = {"action": "snapshot"}
    assert d.check("page_info", snap) is None
    second = d.check("page_info", snap)
    assert second is not None and second.error_code == rc.REDUNDANT_SNAPSHOT
    assert d.check("dom", {"action": "click"}) is None
    assert d.check("page_info", snap) is None  # the streak was broken


def test_dom_changing_and_read_only_calls() -> None:
    assert rc.changes_dom("dom", {"action": "click"})
    assert rc.changes_dom("navigate", {"action": "goto"})
    assert not rc.changes_dom("dom", {"action": "fill"})
    assert not rc.changes_dom("navigate", {"action": "scroll"})
    assert rc.is_read_only_call("page_info", {"action": "get_url"}, False)
    assert rc.is_read_only_call("dom", {"action": "get_text"}, False)
    assert not rc.is_read_only_call("dom", {"action": "fill"}, False)
    assert rc.is_read_only_call("lookup", {}, True) and not rc.is_read_only_call("x", {}, False)


def test_not_found_retry_dialogue_counts_attempts_then_gives_up() -> None:
    retry = rc.NotFoundRetry(limit=2)
    assert retry.update(["✗ dom.click #a → ELEMENT_NOT_FOUND"]) is False  # first: no wait
    section = retry.section()
    assert section is not None and "Retry attempt: 1/2" in section[1]
    assert retry.update(["✗ dom.click #b → ELEMENT_NOT_FOUND"]) is True  # missed again: wait
    assert "Retry attempt: 2/2" in (retry.section() or ("", ""))[1]
    assert retry.update(["✗ dom.click #c → ELEMENT_NOT_FOUND"]) is False
    assert retry.section() is None  # out of attempts: the dialogue ends
    assert retry.update([]) is False and retry.attempt == 0


def test_batch_guard_and_idle_detector() -> None:
    guard = rc.BatchGuard()
    key = rc.batch_key([("dom", {"action": "click", "selector": "#a"})])
    assert not guard.repeated(key)
    guard.record(key, had_error=True)
    assert not guard.repeated(key)  # the last one failed: trying again is fair
    guard.record(key, had_error=False)
    assert guard.repeated(key)
    idle = rc.IdleDetector(limit=2)
    assert not idle.record(True, progressed=False)
    assert not idle.record(True, progressed=True)
    assert not idle.record(True, progressed=False)
    assert idle.record(True, progressed=False)


def test_recovery_results_carry_the_seed_codes() -> None:
    r = rc.recovery_result("#a", 1, 2, "click")
    assert (r.error_code, r.data["recoveryAttempt"]) == (rc.ELEMENT_NOT_FOUND_RECOVERY, 1)
    m = rc.max_recovery_result("#a", 2, "click", "gone")
    assert m.error_code == rc.ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED
    assert rc.DEFAULT_ACTION_RECOVERY_ROUNDS == 2 and rc.DEFAULT_RECOVERY_WAIT_MS == 100
    assert rc.DEFAULT_NOT_FOUND_RETRY_ROUNDS == 2 and rc.DEFAULT_NOT_FOUND_RETRY_WAIT_MS == 2000
    assert rc.DEFAULT_MAX_ROUNDS == 40


# -- metrics ----------------------------------------------------------------------------------
def test_metrics_from_events_and_snapshots() -> None:
    m = MetricsCollector()
    for ev in [
        Event("model.message_sent", "s", 1),
        Event("model.message_complete", "s", 1, {"input_tokens": 100, "output_tokens": 7}),
        Event("tool.completed", "s", 1, {"ok": True}),
        Event("tool.completed", "s", 1, {"ok": False}),
        Event("tool.completed", "s", 1, {"ok": True}),
        Event("model.message_sent", "s", 2),
        Event("model.message_complete", "s", 2, {"input_tokens": None, "output_tokens": 3}),
    ]:
        m(ev)
    m.snapshot_read(1000)
    m.snapshot_read(3001)
    m.snapshot_reused()
    m.recoveries, m.intercepts = 1, 2
    got = m.build()
    assert got.to_dict() == {
        "roundCount": 2,
        "totalToolCalls": 3,
        "successfulToolCalls": 2,
        "failedToolCalls": 1,
        "toolSuccessRate": 0.6667,
        "recoveryCount": 1,
        "redundantInterceptCount": 2,
        "snapshotReadCount": 2,
        "latestSnapshotSize": 3001,
        "avgSnapshotSize": 2000,
        "maxSnapshotSize": 3001,
        "inputTokens": 100,
        "outputTokens": 10,
        "snapshotReuseCount": 1,
    }
    assert MetricsCollector().build().tool_success_rate == 1.0


# -- routes and prompts -------------------------------------------------------------------------
def test_route_skills_follow_the_path() -> None:
    routes = RouteSkills({"/tickets": RouteSkill("tickets"), "/deploy/*": RouteSkill("deploy")})
    assert routes.update("http://h/tickets?x=1") and routes.prompt() == ("/tickets", "tickets")
    assert not routes.update("http://h/tickets#top")  # same path: no switch
    assert routes.update("http://h/deploy/42") and routes.active == "/deploy/*"
    assert routes.update("http://h/other") and routes.current() is None
    assert url_path("http://h") == "/"


def test_prompt_registry_and_the_built_prompt() -> None:
    reg = PromptRegistry("be careful")
    reg.set("tickets", "only tickets")
    assert reg.get_all() == {"default": "be careful", "tickets": "only tickets"}
    assert not reg.keep_only("missing") and reg.keep_only("tickets")
    assert reg.get_all() == {"tickets": "only tickets"}
    assert reg.remove("tickets") and not reg.remove("tickets")
    built = build_system_prompt({"a": "rule A"}, ("/t", "route rule"))
    assert built.startswith(SYSTEM_PROMPT)
    assert built.endswith("## Extra rules (a)\nrule A\n\n## Current route: /t\nroute rule")
    for rule in ("REMAINING: DONE", "page_info", "hash refs", "ends the round"):
        assert rule in SYSTEM_PROMPT


def test_the_round_break_follows_the_driver_s_dom_changing_actions() -> None:
    from xclaw.page.driver import DOM_CHANGING_ACTIONS, NAVIGATION_ACTIONS

    assert rc.DOM_CHANGING | rc.NAVIGATIONS == DOM_CHANGING_ACTIONS
    assert rc.NAVIGATIONS == NAVIGATION_ACTIONS
