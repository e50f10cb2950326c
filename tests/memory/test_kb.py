"""The knowledge base on the real SQLite store and the default embedder: loaders, citations,
replace-on-change, skip-if-unchanged, remove, and the path rules."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from xclaw.memory.base import Scope
from xclaw.memory.chunking import Heading
from xclaw.memory.embed import default_embedder
from xclaw.memory.kb import KnowledgeBase, citation_for, section_of
from xclaw.memory.kb_tools import render_passages
from xclaw.memory.loaders import LoadError, load_html, load_markdown, load_pdf
from xclaw.memory.sqlite_store import SqliteMemoryStore

SCOPE = Scope("user", "kb-test")


def tiny_pdf(pages: list[str]) -> bytes:
    """A valid PDF with one line of Helvetica text per page; written by hand so the test
    needs no PDF-writing dependency."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        page_no, content_no = len(objs) + 1, len(objs) + 2
        kids.append(f"{page_no} 0 R")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_no} 0 R "
            "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
            "/BaseFont /Helvetica >> >> >> >>"
        )
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content.decode()}\nendstream")
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = SqliteMemoryStore(tmp_path / "mem.db", default_embedder())
    try:
        yield KnowledgeBase(store, SCOPE, chunk_size=60, overlap=10)
    finally:
        store.close()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "guide.md").write_text(
        "# Sandbox guide\n\n" + "The guide explains how the sandbox is set up. " * 8 + "\n\n"
        "## Network\n\n"
        "The sandbox blocks outbound network access unless the user grants it.\n"
        "Loopback stays reachable.\n",
        encoding="utf-8",
    )
    (d / "notes.txt").write_text(
        "第一行。\n记忆系统把事实保存在用户作用域里，项目之间不会泄漏。\n最后一行。\n",
        encoding="utf-8",
    )
    (d / "page.html").write_text(
        "<html><head><title>Ops</title><script>var secret = 1;</script></head><body>"
        "<h1 id='deploy'>Deploying</h1><p>Deployments roll out to the canary pool first, "
        "then to everyone after fifteen minutes.</p></body></html>",
        encoding="utf-8",
    )
    (d / "manual.pdf").write_bytes(
        tiny_pdf(["Chapter one covers installation.", "The retention period is ninety days."])
    )
    (d / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (d / ".env").write_text("API_KEY=sk-should-never-be-indexed\n")
    return d


def test_markdown_headings_and_lines() -> None:
    doc = load_markdown(b"# Title\n\n```\n# not a heading\n```\n\n## Sub\ntext\n", "x.md")
    assert [(h.text, h.level) for h in doc.headings] == [("Title", 1), ("Sub", 2)]
    assert doc.title == "Title" and doc.follows_lines


def test_html_drops_scripts_and_keeps_blocks() -> None:
    doc = load_html(
        b"<html><head><style>p{}</style></head><body><h2 id=a>One &amp; two</h2>"
        b"<p>Hello <b>bold</b> world.</p><script>evil()</script><ul><li>item</li></ul>",
        "x.html",
    )
    assert "evil" not in doc.text and "p{}" not in doc.text
    assert "Hello bold world." in doc.text and "item" in doc.text
    assert doc.headings == [Heading(0, "One & two", "a", 2)]


def test_pdf_pages_and_broken_pdf() -> None:
    doc = load_pdf(tiny_pdf(["alpha page", "beta page"]), "x.pdf")
    assert "alpha page" in doc.text and "beta page" in doc.text
    assert [p[1] for p in doc.pages] == [1, 2]
    with pytest.raises(LoadError) as err:
        load_pdf(b"%PDF-1.4 not really", "bad.pdf")
    assert err.value.code == "KB_PDF_INVALID"


def test_add_folder_indexes_supported_files_and_skips_the_rest(
    kb: KnowledgeBase, docs: Path
) -> None:
    reports = kb.add([docs])
    by_name = {Path(r.path).name: r for r in reports}
    for name in ("guide.md", "notes.txt", "page.html", "manual.pdf"):
        assert by_name[name].status == "added", by_name[name]
        assert by_name[name].chunks >= 1
    assert "image.png" not in by_name  # unsupported suffixes are not even considered
    assert ".env" not in by_name  # hidden files are not walked
    listed = {Path(d.path).name for d in kb.documents()}
    assert listed == {"guide.md", "notes.txt", "page.html", "manual.pdf"}


def test_search_returns_citations_for_each_format(kb: KnowledgeBase, docs: Path) -> None:
    kb.add([docs])
    real = docs.resolve()
    md = kb.search("outbound network access blocked", k=3)[0]
    assert md.citation == f"{real / 'guide.md'}:{md.line_start}-{md.line_end}" or (
        md.citation == f"{real / 'guide.md'}:{md.line_start}"
    )
    lines = (real / "guide.md").read_text().splitlines()[md.line_start - 1 : md.line_end]
    assert any("outbound network access" in line for line in lines)
    assert md.heading == "Network"
    pdf = kb.search("retention period ninety days", k=3)[0]
    assert pdf.citation == f"{real / 'manual.pdf'}#page=2"
    html = kb.search("canary pool deployments", k=3)[0]
    assert html.citation == f"{real / 'page.html'}#deploy" and html.heading == "Deploying"
    zh = kb.search("用户作用域 泄漏", k=3)[0]
    assert zh.path == str(real / "notes.txt")
    assert zh.citation == f"{real / 'notes.txt'}:1-3" and zh.keyword_score is not None


def test_unchanged_file_is_skipped_and_changed_file_replaced(kb: KnowledgeBase, docs: Path) -> None:
    guide = docs / "guide.md"
    first = kb.add([guide])[0]
    assert first.status == "added"
    again = kb.add([guide])[0]
    assert again.status == "unchanged" and again.doc_id == first.doc_id
    guide.write_text("# Sandbox guide\n\nThe sandbox now allows pypi.org only.\n")
    changed = kb.add([guide])[0]
    assert changed.status == "replaced" and changed.doc_id != first.doc_id
    assert [d.doc_id for d in kb.documents()] == [changed.doc_id]
    texts = [p.text for p in kb.search("sandbox network", k=10, mode="keyword")]
    assert texts and all("outbound" not in t for t in texts), "old chunks are gone"
    chunks = kb.store.list(scopes=[SCOPE], kinds=["chunk"], limit=100)
    assert {(c.source or {})["doc_id"] for c in chunks} == {changed.doc_id}


def test_remove_by_path_and_by_id(kb: KnowledgeBase, docs: Path) -> None:
    kb.add([docs / "guide.md", docs / "notes.txt"])
    docs_now = {Path(d.path).name: d for d in kb.documents()}
    removed = kb.remove(str(docs / "guide.md"))
    assert [d.doc_id for d in removed] == [docs_now["guide.md"].doc_id]
    assert kb.remove(docs_now["notes.txt"].doc_id)[0].path.endswith("notes.txt")
    assert kb.documents() == []
    assert kb.store.list(scopes=[SCOPE], kinds=["chunk"]) == []
    assert kb.remove("kb-nothing") == []


def test_path_rules(kb: KnowledgeBase, docs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# secret plans\n")
    (docs / "escape.md").symlink_to(outside)
    (docs / "inside.md").symlink_to(docs / "guide.md")
    found = kb.discover([docs])
    codes = {Path(r.path).name: r.code for r in found.skipped}
    assert codes["escape.md"] == "PATH_SYMLINK_ESCAPE"
    assert sum(1 for f in found.files if f.name == "guide.md") == 1, "inside links dedupe"
    # Named directly, a file is checked against its own folder: the link still leads out.
    assert kb.discover([docs / "escape.md"]).skipped[0].code == "PATH_SYMLINK_ESCAPE"
    assert kb.discover([docs / ".env"]).skipped[0].code == "KB_SECRET_FILE"
    assert kb.discover([tmp_path / "missing.md"]).skipped[0].code == "PATH_NOT_FOUND"
    fifo = docs / "pipe.md"
    os.mkfifo(fifo)
    assert kb.discover([fifo]).skipped[0].code == "PATH_SPECIAL"
    sock_path = tmp_path / "s.md"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert kb.discover([sock_path]).skipped[0].code == "PATH_SPECIAL"
    assert kb.discover(["/dev/null"]).skipped[0].code == "PATH_SPECIAL"


def test_binary_and_oversized_files_are_skipped(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "m.db", default_embedder())
    try:
        kb = KnowledgeBase(store, SCOPE, max_bytes=100)
        (tmp_path / "bin.txt").write_bytes(b"abc\x00def")
        (tmp_path / "big.md").write_text("word " * 100)
        (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
        reports = {Path(r.path).name: r for r in kb.add(sorted(tmp_path.glob("*.*[dt]")))}
        assert reports["bin.txt"].code == "KB_BINARY"
        assert reports["latin1.txt"].code == "KB_BINARY"
        assert reports["big.md"].code == "KB_TOO_LARGE"
        assert all(r.status == "skipped" for r in reports.values())
        assert kb.documents() == []
    finally:
        store.close()


def test_citation_formats() -> None:
    assert citation_for({"path": "a.md", "line_start": 3, "line_end": 3}) == "a.md:3"
    assert citation_for({"path": "a.md", "line_start": 3, "line_end": 9}) == "a.md:3-9"
    assert citation_for({"path": "a.pdf", "page": 4}) == "a.pdf#page=4"
    assert citation_for({"path": "a.html", "anchor": "x"}) == "a.html#x"
    assert citation_for({"path": "a.html"}) == "a.html"
    assert citation_for({"path": "a.html", "chunk": 4}) == "a.html#chunk=4"
    assert section_of(("A", "B")) == "A › B" and section_of((), "Old") == "Old"
    assert section_of(()) == ""


def test_a_file_emptied_since_it_was_added_loses_its_chunks(kb: KnowledgeBase, docs: Path) -> None:
    notes = docs / "notes.txt"
    assert kb.add([notes])[0].status == "added"
    notes.write_text("  \n\n")
    report = kb.add([notes])[0]
    assert report.status == "skipped" and report.code == "KB_EMPTY"
    assert kb.documents() == [] and kb.store.list(scopes=[SCOPE], kinds=["chunk"]) == []


def test_other_chunk_sizes_rechunk_the_same_bytes(kb: KnowledgeBase, docs: Path) -> None:
    guide = docs / "guide.md"
    first = kb.add([guide])[0]
    finer = KnowledgeBase(kb.store, SCOPE, chunk_size=20, overlap=4)
    again = finer.add([guide])[0]
    assert again.status == "replaced" and again.doc_id == first.doc_id
    assert again.chunks > first.chunks
    chunks = kb.store.list(scopes=[SCOPE], kinds=["chunk"], limit=500)
    assert len(chunks) == again.chunks
    assert finer.add([guide])[0].status == "unchanged"


CHROME_PAGE = b"""<!doctype html><html><head><title>Ops handbook</title></head><body>
<header class="site"><a href="/">ACME Docs</a><nav><a href="/a">Home</a> <a href="/b">Pricing</a>
<a href="/c">Careers</a></nav></header>
<div role="navigation"><a href="/x">Skip to sidebar menu</a></div>
<main>
  <article>
    <header><h1 id="deploy">Deploy guide</h1><p>Last reviewed by the ops team.</p></header>
    <p>Deployments roll out to the canary pool first.</p>
    <aside>Related: our careers page is hiring.</aside>
    <h2>Canary</h2><p>The canary pool takes five percent of traffic for fifteen minutes.</p>
    <h3 id="rollback">Rollback</h3><p>A failed canary is rolled back automatically.</p>
    <div hidden>cookie consent banner text</div>
  </article>
</main>
<aside><h2>Newsletter</h2><p>Subscribe to the newsletter.</p></aside>
<footer><p>Copyright ACME Corporation. Imprint and privacy policy.</p></footer>
</body></html>"""

NO_LANDMARK_PAGE = b"""<html><body>
<div class="menu"><a href="/1">Products</a><a href="/2">Solutions</a><a href="/3">Partners</a></div>
<ul><li><a href="/4">Blog</a></li><li><a href="/5">Events</a></li>
<li><a href="/6">Press</a></li></ul>
<div role="banner">Big promotional banner</div>
<h1>Backups</h1>
<p>Backups run nightly at two o'clock and are kept for thirty days.</p>
<ul><li>Databases are dumped first.</li><li>Then <a href="/f">files</a> are copied.</li>
<li>Last, the copy is verified.</li></ul>
</body></html>"""


def test_html_keeps_the_main_content_and_drops_page_chrome() -> None:
    doc = load_html(CHROME_PAGE, "ops.html")
    for chrome in ("ACME Docs", "Pricing", "Skip to sidebar", "careers page", "Newsletter",
                   "Copyright", "cookie consent"):  # fmt: skip
        assert chrome not in doc.text, chrome
    for content in ("Deployments roll out", "five percent", "rolled back automatically",
                    "Last reviewed"):  # fmt: skip  # an article's own header is content
        assert content in doc.text, content
    assert doc.title == "Ops handbook"
    assert [(h.text, h.level, h.anchor) for h in doc.headings] == [
        ("Deploy guide", 1, "deploy"),
        ("Canary", 2, None),
        ("Rollback", 3, "rollback"),
    ]


def test_html_without_a_landmark_drops_link_lists_but_keeps_content_lists() -> None:
    doc = load_html(NO_LANDMARK_PAGE, "b.html")
    for chrome in ("Products", "Partners", "Blog", "Press", "promotional banner"):
        assert chrome not in doc.text, chrome
    assert "Backups run nightly" in doc.text
    assert "Databases are dumped first." in doc.text and "Then files are copied." in doc.text


def test_html_chunks_cite_their_heading_path(tmp_path: Path) -> None:
    page = tmp_path / "ops.html"
    page.write_bytes(CHROME_PAGE)
    store = SqliteMemoryStore(tmp_path / "m.db", default_embedder())
    try:
        kb = KnowledgeBase(store, SCOPE, chunk_size=20, overlap=4)
        assert kb.add([page])[0].chunks >= 3
        chunks = store.list(scopes=[SCOPE], kinds=["chunk"])
        assert not any("Pricing" in c.text or "Copyright" in c.text for c in chunks)
        [canary] = kb.search("canary pool five percent of traffic", k=1, mode="keyword")
        assert canary.heading_path == ("Deploy guide", "Canary")
        assert canary.section == "Deploy guide › Canary"
        # Its own heading has no id: the deepest one above that has names the place.
        assert canary.citation == f"{page.resolve()}#deploy"
        [rollback] = kb.search("failed canary rolled back automatically", k=1, mode="keyword")
        assert rollback.section == "Deploy guide › Canary › Rollback"
        assert rollback.citation == f"{page.resolve()}#rollback"
        assert render_passages([rollback]).startswith(
            f"[1] {page.resolve()}#rollback § Deploy guide › Canary › Rollback\n"
        )
    finally:
        store.close()


def test_passages_under_no_anchor_are_cited_by_chunk(tmp_path: Path) -> None:
    page = tmp_path / "b.html"
    page.write_bytes(NO_LANDMARK_PAGE)
    store = SqliteMemoryStore(tmp_path / "m.db", default_embedder())
    try:
        kb = KnowledgeBase(store, SCOPE)
        kb.add([page])
        [backups] = kb.search("nightly backups kept thirty days", k=1)
        assert backups.chunk == 1 and backups.section == "Backups"
        assert backups.citation == f"{page.resolve()}#chunk=1"
    finally:
        store.close()


def test_files_indexed_by_older_loaders_are_indexed_again(
    kb: KnowledgeBase, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import xclaw.memory.kb as kb_module

    monkeypatch.setattr(kb_module, "LOADER_VERSION", 1)
    first = kb.add([docs / "page.html"])[0]
    monkeypatch.undo()
    again = kb.add([docs / "page.html"])[0]
    assert again.status == "replaced" and again.doc_id == first.doc_id
    assert kb.add([docs / "page.html"])[0].status == "unchanged"


def test_markdown_heading_paths_in_sources(kb: KnowledgeBase, docs: Path) -> None:
    kb.add([docs / "guide.md"])
    [network] = kb.search("outbound network access", k=1, mode="keyword")
    assert network.heading_path == ("Sandbox guide", "Network")
    assert network.as_dict()["section"] == "Sandbox guide › Network"
