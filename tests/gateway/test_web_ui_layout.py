"""The web UI as a person uses it (issue 26), in real headless Chromium at 1280 px and 390 px:
a reply in Markdown with a highlighted code block copied to the clipboard, an approval with
a plain risk label, the turn's model and tokens, readable titles (the first message; a fork
is "Fork of TITLE at STEP"), a flat step tree with human names, dark mode, the session list
behind a button on a phone, fork and rollback, regenerate; axe-core finds nothing serious or
critical in any of these states. A model reply carrying a script, event attributes,
``javascript:`` links or images is drawn inert, live and after a reload.

Screenshots of each state are written to the test's ``tmp_path`` (``WIDTHpx-STATE.png``).
axe-core is a test fixture (``tests/gateway/axe/``), never served by the gateway.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import BrowserContext, Page, expect
from test_web_ui import MARK, TOKEN, chromium, log_in, serving

pytestmark = pytest.mark.timeout(150)

AXE = Path(__file__).with_name("axe") / "axe.min.js"
CODE = 'def greet(name):\n    return "hi " + name'
CALL = {
    "id": "call_check",
    "name": "terminal.exec",
    "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK}"]},
}
FINAL = (
    f"## Result\n\nThe check printed `{MARK}`. The code:\n\n```python\n{CODE}\n```\n\n"
    "- one\n- two\n"
)
MARKDOWN = [
    {
        "text": "I will run the <b>check</b> first.",
        "tool_calls": [CALL],
        "usage": {"input_tokens": 1200, "output_tokens": 30},
    },
    {
        "text": FINAL,
        "expect": {"last_contains": [MARK]},
        "usage": {"input_tokens": 1300, "output_tokens": 40},
    },
]
WIDTHS = [1280, 390]


async def narrow_page(context: BrowserContext) -> Page:
    """A page whose script errors and dialogs are kept in ``page.troubles`` (none expected)."""
    page = await context.new_page()
    troubles: list[str] = []
    page.on("pageerror", lambda err: troubles.append(f"script error: {err}"))
    page.on("dialog", lambda d: troubles.append(f"dialog: {d.message}"))
    setattr(page, "troubles", troubles)  # noqa: B010 - a note on the page object
    return page


def no_troubles(page: Page) -> None:
    assert getattr(page, "troubles", []) == []


async def axe_check(page: Page, state: str) -> None:
    """axe-core on the page as it is now: no serious or critical finding."""
    if await page.evaluate("typeof window.axe") == "undefined":
        await page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => {
            const r = await axe.run(document, { resultTypes: ["violations"] });
            return r.violations.map((v) => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
            }));
        }"""
    )
    serious = [v for v in found if v["impact"] in ("serious", "critical")]
    assert not serious, f"axe, {state}: {serious}"


async def no_sideways_scroll(page: Page) -> None:
    width = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert width <= 0, f"the page scrolls sideways by {width}px"


async def shot(page: Page, tmp_path: Path, width: int, state: str) -> None:
    await page.screenshot(path=str(tmp_path / f"{width}px-{state}.png"))


