"""A knowledge base: documents chunked into a ``MemoryStore`` scope, searched with citations.

One document is one file, identified by ``kb-<sha256(path)>-<sha256(content)>`` (16 hex digits
each): the same file with the same bytes always has the same id, so an unchanged file is
skipped, and a changed file gets a new id. Its chunks are saved (kind ``chunk``) together with
one record of kind ``kb_doc`` that lists the document; only then are the chunks of the older
versions of that path removed, so a crash halfway leaves the old or the new version searchable,
never neither, and the next ``add`` of the file clears any leftover.

Paths follow the project's path rules (``xclaw.policy.paths``): within a folder given to
``add`` no symlink may lead out of it; devices, sockets, pipes and kernel files are refused;
credential-like files (.env, keys) are never indexed; files over ``max_bytes`` and binary files
are skipped with a coded reason.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from xclaw.core.errors import PolicyDenied, XclawError
from xclaw.memory.base import Hit, MemoryItem, MemoryStore, NewMemory, Scope, SearchMode
from xclaw.memory.chunking import DEFAULT_OVERLAP, DEFAULT_SIZE, chunk_text
from xclaw.memory.loaders import LOADER_VERSION, LOADERS, SUFFIXES, Document, LoadError, kind_of
from xclaw.policy.paths import is_secret_path, resolve_inside_root

CHUNK = "chunk"
DOC = "kb_doc"
MAX_BYTES = 20 * 1024 * 1024
_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a pipe swapped in for the file must not hang the read
    | getattr(os, "O_CLOEXEC", 0)
)
_PAGE = 500

Status = Literal["added", "replaced", "unchanged", "skipped"]


class KbError(XclawError):
    code = "KB_ERROR"


@dataclass(frozen=True, slots=True)
class AddReport:
    path: str
    status: Status
    doc_id: str | None = None
    chunks: int = 0
    code: str | None = None  # why it was skipped
    reason: str = ""


@dataclass(frozen=True, slots=True)
class KbDocument:
    doc_id: str
    path: str
    kind: str
    sha256: str
    size: int
    chunks: int
    added_at: float
    title: str | None
    chunking: str = ""  # "size/overlap" it was chunked with


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    citation: str
    path: str
    doc_id: str
    line_start: int | None
    line_end: int | None
    page: int | None
    heading: str | None
    score: float
    vector_score: float | None
    keyword_score: float | None
    heading_path: tuple[str, ...] = ()
    chunk: int | None = None  # 1-based position of the passage in its document

    @property
    def section(self) -> str:
        """The heading path, outermost first: ``Guide › Install › Linux`` ('' for none)."""
        return section_of(self.heading_path, self.heading)

    def as_dict(self) -> dict[str, Any]:
        return {
            "citation": self.citation,
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "page": self.page,
            "heading": self.heading,
            "section": self.section,
            "chunk": self.chunk,
            "score": round(self.score, 4),
            "text": self.text,
        }

    @classmethod
    def from_hit(cls, hit: Hit) -> Passage:
        src = hit.item.source or {}
        path = src.get("heading_path")
        chunk = src.get("chunk")
        return cls(
            text=hit.item.text,
            citation=citation_for(src),
            path=str(src.get("path", "")),
            doc_id=str(src.get("doc_id", "")),
            line_start=src.get("line_start"),
            line_end=src.get("line_end"),
            page=src.get("page"),
            heading=src.get("heading"),
            score=hit.score,
            vector_score=hit.vector_score,
            keyword_score=hit.keyword_score,
            heading_path=tuple(str(h) for h in path) if isinstance(path, list) else (),
            chunk=chunk if isinstance(chunk, int) else None,
        )


@dataclass(frozen=True, slots=True)
class Discovery:
    files: list[Path]  # resolved, regular, in walk order, each once
    skipped: list[AddReport]


def citation_for(source: dict[str, Any]) -> str:
    """``path:12-18`` for line-based text, ``path#page=3`` for PDF, ``path#anchor`` for HTML
    under a heading with an id, else ``path#chunk=4`` (the passage's place in the file)."""
    path = str(source.get("path", "?"))
    start, end = source.get("line_start"), source.get("line_end")
    if isinstance(start, int):
        return f"{path}:{start}" if end in (None, start) else f"{path}:{start}-{end}"
    page = source.get("page")
    if isinstance(page, int):
        return f"{path}#page={page}"
    anchor = source.get("anchor")
    if anchor:
        return f"{path}#{anchor}"
    chunk = source.get("chunk")
    return f"{path}#chunk={chunk}" if isinstance(chunk, int) else path


def section_of(heading_path: Sequence[str], heading: str | None = None) -> str:
    """``Guide › Install › Linux`` from a heading path (or the one heading of an older
    index), '' when the passage lies under no heading."""
    return " › ".join(heading_path) if heading_path else heading or ""


