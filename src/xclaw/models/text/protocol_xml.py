"""A safe, CDATA-aware reader for one XML element embedded in free text.

The element is parsed with ``defusedxml`` (no DTD, no entity declarations, no external
references) and processing instructions are refused. Unlike ElementTree, the tree keeps which
text came from CDATA sections: whitespace *around* a CDATA section is layout, whitespace
inside it is content, and argument values need that difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException  # type: ignore[import-untyped]
from defusedxml.ElementTree import DefusedXMLParser  # type: ignore[import-untyped]

CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"


class Node:
    """One element: tag, attributes, child elements and its own text chunks."""

    __slots__ = ("tag", "attrs", "children", "chunks")

    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Node] = []
        self.chunks: list[tuple[str, bool]] = []  # (text, came from CDATA), in order

    def __repr__(self) -> str:
        return f"Node({self.tag!r}, {len(self.children)} children)"

    def has_text(self) -> bool:
        """Whether the element holds any non-whitespace text of its own."""
        return any(cdata or text.strip() for text, cdata in self.chunks)

    def value(self) -> str:
        """The element's own text: exact, except layout whitespace around CDATA sections."""
        chunks = self.chunks
        if len(chunks) < 2:  # the common case, and a lone chunk is always kept whole
            return chunks[0][0] if chunks else ""
        if any(cdata for _, cdata in chunks):
            start, end = 0, len(chunks)
            while start < end and not chunks[start][1] and not chunks[start][0].strip():
                start += 1
            while end > start and not chunks[end - 1][1] and not chunks[end - 1][0].strip():
                end -= 1
            chunks = chunks[start:end]
        return "".join(text for text, _ in chunks)


@dataclass(frozen=True, slots=True)
class XmlFailure:
    unsafe: bool
    detail: str
    offset: int  # character offset into the text that was parsed
    open_tags: tuple[str, ...] = ()  # elements still open where parsing stopped, outermost first


class UnsafeXml(Exception):
    """A DTD, entity declaration, external reference or processing instruction."""


class _RootClosed(Exception):
    pass


class _Builder:
    """Handlers for the defused expat parser; stops as soon as the first element closes.

    Tags keep expat's namespace form (``uri}local``), so a namespaced root is not mistaken
    for ``agent_response``.
    """

    def __init__(self) -> None:
        self.stack: list[Node] = []
        self.root: Node | None = None
        self.in_cdata = False
        self.expat: Any = None
        self.end_byte = -1

    def start(self, tag: str, attrs: list[str]) -> None:
        node = Node(tag, dict(zip(attrs[::2], attrs[1::2], strict=True)) if attrs else {})
        if self.stack:
            self.stack[-1].children.append(node)
        else:
            self.root = node
        self.stack.append(node)

    def end(self, tag: str) -> None:
        self.stack.pop()
        if not self.stack:
            self.end_byte = int(self.expat.CurrentByteIndex)
            raise _RootClosed

    def data(self, text: str) -> None:
        if not self.stack:
            return
        node = self.stack[-1]
        # Layout between child elements never matters, and long lists are full of it.
        if node.children and not self.in_cdata and text.isspace():
            return
        node.chunks.append((text, self.in_cdata))

    def start_cdata(self) -> None:
        self.in_cdata = True

    def end_cdata(self) -> None:
        self.in_cdata = False

    def pi(self, target: str, data: str) -> None:
        raise UnsafeXml(f"processing instruction <?{target} ...?>")

    def comment(self, text: str) -> None:
        """Comments are allowed and dropped."""


def parse_element(text: str, start: int) -> tuple[Node, int] | XmlFailure:
    """Parse the element that begins at ``text[start]``; return it and the offset after it."""
    data = text[start:].encode("utf-8", "surrogatepass")
    builder = _Builder()
    parser = DefusedXMLParser(
        target=builder, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    builder.expat = expat = parser.parser
    # Element and text events go straight to the builder: ElementTree's Python layer costs
    # more than the parse itself. The defused DTD/entity handlers stay as installed.
    expat.StartElementHandler = builder.start
    expat.EndElementHandler = builder.end
    expat.CharacterDataHandler = builder.data
    expat.StartCdataSectionHandler = builder.start_cdata
    expat.EndCdataSectionHandler = builder.end_cdata
    try:
        parser.feed(data)
        parser.close()
    except _RootClosed:
        assert builder.root is not None
        return builder.root, start + _char_len(data, _element_end(data, builder.end_byte))
    except (DefusedXmlException, UnsafeXml) as err:
        return XmlFailure(True, _describe_unsafe(err), start + _error_offset(data, expat))
    except ParseError as err:
        detail = str(err).split(":", 1)[0]
        still_open = tuple(node.tag for node in builder.stack)
        return XmlFailure(False, detail, start + _error_offset(data, expat), still_open)
    # close() succeeded without the root closing: cannot happen with expat, but stay total.
    return XmlFailure(False, "the element never closes", len(text))


def _element_end(data: bytes, index: int) -> int:
    """Expat reports an end tag's start, or the byte after an empty-element tag."""
    if data.startswith(b"</", index):
        close = data.find(b">", index)
        return len(data) if close < 0 else close + 1
    return index


def _char_len(data: bytes, byte_index: int) -> int:
    return len(data[:byte_index].decode("utf-8", "surrogatepass"))


def _error_offset(data: bytes, expat: Any) -> int:
    index = max(0, min(int(getattr(expat, "ErrorByteIndex", 0)), len(data)))
    return len(data[:index].decode("utf-8", "replace"))


def _describe_unsafe(err: Exception) -> str:
    name = type(err).__name__
    if name == "DTDForbidden":
        return "a DTD (<!DOCTYPE ...>)"
    if name == "EntitiesForbidden":
        return "an entity declaration (<!ENTITY ...>)"
    if name == "ExternalReferenceForbidden":
        return "an external entity reference"
    return str(err) or name


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def outside_cdata(text: str) -> Iterator[tuple[int, str]]:
    """(offset, part) for the parts of ``text`` outside CDATA sections; an unclosed section
    runs to the end."""
    pos = 0
    while True:
        open_at = text.find(CDATA_OPEN, pos)
        if open_at < 0:
            yield pos, text[pos:]
            return
        yield pos, text[pos:open_at]
        close_at = text.find(CDATA_CLOSE, open_at + len(CDATA_OPEN))
        if close_at < 0:
            return
        pos = close_at + len(CDATA_CLOSE)
