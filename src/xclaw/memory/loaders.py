"""Turn a file's bytes into indexable text with its headings, lines and pages.

    Markdown  the text as written (lines match the file); headings (and levels) from
              markdown-it-py
    text      the text as written; no headings
    HTML      the main content's visible text per block, parsed by selectolax (Lexbor, an
              HTML5 parser): <main> (or role=main), else the only <article>, else the body;
              chrome dropped before chunking (nav, aside, page-level header and footer,
              ARIA navigation/banner/contentinfo/complementary/search, hidden parts, and
              without a landmark bare lists of links); script/style/template dropped;
              headings h1-h6 with their level and id (the anchor)
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
from xclaw.memory.chunking import Heading, Locator

MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkd"})
TEXT = frozenset({".txt", ".text", ".rst", ".log", ".csv"})
HTML = frozenset({".html", ".htm", ".xhtml"})
PDF = frozenset({".pdf"})
SUFFIXES = MARKDOWN | TEXT | HTML | PDF

LOADER_VERSION = 2  # raised when a loader's output changes (2: HTML main content, levels)
_SNIFF = 8192
_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "head", "svg", "iframe"})
_CHROME_TAGS = frozenset({"nav", "aside", "dialog", "menu"})
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_SECTIONING = frozenset({"article", "section", "main"})
_LINK_LIST_TAGS = frozenset({"ul", "ol", "div", "p"})
_LINK_LIST_MIN = 3
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
    headings: list[Heading] = field(default_factory=list)
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
    headings: list[Heading] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map and i + 1 < len(tokens):
            heading = tokens[i + 1].content.strip()
            if heading:
                start = line_starts[min(tok.map[0], len(line_starts) - 1)]
                headings.append(Heading(start, heading, None, int(tok.tag[1])))
    title = headings[0].text if headings else None
    return Document(text, "markdown", title=title, headings=headings)


class _HtmlText:
    """Collects visible text block by block; headings recorded at their offset."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.headings: list[Heading] = []

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.size += len(text)

    def block_break(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.add("\n")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _is_link_list(node: Any) -> bool:
    """A list or bar of at least three links and nothing else (a menu, a footer's links)."""
    items = [c for c in node.iter() if c.tag not in (None, "-text", "-comment")]
    if len(items) < _LINK_LIST_MIN:
        return False
    for item in items:
        link = item if item.tag == "a" else item.css_first("a")
        if link is None or _squash(item.text()) != _squash(link.text()):
            return False
    return True


def _is_chrome(node: Any, in_section: bool, landmark: bool) -> bool:
    """Page chrome, not content: navigation, banners, sidebars, hidden parts; a page-level
    ``header``/``footer`` (one inside an article or section is that section's own); without
    a ``main`` landmark, also bare lists of links."""
    tag = node.tag
    attrs = node.attributes
    if tag in _CHROME_TAGS or attrs.get("role") in _CHROME_ROLES:
        return True
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    if tag in ("header", "footer") and not in_section:
        return True
    return not landmark and tag in _LINK_LIST_TAGS and _is_link_list(node)


def _content_root(tree: Any) -> tuple[Any, bool]:
    """The element holding the page's main content: ``<main>`` (or ``role=main``), else the
    only ``<article>``, else the body; and whether it is such a landmark."""
    main = tree.css_first("main, [role=main]")
    if main is not None:
        return main, True
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0], True
    return tree.body, False


def load_html(data: bytes, name: str) -> Document:
    """The main content's visible text (chrome dropped: see ``_is_chrome``), with headings."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(decode_text(data, name))
    title_node = tree.css_first("title")
    title = _squash(title_node.text()) if title_node is not None else None
    out = _HtmlText()
    root, landmark = _content_root(tree)
    # Explicit stack (deep pages must not hit the recursion limit) of (node, inside an
    # article or section); None closes a block.
    stack: list[tuple[Any, bool] | None] = []
    if root is not None:
        stack = [(n, landmark) for n in reversed(list(root.iter(include_text=True)))]
    while stack:
        entry = stack.pop()
        if entry is None:
            out.block_break()
            continue
        node, in_section = entry
        tag = node.tag
        if tag == "-text":
            chunk = _squash(node.text_content or "")
            if chunk:
                prev = out.parts[-1] if out.parts else "\n"
                out.add(chunk if prev.endswith(("\n", " ")) else " " + chunk)
            continue
        if tag is None or tag in _SKIP_TAGS or _is_chrome(node, in_section, landmark):
            continue
        if tag in _BLOCKS:
            out.block_break()
            stack.append(None)
        if tag in _HEADINGS:
            heading = _squash(node.text())
            if heading:
                out.headings.append(
                    Heading(out.size, heading, node.attributes.get("id"), int(tag[1]))
                )
        inner = in_section or tag in _SECTIONING
        stack.extend((n, inner) for n in reversed(list(node.iter(include_text=True))))
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
