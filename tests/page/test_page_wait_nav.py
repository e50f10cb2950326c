"""Delayed rendering, the ``wait`` actions, navigation, ``evaluate`` (also under a strict CSP),
``page_info``, and the five tools as the loop sees them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from page_server import PageServer
from page_support import OpenFixture

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.page import DOM_CHANGING_ACTIONS, PageDriver, page_tools
from xclaw.tools.base import Tool, ToolContext, Workspace

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _code(awaitable: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await awaitable
    return caught.value.code


async def test_actions_wait_for_a_late_element(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "delayed.html")
    assert await _code(driver.dom("click", "#late", waitMs=50)) == "ELEMENT_NOT_FOUND"
    out = await driver.dom("click", "#late", waitSeconds=2)  # it appears after 500 ms
    assert out["ok"]
    await driver.wait("wait_for_selector", selector="#done", state="visible", timeout=2000)
    assert (await driver.dom("get_text", "#done"))["text"] == "late clicked"


async def test_wait_actions(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "delayed.html")
    started = time.monotonic()
    out = await driver.wait("wait_for_selector", selector="#later", state="visible")
    assert out["ok"] and out["elapsedMs"] >= 0
    await driver.wait("wait_for_hidden", selector="#gone")
    await driver.wait("wait_for_selector", selector="#gone", state="detached")
    await driver.wait("wait_for_selector", selector="#late")  # attached
    await driver.wait("wait_for_text", text="Finally loaded")
    out = await driver.wait("wait_for_stable", quietMs=200)
    assert out["elapsedMs"] >= 200
    assert time.monotonic() - started < 5
    code = await _code(driver.wait("wait_for_selector", selector="#never", timeout=200))
    assert code == "WAIT_TIMEOUT"
    code = await _code(driver.wait("wait_for_selector", selector="#late", state="gone"))
    assert code == "INVALID_ARGUMENT"
    assert await _code(driver.wait("wait_for_text", text="never there", timeout=150)) == (
        "WAIT_TIMEOUT"
    )


async def test_navigation_goto_click_back_forward_reload(
    driver: PageDriver, page_server: PageServer
) -> None:
    out = await driver.navigate("goto", url=page_server.url("nav1.html"))
    assert out["title"] == "Page one" and out["status"] == 200
    assert "loads 1" in (await driver.snapshot()).text
    out = await driver.dom("click", "#next")
    assert out["navigated"] and out["url"].endswith("nav2.html")
    assert "Page two" in (await driver.snapshot()).text  # the library is in the new document
    assert (await driver.navigate("back"))["url"].endswith("nav1.html")
    assert (await driver.navigate("forward"))["url"].endswith("nav2.html")
    await driver.navigate("back")
    loads = int((await driver.dom("get_text", "#loads"))["text"].split()[1])
    out = await driver.navigate("reload")
    assert out["navigated"] and f"loads {loads + 1}" in (await driver.snapshot()).text
    assert await _code(driver.navigate("goto")) == "INVALID_ARGUMENT"
    assert await _code(driver.navigate("teleport")) == "INVALID_ARGUMENT"
    bad = "http://127.0.0.1:9/nothing"
    assert await _code(driver.navigate("goto", url=bad)) == "NAVIGATION_FAILED"
    assert {
        "click",
        "press",
        "select_option",
        "check",
        "uncheck",
        "goto",
        "back",
        "forward",
        "reload",
    } <= DOM_CHANGING_ACTIONS
    assert "get_text" not in DOM_CHANGING_ACTIONS and "fill" not in DOM_CHANGING_ACTIONS


async def test_enter_in_a_form_navigates(driver: PageDriver, page_server: PageServer) -> None:
    await driver.navigate("goto", url=page_server.url("nav2.html"))
    await driver.dom("fill", "#q2", value="abc")
    out = await driver.dom("press", "#q2", key="Enter")  # one field, no button: submits
    assert out.get("navigated") and "nav1.html?q=abc" in out["url"]


async def test_evaluate_expressions_statements_elements_and_errors(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "delayed.html")
    assert await driver.evaluate("document.title") == '"Delayed"'
    assert await driver.evaluate("document.title;") == '"Delayed"'
    assert await driver.evaluate("const a = 2; return a * 3") == "6"
    assert await driver.evaluate("document.querySelector('h1')") == '<h1> "Delayed rendering"'
    listed = await driver.evaluate("document.querySelectorAll('#list button, #gone')")
    assert listed.splitlines()[0] in ("[1 item]", "[2 items]")
    assert '<button> "Item one"' in listed
    assert await driver.evaluate("({a: [1, 'x'], b: null})") == '{"a":[1,"x"],"b":null}'
    assert await driver.evaluate("undefined") == "undefined"
    assert await driver.evaluate("await new Promise(r => setTimeout(() => r(7), 10))") == "7"
    with pytest.raises(ToolError) as caught:
        await driver.evaluate("null.boom")
    assert caught.value.code == "EVALUATE_FAILED" and "TypeError" in caught.value.message


async def test_evaluate_under_a_strict_csp_falls_back_to_playwright(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "csp.html")
    # Called from the page's own task (as a content script would be), new Function is refused.
    blocked = await driver.page.evaluate(
        "() => new Promise(r => setTimeout(() => r(window.__xclawPage.evaluate('1 + 1'))))"
    )
    assert blocked["code"] == "EVALUATE_BLOCKED"
    assert await driver.evaluate("document.getElementById('h')") == '<h1#h> "Strict page"'
    assert "Strict page" in (await driver.snapshot()).text  # the library itself still runs
    # Wherever the library reports the block, the driver answers through Playwright instead.
    await driver.page.evaluate(
        "() => { window.__xclawPage.evaluate = async () => "
        "({ok: false, code: 'EVALUATE_BLOCKED'}); }"
    )
    assert await driver.evaluate("document.getElementById('b')") == '<button#b> "Button"'
    assert await driver.evaluate("[1, 2].map(x => x * 2)") == "[2,4]"


async def test_page_info_and_scroll(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "structure.html")
    assert str(await driver.page_info("get_url")).endswith("/structure.html")
    assert await driver.page_info("get_title") == "Structure"
    viewport = await driver.page_info("get_viewport")
    assert isinstance(viewport, dict) and viewport["width"] == 1000 and viewport["scrollY"] == 0
    await driver.page.evaluate("document.getElementById('title').value = 'abcdef'")
    await driver.page.evaluate("document.getElementById('title').focus()")
    await driver.page.evaluate("document.getElementById('title').setSelectionRange(1, 4)")
    assert await driver.page_info("get_selection") == "bcd"
    found = str(await driver.page_info("query_all", selector="#long button"))
    lines = found.splitlines()
    assert len(lines) == 51 and lines[-1].startswith("… (more than 50")
    first_ref = lines[0].split()[0]
    assert (await driver.dom("get_text", first_ref))["text"] == "Edit 1"
    out = await driver.navigate("scroll", y=500)
    assert out["scrollY"] == 500
    out = await driver.navigate("scroll", selector="#farbtn")
    assert out["scrollY"] > 2500
    assert await _code(driver.navigate("scroll")) == "INVALID_ARGUMENT"
    assert await _code(driver.page_info("query_all", selector="((")) == "INVALID_ARGUMENT"


async def _run(tool: Tool, out: Path | None = None, **args: Any) -> ToolResult:
    validated = tool.args_model.model_validate(args)
    if tool.wants_context:  # page_info: a screenshot goes to the run's output folder (out)
        ctx = ToolContext(Workspace(Path.cwd(), output_dir=out), lambda *_: None)
        result = tool.fn(ctx, **validated.model_dump())
    else:
        result = tool.fn(**validated.model_dump())
    assert not isinstance(result, ToolResult)
    return await result


async def test_the_five_tools(
    driver: PageDriver, open_fixture: OpenFixture, tmp_path: Path
) -> None:
    await open_fixture(driver, "actions.html")
    tools = {t.name: t for t in page_tools(driver)}
    assert list(tools) == ["dom", "navigate", "page_info", "wait", "evaluate"]
    assert tools["dom"].risk is Risk.WRITE and not tools["dom"].read_only
    assert tools["evaluate"].risk is Risk.EXECUTE
    assert tools["page_info"].read_only and tools["wait"].risk is Risk.READ
    assert not tools["wait"].read_only  # what follows a wait in a batch runs after it
    props = tools["dom"].spec.parameters["properties"]
    assert set(props) == {
        "action",
        "selector",
        "value",
        "key",
        "label",
        "index",
        "attribute",
        "className",
        "clickCount",
        "waitMs",
        "waitSeconds",
        "force",
    }
    done = await _run(tools["dom"], action="fill", selector="#name", value="Ada")
    assert done.ok and done.data["action"] == "fill" and done.data["selector"] == "#name"
    done = await _run(tools["dom"], action="click", selector="#btn")
    assert done.data["dom_changing"] is True
    with pytest.raises(ToolError) as caught:
        await _run(tools["dom"], action="click", selector="#missing", waitMs=0)
    assert caught.value.code == "ELEMENT_NOT_FOUND" and caught.value.retryable
    snap = await _run(tools["page_info"], action="snapshot")
    assert "Press me" in snap.message
    shot = await _run(tools["page_info"], tmp_path, action="screenshot")
    (image,) = shot.images  # the picture for a model that sees; the path for every model
    assert image.data.startswith(b"\x89PNG") and shot.data["path"] in shot.message
    assert Path(shot.data["path"]).parent == tmp_path / "screenshots"
    assert (await _run(tools["evaluate"], expression="1 + 2")).message == "3"
    waited = await _run(tools["wait"], action="wait_for_text", text="Actions fixture")
    assert waited.ok
    moved = await _run(tools["navigate"], action="scroll", y=100)
    assert moved.ok and moved.data["action"] == "scroll" and "scrollY" in moved.data
