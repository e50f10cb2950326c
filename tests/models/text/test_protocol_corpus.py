"""The reply corpus: every file in corpus/ parses to the outcome expected.json lists for it.

Valid replies must also pass the real tool registry's validation, so the parser's conversions
produce values the tools accept. The 1 MB replies are generated here, not committed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.tooling import PreparedCall, ToolSpec
from xclaw.models.text.protocol import ParsedTurn, ProtocolError, parse_reply, render_reply
from xclaw.tools.base import Workspace

CORPUS = Path(__file__).parent / "corpus"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text("utf-8"))
SPECS: list[ToolSpec] = [t.spec for t in coding_registry()]


def _read(name: str) -> str:
    # Bytes, not read_text(): universal newlines would turn CRLF into LF.
    text = (CORPUS / name).read_bytes().decode("utf-8")
    if EXPECTED[name].get("crlf"):
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


def test_every_file_has_an_expectation_and_the_corpus_is_broad() -> None:
    files = {p.name for p in CORPUS.glob("*.xml")}
    assert files == set(EXPECTED)
    assert len(files) >= 80
    outcomes = {e["outcome"] for e in EXPECTED.values()}
    assert {"valid", "PROTOCOL_UNSAFE_XML", "PROTOCOL_MALFORMED_XML", "TOOL_NOT_FOUND"} <= outcomes


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_reply(name: str, tmp_path: Path) -> None:
    expect = EXPECTED[name]
    text = _read(name)
    result = parse_reply(text, SPECS)
    if expect["outcome"] != "valid":
        assert isinstance(result, ProtocolError), result
        assert result.code == expect["outcome"], result
        assert result.message and result.feedback
        if "line" in expect:
            assert result.line == expect["line"], result
        if "mentions" in expect:
            assert expect["mentions"] in result.message, result.message
        return
    assert isinstance(result, ParsedTurn), result
    if "done" in expect:
        assert result.done is expect["done"]
    if "message" in expect:
        assert result.message == expect["message"]
    if "ignored_text" in expect:
        assert result.ignored_text == expect["ignored_text"]
    # A reply that lost only its last closing tags (a model that emits them as special
    # tokens stops there) is read as it was meant; nothing else is ever closed for it.
    assert list(result.closed_tags) == expect.get("closed", [])
    if "tool" in expect:
        call = result.tool_call
        assert (call.name if call else None) == expect["tool"]
    if "arguments" in expect:
        assert result.tool_call is not None
        assert result.tool_call.arguments == expect["arguments"]
    if result.tool_call is not None:
        toolbox = coding_registry().bind(Workspace(tmp_path))
        prepared = toolbox.prepare(result.tool_call)
        assert isinstance(prepared, PreparedCall), prepared


def test_the_crlf_reply_really_has_crlf() -> None:
    assert "\r\n" in _read("valid_crlf.xml")


def _best_of_three(text: str) -> tuple[float, ParsedTurn | ProtocolError]:
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        result = parse_reply(text, SPECS)
        timings.append(time.perf_counter() - start)
    return min(timings), result


def test_one_megabyte_of_cdata_parses_fast() -> None:
    content = "line with <tags> & ]]> markers, 中文\n" * 28_000
    args = {"path": "big.txt", "content": content}
    text = render_reply(False, "Writing a big file.", "fs.write", args)
    assert len(text) > 1_000_000
    seconds, result = _best_of_three(text)
    assert isinstance(result, ParsedTurn) and result.tool_call is not None
    assert result.tool_call.arguments["content"] == content
    assert seconds < 1.0, f"{seconds:.2f}s"


def test_one_megabyte_of_list_items_parses_in_reasonable_time() -> None:
    # The worst case: 60,000 tiny elements (about 0.5 s on an idle laptop). Typical big
    # replies are one CDATA block, held to 1 s above; this bound leaves room for loaded CI.
    argv = [f"arg{i}" for i in range(60_000)]
    text = render_reply(False, "", "terminal.exec", {"program": "echo", "argv": argv})
    assert len(text) > 1_000_000
    seconds, result = _best_of_three(text)
    assert isinstance(result, ParsedTurn) and result.tool_call is not None
    assert result.tool_call.arguments["argv"] == argv
    assert seconds < 3.0, f"{seconds:.2f}s"


@pytest.mark.parametrize(
    ("cut", "code"),
    [
        (lambda t: t[: len(t) // 2], "PROTOCOL_MALFORMED_XML"),  # truncated in the middle
        (lambda t: t + t, "PROTOCOL_MULTIPLE_ROOTS"),
        (lambda t: t.replace("<done>false</done>", ""), "PROTOCOL_MISSING_DONE"),
    ],
)
def test_one_megabyte_broken_replies_fail_fast(cut: Any, code: str) -> None:
    content = "x" * 1_000_000
    text = cut(render_reply(False, "", "fs.write", {"path": "a", "content": content}))
    seconds, result = _best_of_three(text)
    assert isinstance(result, ProtocolError) and result.code == code
    assert seconds < 1.0, f"{seconds:.2f}s"
