"""Turn a file's bytes into indexable text with its headings, lines and pages.

    Markdown  the text as written (lines match the file); headings from markdown-it-py
    text      the text as written; no headings
    HTML      visible text per block, parsed by selectolax (Lexbor, an HTML5 parser);
              script/style/template dropped; headings h1-h6 with their id as anchor
    PDF       text per page (pypdf); citations name the page

A loader raises ``LoadError`` (a stable code and a next step) for content it cannot read:
binary data, undecodable text, a broken PDF.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt

from xclaw.core.errors import XclawError
from xclaw.memory.chunking import Locator

MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkd"})
TEXT = frozenset({".txt", ".text", ".rst", ".log", ".csv"})
HTML = frozenset({".html", ".htm", ".xhtml"})
PDF = frozenset({".pdf"})
SUFFIXES = MARKDOWN | TEXT | HTML | PDF

_SNIFF = 8192
_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "head", "svg", "iframe"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = _HEADINGS | frozenset(
    {
        "p", "div", "li", "ul", "ol", "pre", "blockquote", "table", "tr", "td", "th",
        "dt", "dd", "dl", "section", "article", "header", "footer", "main", "nav", "aside",
        "figure", "figcaption", "caption", "br", "hr", "title", "summary", "details",
    }
)  # fmt: skip


class LoadError(XclawError):
    code = "KB_UNREADABLE"


@dataclass(slots=True)
class Document:
    """Indexable text of one file and how its offsets map back to the file."""

    text: str
    kind: str  # markdown | text | html | pdf
    title: str | None = None
    headings: list[tuple[int, str, str | None]] = field(default_factory=list)
    pages: list[tuple[int, int]] = field(default_factory=list)
    follows_lines: bool = True

    def locator(self) -> Locator:
        return Locator(
            self.text, headings=self.headings, pages=self.pages, lines=self.follows_lines
        )


def kind_of(suffix: str) -> str | None:
    s = suffix.lower()
    if s in MARKDOWN:
        return "markdown"
    if s in TEXT:
        return "text"
    if s in HTML:
        return "html"
    if s in PDF:
        return "pdf"
    return None


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 text (a BOM is dropped); NUL bytes or invalid UTF-8 mean binary."""
    if b"\x00" in data[:_SNIFF]:
        raise LoadError(
            f"{name} looks binary (it has NUL bytes).",
            code="KB_BINARY",
            hint="Only Markdown, text, HTML and PDF files are indexed.",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LoadError(
            f"{name} is not valid UTF-8 text.",
            code="KB_BINARY",
            hint="Convert it to UTF-8 first.",
        ) from None


def load_text(data: bytes, name: str) -> Document:
    return Document(decode_text(data, name).replace("\r\n", "\n"), "text")


def load_markdown(data: bytes, name: str) -> Document:
    text = decode_text(data, name).replace("\r\n", "\n")
    line_starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(i + 1)
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, str, str | None]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map and i + 1 < len(tokens):
            heading = tokens[i + 1].content.strip()
            if heading:
                start = line_starts[min(tok.map[0], len(line_starts) - 1)]
                headings.append((start, heading, None))
    return Document(text, "markdown", title=headings[0][1] if headings else None, headings=headings)


class _HtmlText:
    """Collects visible text block by block; headings recorded at their offset."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.headings: list[tuple[int, str, str | None]] = []

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.size += len(text)

    def block_break(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.add("\n")


def _squash(text: str) -> str:
    return " ".join(text.split())


def load_html(data: bytes, name: str) -> Document:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(decode_text(data, name))
    title_node = tree.css_first("title")
    title = _squash(title_node.text()) if title_node is not None else None
    out = _HtmlText()
    root = tree.body
    # Explicit stack (deep pages must not hit the recursion limit); None closes a block.
    stack: list[Any] = list(reversed(list(root.iter(include_text=True)))) if root else []
    while stack:
        node = stack.pop()
        if node is None:
            out.block_break()
            continue
        tag = node.tag
        if tag == "-text":
            chunk = _squash(node.text_content or "")
            if chunk:
                prev = out.parts[-1] if out.parts else "\n"
                out.add(chunk if prev.endswith(("\n", " ")) else " " + chunk)
            continue
        if tag is None or tag in _SKIP_TAGS:
            continue
        if tag in _BLOCKS:
            out.block_break()
            stack.append(None)
        if tag in _HEADINGS:
            heading = _squash(node.text())
            if heading:
                out.headings.append((out.size, heading, node.attributes.get("id")))
        stack.extend(reversed(list(node.iter(include_text=True))))
    text = "".join(out.parts).strip("\n") + "\n"
    return Document(text, "html", title=title, headings=out.headings, follows_lines=False)


def load_pdf(data: bytes, name: str) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as err:
        raise LoadError(
            f"{name} is not a readable PDF: {err}.",
            code="KB_PDF_INVALID",
            hint="Check that the file is a complete, unencrypted PDF.",
        ) from None
    parts: list[str] = []
    marks: list[tuple[int, int]] = []
    size = 0
    for number, page_text in enumerate(pages, start=1):
        marks.append((size, number))
        piece = page_text.replace("\r\n", "\n").strip() + "\n\n"
        parts.append(piece)
        size += len(piece)
    return Document("".join(parts), "pdf", pages=marks, follows_lines=False)


LOADERS: dict[str, Callable[[bytes, str], Document]] = {
    "markdown": load_markdown,
    "text": load_text,
    "html": load_html,
    "pdf": load_pdf,
}
