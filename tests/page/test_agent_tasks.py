"""Task pages in real headless Chromium (issue 25), each run by a function model that reads only
what a model reads, the round message, and picks refs by their labels in its snapshot:

- text that appears after a delay: the round after a ``wait`` shows the page as it is then,
  and a ``page_info`` snapshot of a page that changed is answered, not refused;
- a button enabled later: a wait for ``enabled`` on its ref, or a click that waits for it;
- controls a person can click that have no box of their own or are not controls by tag: a
  logo link made of a floated image, an ``onclick`` card, a focusable ``label`` menu toggle;
- a login form inside a cross-origin iframe (127.0.0.1 embedding localhost on another port):
  its fields carry frame refs (``#f1:...``) and ``dom`` acts on them inside the frame;
- a screenshot (annotated with refs) reaches the model as an image in the next round message.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from page_agent_fakes import (
    FAST,
    line_with,
    ref_by_label,
    ref_on_line,
    round_text,
    snapshot_in,
)
from page_server import PageServer
from playwright.async_api import Page

from xclaw import FunctionModel, ModelTurn
from xclaw.core.messages import ImagePart, Message, ToolCallPart
from xclaw.core.model import ModelRequest
from xclaw.page.agent import AgentLoopResult, WebAgent
from xclaw.page.driver import PageDriver
from xclaw.page.snapshot import FRAME_REF
from xclaw.tools.browser_shots import png_size

pytestmark = pytest.mark.asyncio(loop_scope="module")

Answer = Callable[[Sequence[Message], ModelRequest], ModelTurn]


def calls(*specs: tuple[str, dict[str, object]]) -> tuple[ToolCallPart, ...]:
    return tuple(ToolCallPart(f"c{i}", name, dict(args)) for i, (name, args) in enumerate(specs))


async def run(driver: PageDriver, answer: Answer, task: str) -> tuple[AgentLoopResult, list[str]]:
    """Run ``task``; the round messages the model was sent come back beside the result."""
    seen: list[str] = []

    def recorded(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        seen.append(round_text(messages))
        return answer(messages, request)

    result = await WebAgent(FunctionModel(recorded), driver, settings=FAST).chat(task)
    return result, seen


TOTAL = re.compile(r"Order total: ([\d.]+)")


async def test_text_that_appears_after_a_delay(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_delayed_text.html"))

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        total = TOTAL.search(snapshot_in(messages))
        if total is None:  # still loading: wait for it (a read-only round)
            wait = ("wait", {"action": "wait_for_text", "text": "Order total", "timeout": 5000})
            return ModelTurn(
                text="Waiting for the total.\nREMAINING: confirm the total", tool_calls=calls(wait)
            )
        field, button = ref_by_label(messages, "Confirm total"), ref_by_label(messages, "Confirm")
        fill = ("dom", {"action": "fill", "selector": field, "value": total.group(1)})
        click = ("dom", {"action": "click", "selector": button})
        return ModelTurn(text="REMAINING: DONE", tool_calls=calls(fill, click))

    result, seen = await run(driver, answer, "When the order total shows, confirm it")
    assert result.ok, (result.reason, seen)
    assert await page.text_content("#result") == "confirmed"
    assert "Loading…" in seen[0] and "Order total" not in seen[0]
    # the round after the wait reads the page again: the total, no longer "Loading…"
    assert "Order total: 42.50" in seen[1] and "Loading…" not in seen[1]
    assert result.metrics.round_count == 2 and result.metrics.snapshot_read_count == 2


async def test_a_page_info_snapshot_of_a_changed_page_is_answered(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_delayed_text.html"))
    wait = ("wait", {"action": "wait_for_text", "text": "Order total", "timeout": 5000})
    snap = ("page_info", {"action": "snapshot"})
    turns = iter(
        [
            # the page changes during the wait: the snapshot after it reads the new page
            ModelTurn(text="REMAINING: read the total", tool_calls=calls(wait, snap)),
            # nothing changed since this round's snapshot: this one is refused as redundant
            ModelTurn(text="REMAINING: read the total", tool_calls=calls(snap)),
            ModelTurn(text="The total is 42.50.\nREMAINING: DONE"),
        ]
    )
    result, seen = await run(driver, lambda m, r: next(turns), "Read the order total")
    assert result.ok, result.reason
    waited, first, second = (tc["result"] for tc in result.tool_calls)
    assert waited.ok and first.ok, first
    assert "Order total: 42.50" in first.message and "Loading" not in first.message
    assert second.error_code == "REDUNDANT_PAGE_INFO_SKIPPED"
    assert result.metrics.redundant_intercept_count == 1
    assert "Order total: 42.50" in seen[1]


async def test_a_round_that_changed_nothing_reuses_the_snapshot(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_enabled_later.html"))
    await page.wait_for_function("!document.getElementById('accept').disabled")
    turns = iter(
        [
            ModelTurn(
                text="Reading.\nREMAINING: accept",
                tool_calls=calls(("dom", {"action": "get_text", "selector": "h1"})),
            ),
            ModelTurn(text="REMAINING: DONE"),
        ]
    )
    result, seen = await run(driver, lambda m, r: next(turns), "Accept the terms")
    assert result.ok, result.reason
    # the page did not change: the second round shows the first round's snapshot, not re-read
    assert snapshot_in_text(seen[0]) == snapshot_in_text(seen[1])
    assert result.metrics.snapshot_read_count == 1 and result.metrics.snapshot_reuse_count == 1


def snapshot_in_text(text: str) -> str:
    return text[text.index("SNAPSHOT_START") : text.index("SNAPSHOT_END")]


async def test_a_button_enabled_later_waited_for_by_its_ref(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_enabled_later.html"))

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        ref = ref_by_label(messages, "Accept terms")
        line = line_with(messages, "Accept terms") or ""
        if " disabled" in line:
            wait = ("wait", {"action": "wait_for_selector", "selector": ref, "state": "enabled"})
            return ModelTurn(text="REMAINING: accept the terms", tool_calls=calls(wait))
        click = ("dom", {"action": "click", "selector": ref})
        return ModelTurn(text="REMAINING: DONE", tool_calls=calls(click))

    result, seen = await run(driver, answer, "Accept the terms")
    assert result.ok, (result.reason, seen)
    assert await page.text_content("#result") == "accepted"
    assert re.search(r'\[button\] "Accept terms" disabled #', seen[0])
    assert re.search(r'\[button\] "Accept terms" #', seen[1])  # enabled now, and shown so
    waited = result.tool_calls[0]["result"]
    assert waited.ok and waited.data["state"] == "enabled"


async def test_a_click_on_a_button_enabled_later_waits_for_it(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_enabled_later.html"))

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        # clicks at once, disabled or not: the click waits until the button is enabled
        click = ("dom", {"action": "click", "selector": ref_by_label(messages, "Accept terms")})
        return ModelTurn(text="REMAINING: DONE", tool_calls=calls(click))

    result, _ = await run(driver, answer, "Accept the terms")
    assert result.ok, result.reason
    assert await page.text_content("#result") == "accepted"
    clicked = result.tool_calls[0]["result"]
    assert clicked.ok and clicked.data["elapsedMs"] >= 300  # it waited for the button


async def test_a_logo_link_an_onclick_card_and_a_label_menu_toggle(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await driver.navigate("goto", url=page_server.url("task_plans.html"))
    box = await page.evaluate(
        "(() => { const r = logo.getBoundingClientRect(); return [r.width, r.height]; })()"
    )
    assert 0 in box  # the logo link has no box of its own: only its floated image shows

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        snap = snapshot_in(messages)
        if "Welcome home" in snap:
            return ModelTurn(text="Home, on the Pro plan.\nREMAINING: DONE")
        if "Pro plan chosen" not in snap:
            card = ref_on_line(messages, "Pro", "$20 / month")
            return ModelTurn(
                text="REMAINING: open the menu, then go home by the logo",
                tool_calls=calls(("dom", {"action": "click", "selector": card})),
            )
        if line_with(messages, "Support") is None:
            menu = ref_by_label(messages, "Menu")
            return ModelTurn(
                text="REMAINING: go home by the logo",
                tool_calls=calls(("dom", {"action": "click", "selector": menu})),
            )
        logo = ref_by_label(messages, "Acme home")
        return ModelTurn(
            text="REMAINING: check the page",
            tool_calls=calls(("dom", {"action": "click", "selector": logo})),
        )

    result, seen = await run(driver, answer, "Choose the Pro plan, open the menu, go home")
    assert result.ok, (result.reason, seen)
    assert page.url.endswith("/task_home.html")
    assert await page.text_content("#plan") == "Your plan: Pro"
    assert re.search(r'\[div\] "Pro \$20 / month" #', seen[0])  # the card is a control
    assert re.search(r'\[label\] "Menu" #', seen[0])  # so is the focusable toggle
    assert re.search(r'\[a\] "Acme home" #', seen[0])  # and the logo link, named by its image
    assert "Support" not in seen[1] and '"Support"' in seen[2]  # the menu opened
    assert [tc["result"].ok for tc in result.tool_calls] == [True, True, True]


async def test_a_login_form_inside_a_cross_origin_iframe(
    page: Page, driver: PageDriver, page_server: PageServer, other_origin: PageServer
) -> None:
    form = other_origin.url("task_login_form.html")
    assert form.startswith("http://localhost:") and page_server.base.startswith("http://127.")
    await driver.navigate("goto", url=page_server.url("task_login.html") + "?form=" + form)
    await page.wait_for_function("document.getElementById('login').src !== ''")
    await page.wait_for_load_state("load")  # the frame's load comes before the page's
    frame = next(f for f in page.frames if f.url == form)

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        if "Welcome, ada" in snapshot_in(messages):
            return ModelTurn(text="Signed in.\nREMAINING: DONE")
        user, password = ref_by_label(messages, "Username"), ref_by_label(messages, "Password")
        sign_in = ref_by_label(messages, "Sign in")
        return ModelTurn(
            text="REMAINING: check that it worked",
            tool_calls=calls(
                ("dom", {"action": "fill", "selector": user, "value": "ada"}),
                ("dom", {"action": "fill", "selector": password, "value": "lovelace"}),
                ("dom", {"action": "click", "selector": sign_in}),
            ),
        )

    result, seen = await run(driver, answer, "Sign in as ada with the password lovelace")
    assert result.ok, (result.reason, seen)
    assert await page.text_content("#status") == "Welcome, ada"
    assert await frame.text_content("#msg") == "Signed in as ada"
    # the frame's lines sit under its [iframe] line, their refs carry the frame
    lines = snapshot_in_text(seen[0]).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('[iframe] "Sign in"'))
    assert lines[at + 1].startswith("  ") and "Username" in "\n".join(lines[at + 1 : at + 4])
    refs = [tc["input"]["selector"] for tc in result.tool_calls]
    assert all(FRAME_REF.match(r) for r in refs), refs
    assert '"Signed in as ada"' in seen[1]
    assert '[input] "Password" type=password name="password" val="•••" #f1:' in seen[1]


async def test_a_screenshot_reaches_the_model_as_an_image(
    page: Page, driver: PageDriver, page_server: PageServer, tmp_path: Path
) -> None:
    await driver.navigate("goto", url=page_server.url("task_plans.html"))
    shots: list[tuple[ImagePart, ...]] = []

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        images = tuple(p for p in messages[-1].parts if isinstance(p, ImagePart))
        shots.append(images)
        if not images:
            shot = ("page_info", {"action": "screenshot_annotated"})
            return ModelTurn(text="REMAINING: look at the plans", tool_calls=calls(shot))
        return ModelTurn(text="Two plans, Basic and Pro.\nREMAINING: DONE")

    result, seen = await run(driver, answer, "What plans are there?")
    assert result.ok, result.reason
    assert shots[0] == () and len(shots[1]) == 1  # the next round carries the picture
    image = shots[1][0]
    assert image.media_type == "image/png" and png_size(image.data) == (1000, 700)
    shot = result.tool_calls[0]["result"]
    assert await asyncio.to_thread(Path(shot.data["path"]).read_bytes) == image.data
    # the boxes are labelled with the refs the snapshot shows, the card's among them
    card = re.search(r'"Pro \$20 / month" (#\w+)', seen[0])
    assert card and card.group(1) in {b["ref"] for b in shot.data["boxes"]}
    assert "## Screenshots\n1 screenshot" in seen[1] and "saved to" in seen[1]
    assert await page.evaluate("!document.getElementById('__xclaw_page_annotations')")
    # drawing and removing the boxes is not a change of the page: the snapshot is reused
    assert result.metrics.snapshot_reuse_count == 1