@pytest.mark.parametrize("width", WIDTHS)
async def test_markdown_copy_approve_titles_fork_rollback(
    root: Path, tmp_path: Path, width: int
) -> None:
    narrow = width < 700
    async with serving(root, MARKDOWN) as gw, chromium() as browser:
        context = await browser.new_context(
            viewport={"width": width, "height": 860},
            permissions=["clipboard-read", "clipboard-write"],
        )
        page = await narrow_page(context)
        await log_in(page, gw, "not-the-token")  # the login view, with its error
        await expect(page.locator("#login-error")).to_contain_text("not accepted")
        await axe_check(page, "login")
        await log_in(page, gw, TOKEN)
        await expect(page.locator("#conn-status")).to_have_text("connected")
        await expect(page.locator("#session-title")).to_have_text("New chat")
        if narrow:  # the session list is behind a button; the chat has the whole width
            await expect(page.locator("#sidebar")).to_be_hidden()
            await expect(page.locator("#sidebar-toggle")).to_be_visible()
            box = await page.locator("#messages").bounding_box()
            assert box and box["width"] >= width - 2
        else:
            await expect(page.locator("#sidebar")).to_be_visible()
            await expect(page.locator("#sidebar-toggle")).to_be_hidden()
        await no_sideways_scroll(page)

        await page.locator("#composer-input").fill("Please run the check.")
        await page.keyboard.press("Enter")
        # the title is the first message at once, never the raw session id
        await expect(page.locator("#session-title")).to_have_text("Please run the check.")
        approval = page.locator(".approval")
        await expect(approval).to_be_visible()
        # `sh -c 'echo ...'` runs a command: not "destructive"
        await expect(approval.locator(".approval-title")).to_have_text(
            "Approval needed: runs a command"
        )
        await expect(approval).to_have_attribute("data-risk", "execute")
        await expect(approval.locator(".approval-reason")).to_contain_text("read-only commands")
        await expect(page.locator(".msg-assistant").first).to_contain_text("<b>check</b>")
        await expect(page.locator("#messages b")).to_have_count(0)
        await shot(page, tmp_path, width, "approval")
        await axe_check(page, "approval")
        await expect(page.locator(".approve-once")).to_be_focused()
        await page.keyboard.press("Enter")

        final = page.locator(".msg.final")
        await expect(final).to_have_attribute("data-status", "completed")
        await expect(final.locator("h2")).to_have_text("Result")
        await expect(final.locator("li")).to_have_count(2)
        await expect(final.locator("p code")).to_have_text(MARK)
        code = final.locator(".code-block pre code")
        await expect(code).to_have_text(re.compile(re.escape(CODE)))
        await expect(final.locator(".code-lang")).to_have_text("python")
        await expect(code.locator(".hljs-keyword").first).to_be_visible()  # highlighted
        # the turn's model and tokens (two model calls), under the answer
        usage = final.locator(".msg-usage")
        await expect(usage).to_contain_text("scripted")
        await expect(usage).to_contain_text("2,500 in / 70 out tokens")
        await expect(usage).to_contain_text("2 model calls")

        copy = final.locator(".copy-code")
        await expect(copy).to_have_accessible_name("Copy python code")
        await copy.click()
        await expect(final.locator(".copy-status")).to_have_text("Copied")
        copied = await page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == CODE

        # the step tree: human names, a flat chain, no model spec as a name
        await page.locator("#steps summary").click()
        names = page.locator("#step-tree .step-name")
        await expect(names.first).to_have_text("Your message")
        await expect(page.locator(".step-name", has_text="Model call")).to_have_count(2)
        await expect(page.locator(".step-name", has_text="Tool: terminal.exec")).to_have_count(1)
        await expect(page.locator("#step-tree .step-name", has_text="scripted")).to_have_count(0)
        await expect(page.locator("#step-tree li.step li.step")).to_have_count(0)  # not nested
        await expect(
            page.locator("#step-tree .step-kind-llm_call .step-meta").first
        ).to_contain_text("1200 in / 30 out tokens")
        await no_sideways_scroll(page)
        await final.locator(".code-block").scroll_into_view_if_needed()
        await shot(page, tmp_path, width, "reply")
        await axe_check(page, "reply and steps")

        # dark mode: the toggle wins over the system's light
        toggle = page.locator("#theme-toggle")
        await expect(toggle).to_have_attribute("aria-pressed", "false")
        await toggle.click()
        await expect(toggle).to_have_attribute("aria-pressed", "true")
        background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert sum(map(int, re.findall(r"\d+", background)[:3])) < 150, background
        await shot(page, tmp_path, width, "dark")
        await axe_check(page, "dark mode")
        await toggle.click()
        await expect(toggle).to_have_attribute("aria-pressed", "false")

        # the session list names the chat by its first message
        session_id = await page.evaluate("sessionStorage.getItem('xclaw.sessionId')")
        item = page.locator(f'.session-item[data-session-id="{session_id}"]')
        await expect(item.locator(".session-title")).to_have_text("Please run the check.")
        if narrow:  # opened from the keyboard, closed with Escape, focus back on the button
            await page.locator("#sidebar-toggle").focus()
            await page.keyboard.press("Enter")
            await expect(page.locator("#sidebar")).to_be_visible()
            await expect(page.locator("#sidebar-toggle")).to_have_attribute("aria-expanded", "true")
            await expect(page.locator("#session-search")).to_be_focused()
            await shot(page, tmp_path, width, "sessions")
            await axe_check(page, "session list open")
            await page.keyboard.press("Escape")
            await expect(page.locator("#sidebar")).to_be_hidden()
            await expect(page.locator("#sidebar-toggle")).to_be_focused()

        # fork from the tool step: the fork is named after the original and the step
        name = page.locator(".step-name", has_text="Tool: terminal.exec")
        step_id = await name.evaluate("n => n.parentElement.dataset.stepId")
        tool_step = f'li.step[data-step-id="{step_id}"]'
        await page.locator(f"{tool_step} > .step-actions > .step-fork").click()
        await page.locator(f"{tool_step} > .step-confirm .confirm-yes").click()
        fork_title = f"Fork of Please run the check. at {step_id}"
        await expect(page.locator("#session-title")).to_have_text(fork_title)
        await expect(page.locator("#steps-result")).to_contain_text("Forked " + session_id)
        forked = await page.evaluate("sessionStorage.getItem('xclaw.sessionId')")
        assert forked != session_id
        fork_item = page.locator(f'.session-item[data-session-id="{forked}"]')
        await expect(fork_item.locator(".session-title")).to_have_text(fork_title)
        await expect(item.locator(".session-title")).to_have_text("Please run the check.")
        if narrow:
            await expect(page.locator("#sidebar")).to_be_hidden()  # closed on choosing

        # rollback in the fork: the tool step and all after it leave
        await page.locator(f"{tool_step} > .step-actions > .step-rollback").click()
        await page.locator(f"{tool_step} > .step-confirm .confirm-yes").click()
        await expect(page.locator("#steps-result")).to_contain_text(f"Rewound to before {step_id}")
        await expect(page.locator(tool_step)).to_have_count(0)
        await expect(page.locator(".tool .tool-status")).to_have_text("no result recorded")
        await no_sideways_scroll(page)
        await shot(page, tmp_path, width, "fork-rolled-back")
        await axe_check(page, "fork after rollback")
        no_troubles(page)
        await context.close()


