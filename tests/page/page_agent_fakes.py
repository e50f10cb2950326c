"""A tiny in-memory page with dom/navigate/page_info tools of the same names and shapes as the
real ones, so the WebAgent's loop logic is tested in milliseconds. The real thing (Chromium,
the in-page library) is tested in test_agent_e2e.py."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xclaw.core.errors import ToolError
from xclaw.core.messages import Message, ToolResult
from xclaw.core.tooling import Risk
from xclaw.page.recovery import PageLoopSettings
from xclaw.tools.base import Tool, tool

FAST = PageLoopSettings(recovery_wait_ms=0, not_found_retry_wait_ms=0)


@dataclass(frozen=True)
class FakeRef:
    ref: str


@dataclass(frozen=True)
class FakeSnapshot:
    text: str
    url: str
    refs: list[FakeRef]


@dataclass
class FakePage:
    url: str = "http://app.test/home"
    elements: dict[str, str] = field(default_factory=dict)  # ref -> "[role] name"
    values: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)


class FakeDriver:
    def __init__(self, **elements: str) -> None:
        self.page = FakePage(elements={f"#{k}": v for k, v in elements.items()})
        self.snapshots = 0

    async def snapshot(self, options: Any = None) -> FakeSnapshot:
        self.snapshots += 1
        lines = [f"{label} {ref}" for ref, label in self.page.elements.items()]
        refs = [FakeRef(r) for r in self.page.elements]
        return FakeSnapshot("\n".join(lines) or "(empty page)", self.page.url, refs)

    def tools(self) -> list[Tool]:
        page = self.page

        @tool("dom", risk=Risk.WRITE)
        def dom(action: str, selector: str, value: str | None = None) -> ToolResult:
            """Act on an element.

            Args:
                action: click, fill, get_text
                selector: a hash ref
                value: text for fill
            """
            if selector not in page.elements:
                raise ToolError(f"no element {selector}", code="ELEMENT_NOT_FOUND")
            page.log.append(f"{action} {selector}" + (f" {value}" if value is not None else ""))
            if action == "fill":
                page.values[selector] = value or ""
            if action == "get_text":
                return ToolResult.success(page.elements[selector], action=action)
            return ToolResult.success(f"{action} done", action=action, selector=selector)

        @tool("navigate", risk=Risk.WRITE)
        def navigate(action: str, url: str | None = None) -> ToolResult:
            """Navigate.

            Args:
                action: goto
                url: where
            """
            page.log.append(f"{action} {url}")
            page.url = url or page.url
            return ToolResult.success(f"at {page.url}", action=action, url=page.url)

        @tool("page_info")
        def page_info(action: str) -> ToolResult:
            """Page facts.

            Args:
                action: get_url, get_title, snapshot
            """
            page.log.append(f"page_info {action}")
            return ToolResult.success(page.url, action=action)

        return [dom, navigate, page_info]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def click(ref: str) -> dict[str, Any]:
    return call("dom", action="click", selector=ref)


def fill(ref: str, value: str) -> dict[str, Any]:
    return call("dom", action="fill", selector=ref, value=value)


_SNAPSHOT = re.compile(r"SNAPSHOT_START.*?SNAPSHOT_END", re.DOTALL)


def round_text(messages: Sequence[Message]) -> str:
    """The round message of a request (its last message)."""
    return messages[-1].text


def snapshot_in(messages: Sequence[Message]) -> str:
    found = _SNAPSHOT.findall(round_text(messages))
    assert len(found) == 1, "each request carries exactly one snapshot"
    return str(found[0])


_REF_AFTER = r"[^\n]*?\s(#(?:f\d+:)?[0-9a-z]+(?:_\d+)?)(?=\s|$)"


def line_with(messages: Sequence[Message], label: str) -> str | None:
    """The snapshot line (of this request's round message) naming ``label``, or None."""
    for line in snapshot_in(messages).splitlines():
        if f'"{label}"' in line:
            return line
    return None


def ref_by_label(messages: Sequence[Message], label: str) -> str:
    """The ref of the element named ``label`` in the round message's snapshot, as a model
    would pick it: the first ``#ref`` after ``"label"`` on its line (a shared link row holds
    several). Fails when the snapshot shows no such control."""
    match = re.search(re.escape(f'"{label}"') + _REF_AFTER, snapshot_in(messages))
    assert match, f"no control named {label!r} in the snapshot:\n{snapshot_in(messages)}"
    return match.group(1)


def ref_on_line(messages: Sequence[Message], *needles: str) -> str:
    """The first ref on the first snapshot line holding every one of ``needles`` (a card
    named by its text, e.g. ``ref_on_line(messages, "Pro", "$20")``)."""
    for line in snapshot_in(messages).splitlines():
        if all(n in line for n in needles):
            match = re.search(_REF_AFTER, " " + line)
            if match:
                return match.group(1)
    raise AssertionError(f"no line with {needles!r} and a ref:\n{snapshot_in(messages)}")
