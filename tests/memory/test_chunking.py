"""Sliding-window chunking: sizes, overlap, sentence ends in Chinese and English, locations."""

from __future__ import annotations

import pytest

from xclaw.memory.chunking import Heading, Locator, chunk_text, heading_paths, token_weight


def test_chunks_cover_the_text_with_overlap() -> None:
    text = " ".join(f"Sentence number {i} says something." for i in range(200))
    spans = chunk_text(text, size=60, overlap=12)
    assert len(spans) > 5
    for a, b in zip(spans, spans[1:], strict=False):
        assert b.start < a.end, "consecutive chunks overlap"
        assert b.start > a.start
    assert spans[0].start == 0 and spans[-1].end == len(text)
    for s in spans:
        assert text[s.start : s.end] == s.text
        assert token_weight(s.text) <= 60 + 1


def test_english_chunks_end_at_sentence_ends() -> None:
    text = " ".join(f"This is sentence {i} of the test." for i in range(100))
    spans = chunk_text(text, size=50, overlap=10)
    for s in spans[:-1]:
        assert s.text.endswith("."), s.text[-20:]
    for s in spans[1:]:
        assert s.text.startswith("This"), s.text[:20]


def test_chinese_chunks_end_at_chinese_sentence_ends() -> None:
    text = "".join(f"第{i}句话讲的是沙箱如何隔离命令执行。" for i in range(80))
    spans = chunk_text(text, size=60, overlap=15)
    assert len(spans) > 5
    for s in spans[:-1]:
        assert s.text.endswith("。"), s.text[-5:]
    # Chinese counts one token per character, so a 60-token chunk is about 60 characters.
    assert all(len(s.text) <= 61 for s in spans)


def test_mixed_question_and_exclamation_marks() -> None:
    text = "它能工作吗？能！Does it work? Yes! " * 40
    spans = chunk_text(text, size=30, overlap=5)
    for s in spans[:-1]:
        assert s.text[-1] in "？！?!", s.text


def test_text_without_boundaries_is_still_cut() -> None:
    text = "x" * 5000
    spans = chunk_text(text, size=100, overlap=10)
    assert all(len(s.text) <= 400 for s in spans)
    assert spans[-1].end == 5000


def test_empty_and_blank_text() -> None:
    assert chunk_text("") == []
    assert chunk_text("   \n\n  ") == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_sizes_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("abc", size=size, overlap=overlap)


def test_locator_lines_pages_and_headings() -> None:
    text = "# A\nline two\nline three\n## B\nline five\n"
    loc = Locator(
        text, headings=[Heading(0, "A", None, 1), Heading(text.index("## B"), "B", "b", 2)]
    )
    spans = chunk_text(text, size=4, overlap=1)
    first = loc.locate(spans[0])
    assert first.line_start == 1 and first.heading == "A"
    last = loc.locate(spans[-1])
    assert last.line_end == 5 and last.heading == "B" and last.anchor == "b"
    assert first.heading_path == ("A",) and last.heading_path == ("A", "B")
    paged = Locator("p1\n\np2\n", pages=[(0, 1), (4, 2)], lines=False)
    span = chunk_text("p1\n\np2\n", size=1, overlap=0)[-1]
    assert paged.locate(span).page == 2 and paged.locate(span).line_start is None


def test_sections_cut_first_and_overlap_stops_at_a_heading() -> None:
    intro = "# Guide\n\n" + "Intro sentence goes here. " * 12 + "\n\n"
    text = intro + "## Network\n\nThe sandbox blocks network access. " * 1
    spans = chunk_text(text, size=60, overlap=20, sections=[0, len(intro)])
    starts = [s.start for s in spans]
    assert len(intro) in starts, "a chunk starts at the heading"
    assert all(s.end <= len(intro) or s.start >= len(intro) for s in spans), "no chunk spans it"


def test_page_breaks_are_always_cut() -> None:
    text = "page one text.\n\npage two text.\n\n"
    spans = chunk_text(text, size=200, overlap=20, breaks=[0, text.index("page two")])
    assert [s.text for s in spans] == ["page one text.", "page two text."]


def test_heading_paths_nest_by_level_and_stacked_headings_name_the_innermost() -> None:
    heads = [Heading(0, "Guide", "g", 1), Heading(10, "Install", None, 2),
             Heading(20, "Linux", None, 3), Heading(30, "Usage", None, 2)]  # fmt: skip
    assert heading_paths(heads) == [
        (("Guide",), "g"),
        (("Guide", "Install"), "g"),  # no id of its own: the nearest above with one
        (("Guide", "Install", "Linux"), "g"),
        (("Guide", "Usage"), "g"),
    ]
    text = "# API\n\n## Limits\n\n### Rate\n\nSixty requests a minute.\n\n## Auth\n\nBearer.\n"
    found = [Heading(text.index(h), h.lstrip("# "), None, h.count("#"))
             for h in ("# API", "## Limits", "### Rate", "## Auth")]  # fmt: skip
    loc = Locator(text, headings=found)
    [top, *_] = chunk_text(text, size=200, overlap=0, sections=[h.offset for h in found])
    assert top.start == 0 and loc.locate(top).heading_path == ("API", "Limits", "Rate")
