"""The diagnostic bundle written when the page no longer matches the adapter.

``<data dir>/diagnostics/<timestamp>/`` (owner-only) holds ``page.html`` (scripts emptied,
form values dropped, then redacted), ``screenshot.png`` (inputs and editors masked) and
``info.json`` (adapter version, what was missing, every strategy tried, the URL; redacted).
Each part is best effort: a page that died mid-way still leaves ``info.json``. The masked
screenshot is also what a takeover offered to the web UI shows (``masked_screenshot``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from xclaw.dirs import data_dir
from xclaw.models.chatgpt_web.dom import Attempt
from xclaw.models.chatgpt_web.locators import ADAPTER_VERSION
from xclaw.models.chatgpt_web.scripts import SANITIZED_HTML
from xclaw.redact import redact, redact_json

# Anything a person may have typed: masked in the screenshot.
_TYPED = "input, textarea, [contenteditable]:not([contenteditable='false'])"


def _bundle_dir() -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 10**9:09d}"
    path = data_dir() / "diagnostics" / stamp
    path.mkdir(parents=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _write(path: Path, data: str | bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


async def masked_screenshot(page: Page, *, full_page: bool = False, jpeg: bool = False) -> bytes:
    """The page as a person sees it, with whatever may have been typed masked."""
    kind: Literal["jpeg", "png"] = "jpeg" if jpeg else "png"
    return await page.screenshot(
        full_page=full_page,
        mask=[page.locator(_TYPED)],
        timeout=10_000,
        type=kind,
        quality=70 if jpeg else None,
    )


async def write_bundle(page: Page, *, missing: str, tried: Sequence[Attempt]) -> Path:
    """Save what is needed to update the locators; returns the bundle's directory."""
    path = _bundle_dir()
    info: dict[str, Any] = {
        "adapter_version": ADAPTER_VERSION,
        "missing": missing,
        "tried": [a.to_dict() for a in tried],
        "url": page.url,
        "parts": [],
    }
    try:
        info["title"] = await page.title()
        _write(path / "page.html", redact(await page.evaluate(SANITIZED_HTML)))
        info["parts"].append("page.html")
        _write(path / "screenshot.png", await masked_screenshot(page, full_page=True))
        info["parts"].append("screenshot.png")
    except PlaywrightError as err:
        info["error"] = str(err).splitlines()[0] if str(err) else type(err).__name__
    _write(path / "info.json", json.dumps(redact_json(info), indent=2, ensure_ascii=False))
    return path
