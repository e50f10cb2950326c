"""bench/page_corpus.py against a registry of our own on loopback (the real one is never used).

The fake registry answers like npm's: package metadata with ``dist.tarball`` and ``dist.integrity``,
then the tarball. Checked: only real-size HTML under the listed folders is extracted, the
integrity is enforced, the manifest makes a second call offline, and ``serve`` serves the pages.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import sys
import tarfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import page_corpus  # noqa: E402
from page_corpus import Source, corpus, page_url, serve  # noqa: E402

PAGE = b"<!doctype html><title>saved</title><a href='/x'>link</a>" + b"<p>text</p>" * 1000
SOURCE = Source("@demo/fixtures", "1.0.0", ("package/fixtures/",))


def tarball() -> bytes:
    members = {
        "package/fixtures/site.com/1.html": PAGE,
        "package/fixtures/other.htm": PAGE + b"<!-- other -->",
        "package/fixtures/dup.html": PAGE,  # the same bytes as 1.html
        "package/fixtures/snippet.html": b"<embed src=x>",  # too small to be a page
        "package/src/outside.html": PAGE + b"<!-- not a fixture folder -->",
        "package/fixtures/notes.txt": PAGE,
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


class Registry:
    def __init__(self, data: bytes, integrity: str) -> None:
        self.data, self.integrity, self.hits = data, integrity, 0


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Registry]:
    data = tarball()
    state = Registry(data, "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode())

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits += 1
            if self.path == "/@demo%2Ffixtures/1.0.0":
                dist = {"tarball": "/files/demo-1.0.0.tgz", "integrity": state.integrity}
                body = json.dumps({"license": "MIT", "dist": dist}).encode()
            elif self.path == "/files/demo-1.0.0.tgz":
                body = state.data
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(page_corpus, "NPM_REGISTRY", f"http://127.0.0.1:{server.server_port}/")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_corpus_extracts_pages_and_reuses_the_cache(registry: Registry) -> None:
    lines: list[str] = []
    pages = corpus(min_pages=2, sources=(SOURCE,), log=lines.append)
    names = sorted(p.name for p in pages)
    # dup.html and site.com/1.html have the same bytes: the first in name order stays
    assert names == ["demo-fixtures/fixtures/dup.html", "demo-fixtures/fixtures/other.htm"]
    assert {p.source for p in pages} == {"npm:@demo/fixtures@1.0.0"}
    assert {p.licence for p in pages} == {"MIT"}
    assert all(p.path.read_bytes().startswith(PAGE) for p in pages)
    assert any("2 pages from npm:@demo/fixtures@1.0.0" in line for line in lines)
    hits = registry.hits
    again = corpus(min_pages=2, sources=(SOURCE,), log=lines.append)
    assert [p.name for p in again] == [p.name for p in pages]
    assert registry.hits == hits  # the manifest answered; no request went out


def test_corpus_refuses_a_tarball_that_fails_its_integrity(registry: Registry) -> None:
    registry.integrity = "sha512-" + base64.b64encode(hashlib.sha512(b"other").digest()).decode()
    with pytest.raises(RuntimeError, match="integrity mismatch"):
        corpus(min_pages=1, sources=(SOURCE,), log=lambda _: None)


def test_corpus_demands_enough_pages(registry: Registry) -> None:
    with pytest.raises(RuntimeError, match="only 2 corpus pages, 100 needed"):
        corpus(min_pages=100, sources=(SOURCE,), log=lambda _: None)


def test_serve_answers_each_page_and_404_otherwise(registry: Registry) -> None:
    pages = corpus(min_pages=2, sources=(SOURCE,), log=lambda _: None)
    with serve(pages) as base:
        assert base.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(page_url(base, pages[0]), timeout=5) as response:
            assert response.read() == pages[0].path.read_bytes()
            assert response.headers["Content-Type"] == "text/html"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(base + "/nothing.html", timeout=5)
        assert missing.value.code == 404
        missing.value.close()