REGENERATE = [
    {"text": "Answer one.", "usage": {"input_tokens": 10, "output_tokens": 2}},
    {"text": "Answer two.", "usage": {"input_tokens": 10, "output_tokens": 2}},
    {"text": "Answer three."},
]


async def test_regenerate_rewinds_the_last_answer_and_asks_again(
    root: Path, tmp_path: Path
) -> None:
    async with serving(root, REGENERATE) as gw, chromium() as browser:
        context = await browser.new_context(viewport={"width": 390, "height": 800})
        page = await narrow_page(context)
        await log_in(page, gw, TOKEN)
        await expect(page.locator("#conn-status")).to_have_text("connected")
        await expect(page.locator("#regenerate-button")).to_be_disabled()
        await page.locator("#composer-input").fill("Tell me something.")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.final")).to_contain_text("Answer one.")
        await page.locator("#steps summary").click()
        first_steps = await page.locator("#step-tree li.step").evaluate_all(
            "items => items.map((i) => i.dataset.stepId)"
        )
        assert len(first_steps) == 2  # your message, the model call

        regenerate = page.locator("#regenerate-button")
        await expect(regenerate).to_be_enabled()
        await regenerate.focus()
        await page.keyboard.press("Enter")  # from the keyboard
        await expect(page.locator(".msg.final")).to_have_count(1)
        await expect(page.locator(".msg.final")).to_contain_text("Answer")
        await expect(page.locator(".msg-user")).to_have_count(1)  # sent again, shown once
        await expect(page.locator(".msg-user")).to_have_text(re.compile("Tell me something."))
        await expect(page.locator(".msg-assistant")).to_have_count(1)
        await expect(page.locator("#regenerate-button")).to_be_enabled()
        # the old turn's steps are gone; the new turn has new ones
        await page.reload()
        await expect(page.locator("#conn-status")).to_have_text("connected")
        await expect(page.locator(".msg-user")).to_have_count(1)
        await expect(page.locator(".msg-assistant")).to_have_count(1)
        await page.locator("#steps summary").click()
        steps = page.locator("#step-tree li.step")
        await expect(steps).to_have_count(2)
        again = await steps.evaluate_all("items => items.map((i) => i.dataset.stepId)")
        assert not set(again) & set(first_steps), (first_steps, again)
        await shot(page, tmp_path, 390, "regenerated")
        await axe_check(page, "after regenerate")
        no_troubles(page)
        await context.close()


