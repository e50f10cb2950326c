"""``browser.content``: the page as distilled HTML, in pages of ``max_chars`` (seed 003 ch. 07).

Scripts, styles, SVG, comments, hidden nodes and nearly every attribute are dropped; text is
kept; every visible interactive element carries ``data-agent-id="N"``, the id the action tools
take. Long pages come in pages: the result ends with the offset to ask for next. Paging reads
one version of the page: later offsets reuse the text of the first page until an action of
ours may have changed it.

Frames: a same-origin iframe is read in place; a cross-origin one through Playwright's frame
API, its reading inside ``<iframe ...>...</iframe>`` where the frame is, its controls numbered
with the frame's id (``data-agent-id="f1:3"``), which the action tools take as they take any id.

Two readings (``mode``): ``full``, the page's text with its controls in place, and
``interactive``, only the controls (one line each, ``[N] tag attrs name``: agent id,
accessible name, value, state; alike neighbours share a line as ``[N,M]``) under the landmark and
nearest heading they sit in, for planning actions on a long page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from xclaw.browser.session import BrowserSession
from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.tools.base import Tool, tool
from xclaw.tools.browser_frames import with_frames
from xclaw.tools.browser_page import content_script, live_page, page_error

DEFAULT_MAX_CHARS = 8_000
_MEMO = "content"
Mode = Literal["full", "interactive"]
MODES: tuple[str, ...] = get_args(Mode)
_JS = {
    "full": "() => window.__xclawContent.distill()",
    "interactive": "() => window.__xclawContent.interactiveOnly()",
}


@dataclass(frozen=True, slots=True)
class Distilled:
    version: int
    url: str
    title: str
    text: str
    mode: str = "full"


def page_slice(text: str, offset: int, max_chars: int) -> tuple[str, int | None]:
    """``text[offset:cut]`` and the next offset (None at the end). The cut falls on a line
    break in the last half of the window when there is one, else before a tag, so a tag is
    never cut in two and an element rarely is."""
    end = offset + max_chars
    if end >= len(text):
        return text[offset:], None
    floor = offset + max_chars // 2
    cut = text.rfind("\n", floor, end)
    if cut > floor:
        return text[offset:cut], cut + 1  # the line break itself is not worth a page
    cut = text.rfind("<", floor, end)
    cut = cut if cut > floor else end
    return text[offset:cut], cut


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ToolError(
            f"Unknown browser.content mode {mode!r}.",
            code="BROWSER_CONTENT_MODE",
            hint='Use mode="full" (the page\'s text and controls) or mode="interactive" '
            "(only the controls, for planning actions).",
        )
    return mode


async def distill(session: BrowserSession, mode: str = "full") -> Distilled:
    page = await live_page(session)
    try:
        text: str = await page.evaluate(_JS[check_mode(mode)])
        text = await with_frames(page, text, mode, content_script())
        title = await page.title()
    except PlaywrightError as err:
        raise page_error(err, "reading the page content") from None
    found = Distilled(session.version, page.url, title, text, mode)
    session.memo[_MEMO] = found
    return found


async def read_content(
    session: BrowserSession, offset: int, max_chars: int, mode: str = "full"
) -> ToolResult:
    check_mode(mode)
    page = await live_page(session)
    kept = session.memo.get(_MEMO)
    fresh = not (
        offset > 0
        and isinstance(kept, Distilled)
        and kept.version == session.version
        and kept.url == page.url
        and kept.mode == mode
    )
    current = await distill(session, mode) if fresh else kept
    assert isinstance(current, Distilled)
    total = len(current.text)
    if offset > total or (offset == total and total > 0):
        raise ToolError(
            f"offset {offset} is past the end of the page content ({total} characters).",
            code="BROWSER_OFFSET_OUT_OF_RANGE",
            hint="Read from offset=0, or from an offset a previous result named.",
            retryable=True,
        )
    chunk, next_offset = page_slice(current.text, offset, max_chars)
    lines = [f"{current.title} — {current.url}"]
    lines.append(f"[characters {offset}-{offset + len(chunk)} of {total}]")
    if fresh and offset > 0:
        lines.append("[the page changed since the last read: this is its new version]")
    lines.append(chunk)
    if next_offset is not None:
        lines.append(
            f"[{total - next_offset} more characters: call browser.content with "
            f"offset={next_offset}" + (f' mode="{mode}"' if mode != "full" else "") + "]"
        )
    return ToolResult.success(
        "\n".join(lines),
        url=current.url,
        title=current.title,
        offset=offset,
        next_offset=next_offset,
        total_chars=total,
        mode=mode,
    )


def content_tool(session: BrowserSession) -> Tool:
    @tool("browser.content", risk=Risk.READ, read_only=True, timeout_s=30, output_cap=64_000)
    async def content(
        offset: Annotated[int, Field(ge=0)] = 0,
        max_chars: Annotated[int, Field(ge=500, le=50_000)] = DEFAULT_MAX_CHARS,
        mode: Mode = "full",
    ) -> ToolResult:
        """Read the current page as compact HTML: text, links, buttons and form fields.
        Every interactive element carries data-agent-id="N"; pass N as agent_id to
        browser.click, browser.type, browser.key and browser.scroll.

        Args:
            offset: where to continue reading; a cut-off result names the next offset
            max_chars: how many characters to return at most
            mode: "full" (default): the page's text with its controls in place;
                "interactive": only the controls, one a line as [N] tag attrs label (N is the
                agent_id), with values and state, under their landmarks and headings (much
                shorter; for planning actions)
        """
        return await read_content(session, offset, max_chars, mode)

    return content
