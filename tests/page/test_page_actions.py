"""The 15 ``dom`` actions on our own fixture page (``fixtures/actions.html``), in real Chromium:
the event chain, retargeting, fill by input type, keys, selects, checks and the error codes."""

from __future__ import annotations

from typing import Any

import pytest
from page_support import OpenFixture

from xclaw.core.errors import ToolError
from xclaw.page import PageDriver

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _ready(driver: PageDriver, open_fixture: OpenFixture) -> PageDriver:
    await open_fixture(driver, "actions.html")
    return driver


async def _js(driver: PageDriver, expression: str) -> Any:
    return await driver.page.evaluate(expression)


async def _fails(driver: PageDriver, code: str, action: str, selector: str, **args: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await driver.dom(action, selector, **args)
    assert caught.value.code == code, caught.value
    return caught.value.message


async def test_click_fires_the_full_event_chain_at_the_centre(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    out = await driver.dom("click", "#btn")
    assert out["ok"] and "Press me" in out["message"]
    events = await _js(driver, "window.events")
    names = [e.split(":")[0] for e in events]
    assert names == [
        "pointermove",
        "mousemove",
        "pointerdown",
        "mousedown",
        "focus",
        "pointerup",
        "mouseup",
        "click",
    ]
    assert "mousedown:1:0:1" in events and "mouseup:1:0:0" in events  # button / buttons
    assert await _js(driver, "document.getElementById('clicks').textContent") == "1"


async def test_click_coordinates_and_double_click(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    await _js(
        driver,
        """window.offsets = []; document.getElementById('btn').addEventListener('click', e => {
             const q = document.getElementById('btn').getBoundingClientRect();
             window.offsets.push([Math.round(e.clientX - q.left - q.width / 2),
                                  Math.round(e.clientY - q.top - q.height / 2), e.detail]); })""",
    )
    await driver.dom("click", "#btn", clickCount=2)
    assert await _js(driver, "window.offsets") == [[0, 0, 1], [0, 0, 2]]
    assert await _js(driver, "window.dbl") == 1
    await _fails(driver, "INVALID_ARGUMENT", "click", "#btn", clickCount=5)


async def test_click_on_inner_text_retargets_and_labels_follow_their_control(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    await driver.dom("click", "#btn-label")
    assert await _js(driver, "document.getElementById('clicks').textContent") == "1"
    await driver.dom("click", "label[for=r2]")
    assert await _js(driver, "document.getElementById('r2').checked") is True
    out = await driver.dom("fill", "label[for=name]", value="via label")
    assert out["ok"] and await _js(driver, "document.getElementById('name').value") == "via label"


async def test_fill_by_input_type(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await _ready(driver, open_fixture)
    await driver.dom("fill", "#name", value="Ada")
    await driver.dom("fill", "#name", value="Grace")  # fill replaces
    assert await _js(driver, "document.getElementById('name').value") == "Grace"
    assert await _js(driver, "window.nameEvents") == [
        "input:Ada",
        "change:Ada",
        "input:Grace",
        "change:Grace",
    ]
    await driver.dom("fill", "#bio", value="line one\nline two")
    await driver.dom("fill", "#editor", value="new text")
    await driver.dom("fill", "#when", value="2024-02-29")
    await driver.dom("fill", "#colour", value="#ff0000")
    await driver.dom("fill", "#volume", value="30")
    await driver.dom("fill", "#amount", value="42")
    got = await _js(
        driver,
        """['bio','when','colour','volume','amount'].map(i => document.getElementById(i).value)
           .concat([document.getElementById('editor').textContent])""",
    )
    assert got == ["line one\nline two", "2024-02-29", "#ff0000", "30", "42", "new text"]
    await _fails(driver, "INVALID_ARGUMENT", "fill", "#when", value="tomorrow")
    await _fails(driver, "INVALID_ARGUMENT", "fill", "#amount", value="many")


async def test_fill_refusals(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await _ready(driver, open_fixture)
    for target in ("#agree", "#r1", "#upload", "#go"):
        await _fails(driver, "UNSUPPORTED_FILL_TARGET", "fill", target, value="x")
    await _fails(driver, "UNSUPPORTED_FILL_TARGET", "fill", "#plain", value="x")
    # read-only and disabled stay so: each fails once its wait (waitMs) is over
    await _fails(driver, "ELEMENT_NOT_EDITABLE", "fill", "#ro", value="x", waitMs=100)
    await _fails(driver, "ELEMENT_DISABLED", "fill", "#off", value="x", waitMs=100)
    await _fails(driver, "ELEMENT_DISABLED", "click", "#offbtn", waitMs=100)
    await _fails(driver, "ELEMENT_DISABLED", "click", "#ariaoff", waitMs=100)  # an ancestor's
    await _fails(driver, "INVALID_ARGUMENT", "fill", "#name")  # no value


async def test_type_appends_key_by_key_and_clear_empties(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    await driver.dom("fill", "#keys", value="ab")
    await _js(driver, "window.keyLog = []")
    await driver.dom("type", "#keys", value="cd")
    assert await _js(driver, "document.getElementById('keys').value") == "abcd"
    assert await _js(driver, "window.keyLog") == [
        "keydown:c",
        "keypress:c",
        "keyup:c",
        "keydown:d",
        "keypress:d",
        "keyup:d",
    ]
    await driver.dom("clear", "#keys")
    assert await _js(driver, "document.getElementById('keys').value") == ""


async def test_press_combos_and_enter_submits(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    await driver.dom("fill", "#keys", value="hello")
    await _js(driver, "window.keyLog = []")
    await driver.dom("press", "#keys", key="Control+a")
    assert await _js(driver, "window.keyLog") == [
        "keydown:Control+ctrl",
        "keydown:a+ctrl",
        "keyup:a+ctrl",
        "keyup:Control",
    ]
    sel = "(k => [k.selectionStart, k.selectionEnd])(document.getElementById('keys'))"
    assert await _js(driver, sel) == [0, 5]
    await driver.dom("press", "#keys", key="Backspace")
    assert await _js(driver, "document.getElementById('keys').value") == ""
    await driver.dom("fill", "#bio", value="a")
    await driver.dom("press", "#bio", key="Shift+Enter")
    assert await _js(driver, "document.getElementById('bio').value") == "a\n"
    await driver.dom("fill", "#q", value="kittens")
    await driver.dom("press", "#q", key="Enter")
    assert await _js(driver, "document.getElementById('submitted').textContent") == (
        "submitted: kittens"
    )
    await _fails(driver, "INVALID_ARGUMENT", "press", "#q", key="Hyper+Q")


async def test_select_option_by_value_label_index(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await _ready(driver, open_fixture)
    out = await driver.dom("select_option", "#color", value="g")
    assert (out["value"], out["label"], out["matchedBy"]) == ("g", "Green", "value")
    assert await _js(driver, "window.colorChanged") == "g"
    out = await driver.dom("select_option", "#color", label="Yellow")
    assert (out["value"], out["matchedBy"]) == ("y", "label")
    out = await driver.dom("select_option", "#color", value="Red")  # a label given as value
    assert out["value"] == "r"
    out = await driver.dom("select_option", "#color-label", label="Red")  # through its label
    assert out["value"] == "r"
    out = await driver.dom("select_option", "#color", index=1)
    assert (out["value"], out["matchedBy"]) == ("g", "index")
    await _fails(driver, "ELEMENT_DISABLED", "select_option", "#color", value="b", waitMs=100)
    message = await _fails(
        driver, "INVALID_ARGUMENT", "select_option", "#color", value="zz", waitMs=0
    )
    assert '"Green"' in message


async def test_check_uncheck_and_radio(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await _ready(driver, open_fixture)
    out = await driver.dom("check", "#agree")
    assert out["changed"] and await _js(driver, "document.getElementById('agree').checked")
    out = await driver.dom("check", "#agree")
    assert out["changed"] is False
    await driver.dom("uncheck", "#agree")
    assert await _js(driver, "document.getElementById('agree').checked") is False
    await driver.dom("check", "#r1")
    await _fails(driver, "INVALID_ARGUMENT", "uncheck", "#r1")
    await _fails(driver, "INVALID_ARGUMENT", "check", "#plain")


async def test_focus_hover_and_attributes(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await _ready(driver, open_fixture)
    out = await driver.dom("focus", "#name")
    assert out["focused"] and await _js(driver, "document.activeElement.id") == "name"
    await driver.dom("hover", "#hoverme")
    assert await _js(driver, "getComputedStyle(document.getElementById('hovertip')).display") == (
        "block"
    )
    assert (await driver.dom("get_text", "#box"))["text"] == "Box"
    assert (await driver.dom("get_attr", "#box", attribute="data-x"))["value"] == "1"
    await driver.dom("set_attr", "#box", attribute="data-x", value="2")
    assert (await driver.dom("get_attr", "#box", attribute="data-x"))["value"] == "2"
    await driver.dom("add_class", "#box", value="b c")
    await driver.dom("remove_class", "#box", className="a")
    assert await _js(driver, "document.getElementById('box').className") == "b c"
    await _js(driver, "document.getElementById('agree').checked = true")
    await _js(driver, "document.getElementById('name').value = 'runtime'")
    assert (await driver.dom("get_attr", "#agree", attribute="checked"))["value"] is True
    assert (await driver.dom("get_attr", "#name", attribute="value"))["value"] == "runtime"
    assert (await driver.dom("get_attr", "#off", attribute="disabled"))["value"] is True
    assert (await driver.dom("get_attr", "#ro", attribute="readonly"))["value"] is True
    assert (await driver.dom("get_attr", "#color option", attribute="selected"))["value"] is True
    assert (await driver.dom("get_attr", "#box", attribute="missing"))["value"] is None


async def test_not_found_invalid_and_force(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await _ready(driver, open_fixture)
    await _fails(driver, "ELEMENT_NOT_FOUND", "click", "#nothing-here", waitMs=100)
    await _fails(driver, "ELEMENT_NOT_FOUND", "click", "#zzzzz", waitMs=0)
    await _fails(driver, "INVALID_ARGUMENT", "click", "button[", waitMs=0)
    await _fails(driver, "INVALID_ARGUMENT", "explode", "#btn")
    await _fails(driver, "ELEMENT_NOT_VISIBLE", "click", "#hovertip", waitMs=200)
    out = await driver.dom("click", "#offbtn", force=True)  # force skips the checks
    assert out["ok"]
    await _js(
        driver,
        """(() => { const b = document.getElementById('hoverme');
             b.style.transition = 'transform 2s linear'; b.style.transform = 'translateX(80px)';
             setTimeout(() => b.remove(), 150); })()""",
    )
    await _fails(driver, "ELEMENT_DETACHED", "click", "#hoverme")  # gone while it still moved


LATER = """<!doctype html><body>
<button id="b" disabled onclick="this.textContent='clicked'">Later</button>
<input id="t" readonly>
<button id="h" style="display:none" onclick="this.textContent='shown and clicked'">Hidden</button>
<div aria-disabled="true" id="wrap">
  <button id="inner" onclick="this.textContent='ok'">Inner</button></div>
<script>
  setTimeout(() => { document.getElementById('b').disabled = false; }, 400);
  setTimeout(() => { document.getElementById('t').readOnly = false; }, 400);
  setTimeout(() => { document.getElementById('h').style.display = ''; }, 400);
  setTimeout(() => { document.getElementById('wrap').removeAttribute('aria-disabled'); }, 400);
</script></body>"""


@pytest.mark.parametrize(
    ("action", "selector", "args", "early", "want"),
    [
        ("click", "#b", {}, "ELEMENT_DISABLED", "clicked"),
        ("fill", "#t", {"value": "typed"}, "ELEMENT_NOT_EDITABLE", "typed"),
        ("click", "#h", {}, "ELEMENT_NOT_VISIBLE", "shown and clicked"),
        ("click", "#inner", {}, "ELEMENT_DISABLED", "ok"),  # an aria-disabled ancestor
    ],
)
async def test_actions_wait_until_the_target_is_actionable(
    driver: PageDriver, action: str, selector: str, args: dict[str, Any], early: str, want: str
) -> None:
    """Playwright-style auto-waiting: a disabled, read-only or hidden target is waited for
    (visible, enabled, editable) within the action's waitMs, then acted on; a wait shorter
    than the page needs fails with what was still missing."""
    await driver.page.set_content(LATER)
    await _fails(driver, early, action, selector, waitMs=50, **args)
    out = await driver.dom(action, selector, waitMs=3000, **args)
    assert out["ok"] and out["elapsedMs"] >= 200, out
    value = await _js(
        driver, f"(el => el.value || el.textContent)(document.querySelector('{selector}'))"
    )
    assert value == want


async def test_wait_for_enabled_disabled_and_checked(driver: PageDriver) -> None:
    await driver.page.set_content(
        """<button id="b" disabled>Go</button><input type="checkbox" id="c">
        <label for="c" id="l">Agree</label><script>
        setTimeout(() => { b.disabled = false; c.checked = true; }, 300);</script>"""
    )
    assert (await driver.wait("wait_for_selector", selector="#b", state="disabled"))["ok"]
    out = await driver.wait("wait_for_selector", selector="#b", state="enabled", timeout=3000)
    assert out["state"] == "enabled" and out["elapsedMs"] >= 100
    await driver.wait("wait_for_selector", selector="#l", state="checked", timeout=3000)
    with pytest.raises(ToolError) as caught:
        await driver.wait("wait_for_selector", selector="#b", state="disabled", timeout=150)
    assert caught.value.code == "WAIT_TIMEOUT"
    with pytest.raises(ToolError) as caught:
        await driver.wait("wait_for_selector", selector="#c", state="unchecked", timeout=150)
    assert caught.value.code == "WAIT_TIMEOUT"