HOSTILE = (
    "Look: <script>window.__pwned = 1</script> and "
    '<img src="x" onerror="window.__pwned = 2"> and '
    "[click me](javascript:window.__pwned=3) and "
    '<a href="javascript:window.__pwned=4">raw link</a> and '
    "[entity](javascript&#58;window.__pwned=5) and "
    "<javascript:window.__pwned=6> and "
    "![tracker](http://127.0.0.1:9/pixel.png) and "
    '<svg onload="window.__pwned = 7"></svg> and '
    '<iframe src="javascript:window.__pwned=8"></iframe> and '
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) and "
    "[docs](https://example.com/docs).\n\n"
    '<div onclick="window.__pwned = 9">block html</div>\n'
)
INERT = [{"text": HOSTILE}]


async def assert_inert(page: Page, requests: list[str]) -> None:
    messages = page.locator("#messages")
    await expect(messages).to_contain_text("<script>window.__pwned = 1</script>")
    await expect(messages).to_contain_text('<div onclick="window.__pwned = 9">block html</div>')
    dangerous = "script, img, svg, iframe, object, embed, form, input, style, [onerror], [onload]"
    await expect(messages.locator(dangerous + ", [onclick]")).to_have_count(0)
    hrefs = await messages.locator("a").evaluate_all(
        "links => links.map((a) => a.getAttribute('href'))"
    )
    assert all(h is None or h.startswith(("https:", "http:", "mailto:")) for h in hrefs), hrefs
    docs = messages.locator('a[href="https://example.com/docs"]')
    await expect(docs).to_have_attribute("rel", "noopener noreferrer nofollow")
    await expect(docs).to_have_attribute("target", "_blank")
    # an image is a link to it, never loaded
    await expect(messages.locator("a", has_text="image: tracker")).to_have_count(1)
    for label in ("click me", "entity"):  # the javascript: links are text without a target
        link = messages.locator("a", has_text=label)
        if await link.count():
            assert await link.get_attribute("href") is None
            await link.click()
    assert await page.evaluate("window.__pwned === undefined")
    assert not [r for r in requests if "127.0.0.1:9" in r], requests


async def test_markup_in_a_model_reply_is_inert(root: Path, tmp_path: Path) -> None:
    async with serving(root, INERT) as gw, chromium() as browser:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await narrow_page(context)
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        await log_in(page, gw, TOKEN)
        await expect(page.locator("#conn-status")).to_have_text("connected")
        await page.locator("#composer-input").fill("Say something dangerous.")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg.final")).to_have_attribute("data-status", "completed")
        await assert_inert(page, requests)  # streamed live, then the final text
        await shot(page, tmp_path, 1280, "inert-live")
        await page.reload()  # drawn again from the stored transcript
        await expect(page.locator(".msg.msg-assistant")).to_have_count(1)
        await assert_inert(page, requests)
        await shot(page, tmp_path, 1280, "inert-reloaded")
        no_troubles(page)
        await context.close()


class _Peer:
    name = "web"

    def __init__(self) -> None:
        self.frames: list[Any] = []

    def send(self, frame: Any) -> None:
        self.frames.append(frame)


def test_a_model_answer_is_relayed_with_its_model_tokens_and_cost() -> None:
    """What the footer shows: the gateway relays each model answer's model, tokens and cost
    (from the preset's prices), without its text (the deltas and the reply carry that)."""
    from types import SimpleNamespace

    from xclaw.core.events import Event
    from xclaw.gateway.gateway import _relay
    from xclaw.gateway.sessions import LiveSession
    from xclaw.models.presets import get_preset
    from xclaw.models.scripted import ScriptedModel

    model = ScriptedModel(["hi"], name="openai:gpt-4o-mini")
    model.preset = get_preset("openai")  # type: ignore[attr-defined]
    model.model = "gpt-4o-mini"  # type: ignore[attr-defined]
    live = LiveSession("s-usage", "web", "test")
    live.agent = SimpleNamespace(model=model)  # type: ignore[assignment]
    peer = _Peer()
    live.subscribe(peer)
    payload = {"text": "secret-ish reply", "input_tokens": 1_000_000, "output_tokens": 500_000}
    _relay(live, Event("model.message_complete", "s-usage", 1, payload))
    [frame] = peer.frames
    assert frame.event["type"] == "model.message_complete"
    usage = frame.event["payload"]
    assert usage["model"] == "openai:gpt-4o-mini"
    assert (usage["input_tokens"], usage["output_tokens"]) == (1_000_000, 500_000)
    assert usage["cost_usd"] == pytest.approx(0.15 + 0.3)
    assert "text" not in usage
