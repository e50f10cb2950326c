"""The snapshot generator (seed 002 §5.3) on our fixture pages: skip lists, visibility, layout
pruning with collapsed-group blocks, budgets and their notes, viewport clipping, runtime state,
and refs that are FNV-1a(URL + XPath) in base36, stable across snapshots and re-renders."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from page_support import OpenFixture

from xclaw.page import FIRST_ROUND, MANUAL, PageDriver, SnapshotOptions

pytestmark = pytest.mark.asyncio(loop_scope="module")
REF = re.compile(r"#[0-9a-z]+(?:_\d+)?$")


def ref_of(text: str) -> str:
    h = 0x811C9DC5
    for ch in text:  # ASCII here, so characters are the UTF-16 code units JS hashes
        h = ((h ^ ord(ch)) * 0x01000193) & 0xFFFFFFFF
    h %= 36**5  # five base36 digits at most
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if h == 0:
            return out


def line_of(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


async def test_skips_hidden_and_meaningless_nodes_and_shows_runtime_state(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "structure.html")
    text = (await driver.snapshot()).text
    for absent in ("svg text", "No script", "In template", "ignored", "unused"):
        assert absent not in text
    assert "Hidden by display" not in text and "Hidden by visibility" not in text
    # Transparent, or clipped by an empty box: the control is listed (it is in the page and
    # Playwright counts it visible) but marked, its surroundings are not.
    assert re.search(r'\[button\] "Hidden by opacity" hidden #', text)
    assert re.search(r'\[button\] "Zero size" hidden #', text)
    assert "checked" in line_of(text, "type=checkbox")
    assert 'val="typed value"' in text  # the property, not the value attribute
    assert "disabled" in line_of(text, 'val="d"')
    assert "readonly" in line_of(text, 'val="r"')
    assert "secret123" not in text and 'type=password val="•••"' in text
    assert 'val="Beta"' in line_of(text, "[select]")
    assert "selected" in line_of(text, '[option] "Beta"')
    assert "selected" not in line_of(text, '[option] "Alpha"')
    assert '\n"Intro text with bold words."\n' in text  # inline text merges into its parent
    # a form whose fields are named id and type (form.id is then a field, not a string)
    form = text.splitlines().index("[form]")
    assert 'placeholder="Field named id"' in text.splitlines()[form + 1]


async def test_layout_pruning_and_collapsed_groups(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "structure.html")
    lines = (await driver.snapshot()).text.splitlines()
    save = next(i for i, line in enumerate(lines) if '"Save"' in line)
    assert lines[save - 1] == "collapsed-group {"
    assert lines[save].startswith("  [button]") and lines[save + 1].startswith("  [input]")
    assert lines[save + 2] == "}"
    assert '"Status | Active"' in lines  # text in layout elements prints as the text
    full = (await driver.snapshot(replace(FIRST_ROUND, prune_layout=False))).text
    assert "collapsed-group" not in full
    assert re.search(r"^\[div\]\n  \[div\]\n    \[div\]\n      \[button\] \"Save\"", full, re.M)


async def test_budgets_leave_notes(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "structure.html")
    snap = await driver.snapshot()
    # 60 rows, maxChildren 30: rows 31-60 keep their buttons (never cut) but not their text
    assert "  ... (30 more shown by their controls only)" in snap.text
    assert '"Row 30' in snap.text and '"Row 31' not in snap.text
    assert '"Edit 30"' in snap.text and '"Edit 31"' in snap.text and '"Edit 60"' in snap.text
    # the button 13 levels down is hoisted (past maxDepth only controls are kept)
    assert '[button] "Deep button"' in snap.text and not snap.stats.truncated
    assert "Level 9" not in snap.text and "Level 12" not in snap.text
    deep = await driver.snapshot(SnapshotOptions(max_depth=30))
    assert "Deep button" in deep.text and "Level 12" in deep.text
    # the node budget cuts text and structure, never a control
    small = await driver.snapshot(SnapshotOptions(max_nodes=12))
    assert small.stats.truncated and small.stats.interactive == snap.stats.interactive
    assert {r.ref for r in small.refs} == {r.ref for r in snap.refs}
    assert small.stats.nodes < snap.stats.nodes
    assert small.text.endswith(f"... (truncated, {small.stats.nodes} nodes emitted)")
    assert "Button after text" in small.text and "Intro text" not in small.text
    # with an item budget too small for the controls, text children are cut with a note
    tiny = await driver.snapshot(SnapshotOptions(max_children=2))
    assert re.search(r"\.\.\. \(\d+ children omitted", tiny.text)
    assert {r.ref for r in tiny.refs} == {r.ref for r in snap.refs}
    short = await driver.snapshot(SnapshotOptions(max_text_length=5))
    assert '\n"Intro…"\n' in short.text


async def test_viewport_clipping(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "structure.html")
    seen = (await driver.snapshot(MANUAL)).text
    assert '"Save"' in seen and "Far below" not in seen
    top = await driver.page.evaluate("farbtn.getBoundingClientRect().top - innerHeight")
    below = replace(MANUAL, viewport_margin=int(top) + 10)  # the viewport and a band under it
    assert "Far below" in (await driver.snapshot(below)).text
    short = replace(MANUAL, viewport_margin=max(0, int(top) - 40))
    assert "Far below" not in (await driver.snapshot(short)).text
    await driver.navigate("scroll", selector="#farbtn")
    seen = (await driver.snapshot(MANUAL)).text
    assert "Far below" in seen and '"Save"' not in seen
    assert "Far below" in (await driver.page_info("snapshot", viewportOnly=True))


async def test_refs_are_hashes_of_url_and_xpath_and_stay_stable(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "structure.html")
    first = await driver.snapshot()
    second = await driver.snapshot()
    assert [r.ref for r in first.refs] == [r.ref for r in second.refs]
    assert first.stats.interactive == len(first.refs) > 40
    save = next(r for r in first.refs if r.name == "Save")
    assert REF.match(save.ref) and save.role == "button"
    assert save.xpath == "/html/body/div[1]/div[1]/div[1]/button[1]"
    url = driver.page.url.split("#")[0]
    assert save.ref == "#" + ref_of(url + save.xpath)
    assert f"{save.ref}" in line_of(first.text, '"Save"')
    assert len({r.ref for r in first.refs}) == len(first.refs)
    resolved = await driver.page.evaluate(
        "(xp) => window.__xclawPage.resolveXPath(xp).id", save.xpath
    )
    assert resolved == "save"


async def test_a_re_rendered_element_keeps_its_ref(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    await open_fixture(driver, "delayed.html")
    item = next(r for r in (await driver.snapshot()).refs if r.name == "Item one")
    await driver.page.evaluate("window.rerender()")
    await driver.dom("click", item.ref)  # the old element is gone; its XPath finds the new one
    assert await driver.page.evaluate("window.itemClicks") == 1
    again = next(r for r in (await driver.snapshot()).refs if r.name == "Item one")
    assert again.ref == item.ref


async def test_colliding_hashes_get_a_suffix(driver: PageDriver, open_fixture: OpenFixture) -> None:
    await open_fixture(driver, "structure.html")
    got = await driver.page.evaluate(
        """() => { const s = new window.__xclawPage.RefStore(() => 'abc');
             const a = document.getElementById('save'), b = document.getElementById('after');
             const refs = [s.assign(a, '/p/1'), s.assign(b, '/p/2'), s.assign(a, '/p/1')];
             return refs.concat([s.lookup('abc_2').id]); }"""
    )
    assert got == ["abc", "abc_2", "abc", "after"]


async def test_controls_count_by_what_they_show(
    driver: PageDriver, open_fixture: OpenFixture
) -> None:
    """A control without a box of its own is shown when a descendant has one and it does not
    clip it; onclick and focusable elements are listed, nested in one another too."""
    await open_fixture(driver, "shown.html")
    snap = await driver.snapshot()
    text = snap.text
    sizes = await driver.page.evaluate(
        "['floated', 'pixel'].map(id => document.getElementById(id).getBoundingClientRect())"
        ".map(r => r.width * r.height)"
    )
    assert sizes == [0, 0]  # both links are empty boxes; their images are not
    # three links with nothing under them share a row
    assert re.search(r'\[a\] "Floated logo" #\w+ · "Pixel logo" #\w+ · "Contents link" #', text)
    assert "Clipped away" not in text  # a zero box that clips: nothing of it shows
    assert re.search(r'\[ul\] "Metadata" #\w+\n  \[li\] "Author: Ada" #', text), text
    assert re.search(r'\[div\] "Inner link" #\w+\n  \[a\] "Inner link" #', text), text
    # a pointer cursor alone around a link adds no control of its own
    assert sum("Pointer wrapped" in line for line in text.splitlines()) == 1
    names = {r.name for r in snap.refs}
    assert {"Floated logo", "Pixel logo", "Contents link", "Author: Ada"} <= names
    floated = next(r for r in snap.refs if r.name == "Floated logo")
    out = await driver.dom("click", floated.ref)  # clicked at its image's centre
    assert out["ok"] and out.get("navigated") and out["url"].endswith("/nav1.html")
