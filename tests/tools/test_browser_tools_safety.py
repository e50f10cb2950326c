"""The browser tools' safety goes through the policy: destructive clicks and key presses,
non-web schemes, ``file:`` outside the project and private addresses ask a human; a denied call
leaves the page untouched. Plus one run of the coding agent's loop with these tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_site import (
    Answers,
    Deps,
    Site,
    agent_id,
    dispatch,
    project,
)

from xclaw import Agent, ScriptedModel
from xclaw.browser.session import BrowserSession
from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import Decision, Grant, PageElement, PreparedCall, Risk, WebAddress
from xclaw.policy.browsing import judge_address, judge_element
from xclaw.tools.browser import browser_registry

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def decide(deps: Deps, name: str, **arguments: Any) -> Decision:
    """What the policy says about a call after the tool looked at its target (nothing runs)."""
    prepared = deps.toolbox.prepare(ToolCallPart("c1", name, arguments))
    assert isinstance(prepared, PreparedCall), prepared
    assert await deps.toolbox.inspect(prepared) is None
    return deps.policy.evaluate(prepared)


async def status(deps: Deps) -> str:
    assert deps.session is not None
    page = await deps.session.page()
    return str(await page.inner_text("#status"))


async def open_danger(deps: Deps, site: Site) -> str:
    opened = await dispatch(deps, "browser.navigate", url=f"{site.url}/danger")
    assert opened.ok, opened
    html = await dispatch(deps, "browser.content")
    return html.message


# --- the policy's rules, without a browser -------------------------------------------------


@pytest.mark.parametrize(
    ("url", "resolved", "code"),
    [
        ("https://example.org/", ("93.184.216.34",), None),
        ("http://localhost:3000/", (), "BROWSER_PRIVATE_ADDRESS"),  # loopback asks too
        ("http://127.0.0.1:8000/x", (), "BROWSER_PRIVATE_ADDRESS"),
        ("about:blank", (), None),
        ("http://10.1.2.3/", (), "BROWSER_PRIVATE_ADDRESS"),
        ("http://[fe80::1]/", (), "BROWSER_PRIVATE_ADDRESS"),
        ("http://169.254.169.254/latest/meta-data", (), "BROWSER_PRIVATE_ADDRESS"),
        ("https://dev.example/", ("127.0.0.2",), "BROWSER_PRIVATE_ADDRESS"),
        ("https://router.example/", ("192.168.1.1",), "BROWSER_PRIVATE_ADDRESS"),
        ("https://mixed.example/", ("93.184.216.34", "10.0.0.1"), "BROWSER_PRIVATE_ADDRESS"),
        ("http://127.rebind.example/", ("10.0.0.1",), "BROWSER_PRIVATE_ADDRESS"),
        ("http://[::ffff:192.168.0.1]/", (), "BROWSER_PRIVATE_ADDRESS"),
        ("http://0.0.0.0:8000/", (), "BROWSER_PRIVATE_ADDRESS"),
        ("javascript:alert(1)", (), "BROWSER_SCHEME_NEEDS_APPROVAL"),
        ("chrome://settings", (), "BROWSER_SCHEME_NEEDS_APPROVAL"),
        ("data:text/html,hi", (), "BROWSER_SCHEME_NEEDS_APPROVAL"),
        ("ftp://example.org/f", (), "BROWSER_SCHEME_NEEDS_APPROVAL"),
    ],
)
async def test_address_rules(url: str, resolved: tuple[str, ...], code: str | None) -> None:
    verdict = judge_address(WebAddress(url, resolved))
    assert (verdict.code if verdict else None) == code
    if verdict is not None:
        assert verdict.action == "ask"


@pytest.mark.parametrize(
    ("element", "asks"),
    [
        (PageElement("click", "button", text="Delete account"), True),
        (PageElement("click", "button", label="Remove item", text="🗑"), True),
        (PageElement("click", "button", text="Buy now"), True),
        (
            PageElement("click", "a", text="x", href="https://shop.example/cart/remove-item?id=1"),
            True,
        ),
        (PageElement("click", "button", text="立即购买"), True),
        (PageElement("click", "button", text="Save"), False),
        (PageElement("click", "button", text="Display settings"), False),
        (PageElement("click", "a", text="PayPal help", href="https://x.example/help"), False),
        (
            PageElement(
                "click",
                "button",
                text="Continue",
                submits_form=True,
                form_fields=("cardnumber cc-number text",),
            ),
            True,
        ),
        (
            PageElement(
                "click", "button", text="Continue", submits_form=True, form_fields=("q search",)
            ),
            False,
        ),
    ],
)
async def test_element_rules(element: PageElement, asks: bool) -> None:
    verdict = judge_element(element)
    assert (verdict is not None) == asks
    if verdict is not None:
        assert (verdict.risk, verdict.grant) == (Risk.DESTRUCTIVE, None)


# --- destructive clicks and keys, live ------------------------------------------------------


async def test_destructive_click_denied_leaves_the_page_unchanged(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    refused = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Delete account"))
    assert refused.error_code == "APPROVAL_DENIED", refused
    [asked] = deps.approver.asked
    assert asked.decision.code == "BROWSER_DESTRUCTIVE_ACTION" and "Delete" in asked.decision.reason
    assert await status(deps) == "active"


async def test_destructive_click_approved_runs(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    deps.approver.script = ["once"]
    done = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Delete account"))
    assert done.ok, done
    assert await status(deps) == "deleted"
    # "once" approves that click only: the next destructive one asks again
    again = await dispatch(deps, "browser.click", selector="#icon")
    assert again.error_code == "APPROVAL_DENIED" and len(deps.approver.asked) == 2
    assert "Remove item" in deps.approver.asked[1].decision.reason


async def test_harmless_click_does_not_ask(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    saved = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Save"))
    assert saved.ok and deps.approver.asked == [] and await status(deps) == "saved"
    near = await decide(deps, "browser.click", agent_id=agent_id(html, ">Next"))
    assert near.action == "allow"


async def test_payment_form_submit_asks_by_click_and_by_enter(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    card = agent_id(html, 'name="cardnumber"')
    await dispatch(deps, "browser.type", agent_id=card, text="4242424242424242")
    go = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Continue"))
    assert go.error_code == "APPROVAL_DENIED"
    assert "payment form" in deps.approver.asked[0].decision.reason
    enter = await dispatch(deps, "browser.key", key="Enter", agent_id=card)
    assert enter.error_code == "APPROVAL_DENIED" and len(deps.approver.asked) == 2
    escape = await decide(deps, "browser.key", key="Escape", agent_id=card)
    assert escape.action == "allow"  # keys that activate nothing are not judged
    assert await status(deps) == "active"
    deps.approver.script = ["once"]
    paid = await dispatch(deps, "browser.key", key="Enter", agent_id=card)
    assert paid.ok and await status(deps) == "paid"


async def test_link_to_a_private_address_asks(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    far = await decide(deps, "browser.click", agent_id=agent_id(html, "Router admin"))
    assert (far.action, far.code) == ("ask", "BROWSER_PRIVATE_ADDRESS")


async def test_a_target_that_changed_after_the_check_is_not_clicked(deps: Deps, site: Site) -> None:
    html = await open_danger(deps, site)
    save = agent_id(html, "Save")
    prepared = deps.toolbox.prepare(ToolCallPart("c1", "browser.click", {"agent_id": save}))
    assert isinstance(prepared, PreparedCall)
    assert await deps.toolbox.inspect(prepared) is None
    assert deps.policy.evaluate(prepared).action == "allow"
    assert deps.session is not None
    page = await deps.session.page()
    await page.evaluate("document.getElementById('save').textContent = 'Delete everything'")
    result = await deps.toolbox.execute(prepared, lambda _s, _t: None)
    assert result.error_code == "BROWSER_TARGET_CHANGED" and await status(deps) == "active"


# --- navigation ----------------------------------------------------------------------------


async def test_file_urls_inside_the_project_open_outside_ask(
    deps: Deps, site: Site, tmp_path: Path
) -> None:
    root = deps.toolbox.workspace.root
    (root / "page.html").write_text("<title>Local</title><p>inside the project</p>")
    outside = tmp_path / "elsewhere.html"
    outside.write_text("<p>outside</p>")
    inside = await dispatch(deps, "browser.navigate", url=(root / "page.html").as_uri())
    assert inside.ok and deps.approver.asked == [], inside
    refused = await dispatch(deps, "browser.navigate", url=outside.as_uri())
    assert refused.error_code == "APPROVAL_DENIED"
    assert deps.approver.asked[0].decision.code == "PATH_OUTSIDE_ROOT"
    assert deps.session is not None
    assert (await deps.session.page()).url == (root / "page.html").as_uri()


@pytest.mark.parametrize(
    "url",
    [
        "http://dev.example:{port}/next",  # a public-looking name that resolves to 127.0.0.2
        "http://intranet.example/",  # → 10.0.0.7
        "http://router.example/",  # → 192.168.1.1
        "http://10.0.0.7/",
        "javascript:document.title='pwned'",
        "chrome://version",
    ],
)
async def test_navigation_that_asks_and_is_denied_goes_nowhere(
    deps: Deps, site: Site, url: str
) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/next")
    refused = await dispatch(deps, "browser.navigate", url=url.format(port=site.port))
    assert refused.error_code == "APPROVAL_DENIED", refused
    code = deps.approver.asked[0].decision.code
    assert code in ("BROWSER_PRIVATE_ADDRESS", "BROWSER_SCHEME_NEEDS_APPROVAL")
    assert deps.session is not None
    page = await deps.session.page()
    assert page.url == f"{site.url}/next" and await page.title() == "Next page"


async def test_private_name_approved_for_the_task_opens_and_stops_asking(
    deps: Deps, site: Site
) -> None:
    deps.approver.script = ["task"]
    url = f"http://dev.example:{site.port}/next"
    first = await dispatch(deps, "browser.navigate", url=url)
    assert first.ok and first.data["title"] == "Next page", first
    assert "<h1>Arrived</h1>" in (await dispatch(deps, "browser.content")).message
    grant = deps.approver.asked[0].decision.grant
    assert grant == Grant("site", f"http://dev.example:{site.port}")
    second = await dispatch(deps, "browser.navigate", url=f"http://dev.example:{site.port}/form")
    assert second.ok and len(deps.approver.asked) == 1
    public = await decide(deps, "browser.navigate", url="https://public.example/")
    assert public.action == "allow"


# --- the one loop, end to end --------------------------------------------------------------


async def test_the_coding_agent_loop_drives_the_browser(
    session: BrowserSession, site: Site, tmp_path: Path
) -> None:
    def turn(name: str, expect: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
        t: dict[str, Any] = {
            "tool_calls": [{"id": f"c{name}{len(args)}", "name": name, "arguments": args}]
        }
        if expect:
            t["expect"] = expect
        return t

    model = ScriptedModel(
        [
            turn("browser.navigate", url=f"{site.url}/form"),
            turn("browser.content", {"last_contains": ["Opened Form page"]}),
            turn("browser.type", {"last_contains": ['name=\\"name\\"']}, agent_id="2", text="Ada"),
            turn("browser.key", {"last_ok": True}, key="Enter", agent_id="2"),
            turn("browser.content", {"last_ok": True}, max_chars=2000),
            turn(
                "browser.navigate", {"last_contains": ["submitted: Ada"]}, url=f"{site.url}/danger"
            ),
            turn("browser.click", {"last_ok": True}, agent_id="2"),
            {"expect": {"last_contains": ["APPROVAL_DENIED"]}, "text": "Stopped at delete."},
        ]
    )
    answers = Answers()
    agent = Agent(
        model,
        project(tmp_path),
        tools=browser_registry(session, allow_hosts=[f"127.0.0.1:{site.port}"]),
        approval=answers,
        evidence_gate_enabled=False,
    )
    result = await agent.run("Fill the form, then try to delete the account.")
    assert result.ok and result.reply == "Stopped at delete.", result.reason
    model.assert_complete()
    assert [r.name for r in result.tool_calls][-1] == "browser.click"
    [asked] = answers.asked
    assert asked.decision.code == "BROWSER_DESTRUCTIVE_ACTION"
    page = await session.page()
    assert await page.inner_text("#status") == "active"