def _sha(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def document_id(path: str, content: bytes) -> str:
    return f"kb-{_sha(path)[:16]}-{_sha(content)[:16]}"


def _skip(path: str, code: str, reason: str) -> AddReport:
    return AddReport(path, "skipped", code=code, reason=reason)


def _refusal(path: str, err: XclawError) -> AddReport:
    return _skip(path, err.code, err.message)


class KnowledgeBase:
    """Documents of one scope in a ``MemoryStore``: add, list, remove, search."""

    def __init__(
        self,
        store: MemoryStore,
        scope: Scope,
        *,
        chunk_size: int = DEFAULT_SIZE,
        overlap: int = DEFAULT_OVERLAP,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        chunk_text("", size=chunk_size, overlap=overlap)  # validates the numbers early
        self.store = store
        self.scope = scope
        self.search_scopes: list[Scope] = [scope]  # also_search() adds read-only ones
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.max_bytes = max_bytes

    # -- finding files -------------------------------------------------------------------

    def discover(self, paths: Iterable[str | Path]) -> Discovery:
        """The files ``add`` would index, and what it refuses, before anything is read."""
        files: list[Path] = []
        skipped: list[AddReport] = []
        seen: set[Path] = set()
        for raw in paths:
            for found in _expand(Path(raw).expanduser()):
                if isinstance(found, AddReport):
                    skipped.append(found)
                elif found not in seen:
                    seen.add(found)
                    files.append(found)
        return Discovery(files, skipped)

    # -- adding --------------------------------------------------------------------------

    def add(
        self, paths: Iterable[str | Path], *, on_file: Callable[[AddReport], None] | None = None
    ) -> list[AddReport]:
        found = self.discover(paths)
        reports = list(found.skipped)
        known = self.documents_by_path()
        for path in found.files:
            report = self.add_file(path, known=known)
            reports.append(report)
            if on_file is not None:
                on_file(report)
        return reports

    def add_file(
        self, path: Path, *, known: dict[str, list[KbDocument]] | None = None
    ) -> AddReport:
        """Index one resolved file (from ``discover``); replaces an older version of it.

        ``known`` (from ``documents_by_path``) saves listing the documents once per file.
        """
        shown = str(path)
        try:
            data = self._read(path)
            kind = kind_of(path.suffix) or "text"
            doc = LOADERS[kind](data, path.name)
        except XclawError as err:
            return _refusal(shown, err)
        doc_id = document_id(shown, data)
        older = known.get(shown, []) if known is not None else self.documents(path=shown)
        same = [d for d in older if d.doc_id == doc_id and d.chunking == self._chunking]
        if same:
            self._drop_versions(older, keep=doc_id)
            return AddReport(shown, "unchanged", doc_id, same[0].chunks)
        # Leftovers of a crashed add, or the same bytes chunked with other sizes.
        self.store.delete_source(doc_id, scope=self.scope)
        items = self._chunks(doc, doc_id, shown)
        if not items:
            self._drop_versions(older, keep=None)  # an emptied file keeps no stale chunks
            return _skip(shown, "KB_EMPTY", "The file has no text to index.")
        record = self._record(doc, doc_id, shown, data, len(items))
        self.store.save([*items, record])
        self._drop_versions(older, keep=doc_id)
        return AddReport(shown, "replaced" if older else "added", doc_id, len(items))

    @property
    def _chunking(self) -> str:
        # The loaders' version too: a file indexed by older loaders (page chrome kept, no
        # heading path) is indexed again by the next ``add``, unchanged or not.
        return f"{self.chunk_size}/{self.overlap}/{LOADER_VERSION}"

    def _read(self, path: Path) -> bytes:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as err:
            raise KbError(
                f"{path} cannot be opened: {err.strerror}.",
                code="KB_UNREADABLE",
                hint="Check the path and its permissions; symlinks must be given by their target.",
            ) from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise KbError(
                    f"{path} is not a regular file.",
                    code="PATH_SPECIAL",
                    hint="Only regular files are indexed.",
                )
            if st.st_size > self.max_bytes:
                raise KbError(
                    f"{path} is {st.st_size} bytes, more than the {self.max_bytes} allowed.",
                    code="KB_TOO_LARGE",
                    hint="Split the file or raise the knowledge base's size limit.",
                )
            data = fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:  # grew while being read
            raise KbError(f"{path} grew past the size limit.", code="KB_TOO_LARGE")
        return data

    def _chunks(self, doc: Document, doc_id: str, path: str) -> list[NewMemory]:
        locator = doc.locator()
        items = []
        spans = chunk_text(
            doc.text,
            size=self.chunk_size,
            overlap=self.overlap,
            sections=[h.offset for h in doc.headings],
            breaks=[p[0] for p in doc.pages],
        )
        for number, span in enumerate(spans, start=1):
            loc = locator.locate(span)
            source = {
                "doc_id": doc_id,
                "path": path,
                "start": span.start,
                "end": span.end,
                "line_start": loc.line_start,
                "line_end": loc.line_end,
                "page": loc.page,
                "heading": loc.heading,
                "heading_path": list(loc.heading_path),
                "anchor": loc.anchor,
                "chunk": number,
                "title": doc.title,
            }
            items.append(NewMemory(span.text, self.scope, CHUNK, source, {"format": doc.kind}))
        return items

    def _record(self, doc: Document, doc_id: str, path: str, data: bytes, n: int) -> NewMemory:
        meta = {
            "format": doc.kind,
            "sha256": _sha(data),
            "size": len(data),
            "chunks": n,
            "chunking": self._chunking,
            "added_at": time.time(),
        }
        text = f"knowledge base document {path}" + (f": {doc.title}" if doc.title else "")
        source = {"doc_id": doc_id, "path": path, "title": doc.title}
        return NewMemory(text, self.scope, DOC, source, meta)

    def _drop_versions(self, docs: Sequence[KbDocument], *, keep: str | None) -> int:
        return sum(
            self.store.delete_source(d.doc_id, scope=self.scope) for d in docs if d.doc_id != keep
        )

    # -- listing and removing ------------------------------------------------------------

    def _doc_items(self) -> Iterator[MemoryItem]:
        offset = 0
        while True:
            page = self.store.list(scopes=[self.scope], kinds=[DOC], limit=_PAGE, offset=offset)
            yield from page
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def documents(self, *, path: str | None = None) -> list[KbDocument]:
        """Indexed documents, newest first (only those of ``path`` when given)."""
        out = []
        for item in self._doc_items():
            src, meta = item.source or {}, item.metadata
            if path is not None and src.get("path") != path:
                continue
            out.append(
                KbDocument(
                    doc_id=str(src.get("doc_id")),
                    path=str(src.get("path")),
                    kind=str(meta.get("format", "text")),
                    sha256=str(meta.get("sha256", "")),
                    size=int(meta.get("size", 0)),
                    chunks=int(meta.get("chunks", 0)),
                    added_at=float(meta.get("added_at", item.created_at)),
                    title=src.get("title"),
                    chunking=str(meta.get("chunking", "")),
                )
            )
        return out

    def documents_by_path(self) -> dict[str, list[KbDocument]]:
        out: dict[str, list[KbDocument]] = {}
        for d in self.documents():
            out.setdefault(d.path, []).append(d)
        return out

    def remove(self, target: str) -> list[KbDocument]:
        """Remove a document by id or by path (as listed); returns what was removed."""
        docs = self.documents()
        by_path = str(Path(target).expanduser().absolute()) if not target.startswith("kb-") else ""
        chosen = [d for d in docs if target in (d.doc_id, d.path) or d.path == by_path]
        if not chosen:
            real = os.path.realpath(by_path) if by_path else ""
            chosen = [d for d in docs if real and d.path == real]
        for d in chosen:
            self.store.delete_source(d.doc_id, scope=self.scope)
        return chosen

    # -- searching -----------------------------------------------------------------------

    def also_search(self, *scopes: Scope) -> KnowledgeBase:
        """Search these scopes' documents too (e.g. the user's own beside a project's);
        adding and removing still touch ``scope`` only."""
        self.search_scopes += [s for s in scopes if s not in self.search_scopes]
        return self

    def search(self, query: str, k: int = 5, *, mode: SearchMode = "hybrid") -> list[Passage]:
        hits = self.store.search(query, scopes=self.search_scopes, k=k, mode=mode, kinds=[CHUNK])
        return [Passage.from_hit(hit) for hit in hits]


def _expand(path: Path) -> Iterator[Path | AddReport]:
    """The indexable files under ``path`` (a file or a folder), or why each is refused."""
    shown = str(path)
    top = Path(os.path.abspath(path))
    try:
        st = os.stat(top)
    except OSError as err:
        yield _skip(shown, "PATH_NOT_FOUND", f"{shown} cannot be read: {err.strerror}.")
        return
    if stat.S_ISDIR(st.st_mode):
        yield from _walk(Path(os.path.realpath(top)))
        return
    # A named file is checked against its own folder: a link out of that folder is refused.
    yield _checked(Path(os.path.realpath(top.parent)), top.name, explicit=True)


def _walk(root: Path) -> Iterator[Path | AddReport]:
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.startswith(".") or Path(name).suffix.lower() not in SUFFIXES:
                continue
            rel = os.path.relpath(os.path.join(folder, name), root)
            yield _checked(root, rel, explicit=False)


def _checked(root: Path, rel: str, *, explicit: bool) -> Path | AddReport:
    shown = str(root / rel)
    if is_secret_path(rel):
        return _skip(shown, "KB_SECRET_FILE", "Credential-like files are never indexed.")
    try:
        resolved = resolve_inside_root(rel, root, must_exist=True)
    except PolicyDenied as err:
        return _refusal(shown, err)
    if is_secret_path(resolved.rel):  # a harmless name linked to a credential file
        return _skip(shown, "KB_SECRET_FILE", "Credential-like files are never indexed.")
    if not resolved.path.is_file():
        return _skip(shown, "PATH_SPECIAL", f"{shown} is not a regular file.")
    if explicit or kind_of(resolved.path.suffix) is not None:
        return resolved.path
    return _skip(shown, "KB_UNSUPPORTED", f"{shown} is not Markdown, text, HTML or PDF.")


__all__ = [
    "CHUNK",
    "DOC",
    "AddReport",
    "Discovery",
    "KbDocument",
    "KbError",
    "KnowledgeBase",
    "LoadError",
    "Passage",
    "citation_for",
    "document_id",
    "section_of",
]
