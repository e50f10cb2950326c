"""Component-library markup of our own (Element-Plus-like and AntD-like selects, switches and
checkboxes), open shadow roots, same-origin and cross-origin iframes, and click overlays."""

from __future__ import annotations

from typing import Any

import pytest
from page_support import OpenFixture

from xclaw.core.errors import ToolError
from xclaw.page import PageDriver

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _js(driver: PageDriver, expression: str) -> Any:
    return await driver.page.evaluate(expression)


async def test_element_plus_like_select_opens_and_picks(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "widgets.html")
    out = await driver.dom("select_option", "#ep-input", label="Shanghai")
    assert (out["value"], out["label"]) == ("sh", "Shanghai")
    assert await _js(driver, "window.epValue") == "sh"
    out = await driver.dom("select_option", "#ep-select", value="bj")
    assert out["label"] == "Beijing"
    with pytest.raises(ToolError) as caught:
        await driver.dom("select_option", "#ep-select", label="Guangzhou")
    assert caught.value.code == "ELEMENT_DISABLED"


async def test_antd_like_select_with_a_detached_dropdown(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "widgets.html")
    out = await driver.dom("select_option", "#ant-select", label="Banana")
    assert (out["value"], out["label"]) == ("Banana", "Banana")
    out = await driver.dom("select_option", "#ant-select", index=2)
    assert out["label"] == "Cherry" and await _js(driver, "window.antValue") == "Cherry"


async def test_switches_and_hidden_checkboxes_use_their_visible_proxy(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "widgets.html")
    out = await driver.dom("check", "#ep-switch-input")  # the hidden native input
    assert out["changed"] and await _js(
        driver, "document.getElementById('ep-switch-input').checked"
    )
    assert "el-switch" in (await driver.dom("get_attr", "#ep-switch", attribute="class"))["value"]
    await driver.dom("uncheck", "#ep-switch")
    assert not await _js(driver, "document.getElementById('ep-switch-input').checked")
    await driver.dom("check", "#ant-switch")
    assert (await driver.dom("get_attr", "#ant-switch", attribute="checked"))["value"] is True
    await driver.dom("click", "#ep-check-input")  # click on a hidden input goes to its label
    assert await _js(driver, "document.getElementById('ep-check-input').checked")
    out = await driver.dom("check", "#ep-check")
    assert out["changed"] is False


async def test_form_item_label_maps_to_its_control(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "widgets.html")
    labels = "document.querySelectorAll('.el-form-item__label')"
    await _js(driver, f"{labels}[1].id = 'title-label'")
    await driver.dom("fill", "#title-label", value="Hello")
    assert await _js(driver, "document.getElementById('ep-title').value") == "Hello"
    await driver.dom("fill", ".el-input", value="Wrapper")  # a wrapper around one input
    assert await _js(driver, "document.getElementById('ep-title').value") == "Wrapper"


async def test_shadow_dom_and_same_origin_iframe_are_snapshotted_and_operable(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "shadow.html")
    await driver.page.wait_for_function("document.getElementById('inner').contentDocument.body")
    snap = await driver.snapshot()
    refs = {r.name: r for r in snap.refs if not r.frame}  # the page's own document
    assert "Shadow text" in snap.text and "Inside the frame" in snap.text
    shadow_btn, frame_btn = refs["Shadow button"], refs["Frame button"]
    assert "/#shadow-root/" in shadow_btn.xpath and "/#document/" in frame_btn.xpath
    # the cross-origin frame is read through Playwright's frame API: its refs carry the frame
    foreign = [r for r in snap.refs if r.frame]
    assert {r.name for r in foreign} >= {"Frame button"} and all(
        r.ref.startswith(f"#{r.frame}:") for r in foreign
    )
    at = snap.text.index('[iframe] "Foreign frame"')
    assert '  [button] "Frame button" #f' in snap.text[at:]
    shadow_input = next(r for r in snap.refs if "/#shadow-root/" in r.xpath and r.role == "textbox")
    await driver.dom("fill", shadow_input.ref, value="in shadow")
    await driver.dom("click", shadow_btn.ref)
    got = await _js(
        driver, "document.getElementById('card').shadowRoot.getElementById('sout').textContent"
    )
    assert got == "shadow clicked in shadow"
    frame_input = next(r for r in snap.refs if "/#document/" in r.xpath and r.role == "textbox")
    await driver.dom("fill", frame_input.ref, value="in frame")
    await driver.dom("click", frame_btn.ref)
    frame_text = (
        "document.getElementById('inner').contentDocument.getElementById('fout').textContent"
    )
    assert await _js(driver, frame_text) == "frame clicked in frame"
    foreign_input = next(r for r in foreign if r.role == "textbox")
    await driver.dom("fill", foreign_input.ref, value="across origins")
    await driver.dom("click", next(r.ref for r in foreign if r.name == "Frame button"))
    other = next(f for f in driver.page.frames if f.name == "" and "localhost" in f.url)
    assert await other.text_content("#fout") == "frame clicked across origins"
    # CSS selectors reach into open shadow roots and same-origin frames too
    assert (await driver.dom("get_text", "#fout"))["text"] == "frame clicked in frame"
    assert (await driver.dom("get_text", "#sout"))["text"] == "shadow clicked in shadow"


async def test_overlay_covering_the_target(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "overlay.html")
    # A button sliding in for 600 ms: the click waits for three still frames, then hits its centre.
    await driver.dom("click", "#mover")
    assert await _js(driver, "window.moverHits") == [0]
    # A band across the middle of the viewport: centring the button puts it under the band, the
    # next scroll strategy (block end) gets it clicked.
    out = await driver.dom("click", "#banded")
    assert out["scrollStrategy"] == 1
    assert await _js(driver, "window.bandedClicked") == 1
    await _js(driver, "document.getElementById('modal').classList.add('on')")
    with pytest.raises(ToolError) as caught:
        await driver.dom("click", "#under", waitMs=300)
    assert caught.value.code == "ELEMENT_COVERED" and "modal" in caught.value.message
    assert await _js(driver, "window.underClicked || 0") == 0
    await driver.dom("click", "#close")
    await driver.dom("click", "#under")
    assert await _js(driver, "window.underClicked") == 1
