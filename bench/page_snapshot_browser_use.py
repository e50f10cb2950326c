"""browser-use's full-page DOM serializer as a peer in bench/page_snapshot.py.

browser-use is heavy and no dependency of xclaw, so it lives in a virtual environment of its own
under the bench cache (``${XDG_CACHE_HOME:-~/.cache}/xclaw-bench/browser-use-venv``, installed
with pip on first use). Two halves in this file:

- host side (``BrowserUse.start``, imported by page_snapshot.py): installs the venv, launches a
  Chromium from the same binary with ``--remote-debugging-port`` (1280x800, offline: everything
  but loopback goes to a dead proxy), and runs this file in the venv as a worker;
- worker side (``python page_snapshot_browser_use.py CDP_URL`` in the venv): connects
  browser-use's ``BrowserSession`` over CDP and answers one JSON line per request on stdin:
  ``{"url", "runs", "modes": [[threshold, baseline_js], ...], "index_js"}`` -> ``@@{"modes":
  [{"text", "ms", "baseline", "matched", "refs"}, ...]}``, the page loaded once for all modes.

The serializer is ``DomService(session, viewport_threshold=T).get_serialized_dom_tree()`` and
then ``llm_representation()``, what browser-use's agent puts in the prompt. ``T=None`` is its
switch for the whole page; its default, 1000, the viewport plus 1000 px above and below, is what
its agent sends (``DOMWatchdog`` builds ``DomService`` without a threshold). A run is timed from
the call to the finished text, after one warm-up run. Recall: each selector-map node (browser-
use's numbered elements) is resolved by backend node id and looked up among the baseline elements
that the mode's baseline script found in the worker's tab.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

SPEC = "browser-use==0.13.14"  # the release this bench was written against
REQUEST_TIMEOUT_S = 180.0


def venv_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "xclaw-bench" / "browser-use-venv"


class Unavailable(Exception):
    """browser-use cannot be installed or started here; the message says why."""


class BrowserUse:
    """The host side: one Chromium and one worker process for the whole bench run."""

    def __init__(self) -> None:
        self.venv = venv_dir()
        self.version = ""
        self.unavailable: str | None = None
        self._chromium: subprocess.Popen[bytes] | None = None
        self._worker: asyncio.subprocess.Process | None = None
        self._profile = tempfile.TemporaryDirectory(
            prefix="xclaw-bench-bu-", ignore_cleanup_errors=True
        )

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls, chromium: str, viewport: dict[str, int], args: tuple[str, ...]
    ) -> AsyncIterator[BrowserUse]:
        peer = cls()
        try:
            python = await asyncio.to_thread(peer._install)
            cdp_url = await asyncio.to_thread(peer._launch, chromium, viewport, args)
            await peer._start_worker(python, cdp_url)
        except Unavailable as exc:
            peer.unavailable = str(exc)
        try:
            yield peer
        finally:
            await peer.close()

    def _install(self) -> Path:
        python = self.venv / "bin" / "python"
        probe = [
            str(python),
            "-c",
            "import browser_use, importlib.metadata as m;print(m.version('browser-use'))",
        ]
        if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
            return python
        print(f"browser-use: installing {SPEC} into {self.venv} (first run only)", flush=True)
        log = self.venv.parent / "browser-use-install.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        steps = [
            [sys.executable, "-m", "venv", str(self.venv)],
            [str(python), "-m", "pip", "install", "-q", SPEC],
        ]
        with log.open("w") as out:
            for step in steps:
                try:
                    done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=1200)
                except subprocess.TimeoutExpired as exc:
                    raise Unavailable(f"`{' '.join(step)}` timed out; see {log}") from exc
                if done.returncode:
                    raise Unavailable(f"`{' '.join(step)}` failed ({done.returncode}); see {log}")
        return python

    def _launch(self, chromium: str, viewport: dict[str, int], args: tuple[str, ...]) -> str:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command = [
            chromium,
            "--headless=new",
            f"--remote-debugging-port={port}",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={viewport['width']},{viewport['height']}",
            # Loopback bypasses a proxy by default; everything else meets a closed port.
            "--proxy-server=http://127.0.0.1:9",
            *args,
            "about:blank",
        ]
        self._chromium = subprocess.Popen(  # its own process group: closed as one
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        url = f"http://127.0.0.1:{port}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                opener.open(url + "/json/version", timeout=2).read()
                return url
            time.sleep(0.1)
        raise Unavailable(f"{chromium} did not open its CDP port {port} within 20 s")

    async def _start_worker(self, python: Path, cdp_url: str) -> None:
        env = {
            **os.environ,
            "ANONYMIZED_TELEMETRY": "false",
            "BROWSER_USE_CLOUD_SYNC": "false",
            "BROWSER_USE_LOGGING_LEVEL": "critical",
            "BROWSER_USE_SETUP_LOGGING": "false",
        }
        log = (self.venv.parent / "browser-use-worker.log").open("w")
        self._worker = await asyncio.create_subprocess_exec(
            str(python),
            __file__,
            cdp_url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env=env,
            limit=64 * 1024 * 1024,
        )
        try:
            ready = await asyncio.wait_for(self._reply(), timeout=60)
        except (TimeoutError, Unavailable) as exc:
            raise Unavailable(
                f"the browser-use worker did not start ({exc}); see {log.name}"
            ) from exc
        self.version = f"browser-use {ready.get('version')}"

    async def _reply(self) -> dict[str, Any]:
        assert self._worker and self._worker.stdout
        while line := await self._worker.stdout.readline():
            if line.startswith(b"@@"):
                reply: dict[str, Any] = json.loads(line[2:])
                return reply
        raise Unavailable("the browser-use worker exited")

    async def measure(
        self, url: str, modes: list[tuple[int | None, str]], index_js: str, runs: int
    ) -> dict[str, Any]:
        """Serialize ``url`` ``runs`` times after a warm-up in each ``(threshold, baseline_js)``
        mode; raises RuntimeError on failure."""
        assert self._worker and self._worker.stdin
        request = {"url": url, "runs": runs, "modes": modes, "index_js": index_js}
        self._worker.stdin.write((json.dumps(request) + "\n").encode())
        await self._worker.stdin.drain()
        reply = await asyncio.wait_for(self._reply(), timeout=REQUEST_TIMEOUT_S)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    async def close(self) -> None:
        if self._worker and self._worker.returncode is None:
            assert self._worker.stdin
            self._worker.stdin.close()
            try:
                await asyncio.wait_for(self._worker.wait(), timeout=15)
            except TimeoutError:
                self._worker.kill()
                await self._worker.wait()
        if self._chromium:
            await asyncio.to_thread(self._stop_chromium, self._chromium)
        self._profile.cleanup()

    @staticmethod
    def _stop_chromium(chromium: subprocess.Popen[bytes]) -> None:
        group = chromium.pid  # start_new_session made it the group leader
        for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                chromium.wait(timeout=wait_s)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:  # the renderers and helpers too
                try:
                    os.killpg(group, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.05)


# ---- worker side: runs in the browser-use venv -------------------------------------------


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write("@@" + json.dumps(payload) + "\n")
    sys.stdout.flush()


async def evaluate(session: Any, expression: str) -> Any:
    cdp = await session.get_or_create_cdp_session()
    reply = await cdp.cdp_client.send.Runtime.evaluate(
        params={"expression": expression, "returnByValue": True, "awaitPromise": True},
        session_id=cdp.session_id,
    )
    return reply.get("result", {}).get("value")


async def load(session: Any, url: str) -> None:
    await session.navigate_to(url)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if await evaluate(session, "document.readyState") == "complete":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)  # the settle time the other systems get


async def matched(session: Any, selector_map: dict[int, Any], index_js: str) -> int:
    """How many distinct baseline elements the selector map's nodes stand for."""
    cdp = await session.get_or_create_cdp_session()
    send, sid = cdp.cdp_client.send, cdp.session_id

    async def resolve(backend_id: int) -> str | None:
        try:
            reply = await send.DOM.resolveNode(params={"backendNodeId": backend_id}, session_id=sid)
        except Exception:  # a node gone since the snapshot is simply not matched
            return None
        object_id: str | None = reply.get("object", {}).get("objectId")
        return object_id

    ids = [node.backend_node_id for node in selector_map.values()]
    objects = [o for o in await asyncio.gather(*(resolve(i) for i in ids)) if o]
    if not objects:
        return 0
    document = await send.Runtime.evaluate(params={"expression": "document"}, session_id=sid)
    reply = await send.Runtime.callFunctionOn(
        params={
            "functionDeclaration": f"function(...els) {{ return ({index_js})(els); }}",
            "objectId": document["result"]["objectId"],
            "arguments": [{"objectId": o} for o in objects],
            "returnByValue": True,
        },
        session_id=sid,
    )
    return int(reply.get("result", {}).get("value") or 0)


async def serialize(session: Any, request: dict[str, Any]) -> dict[str, Any]:
    from browser_use.dom.service import DomService  # type: ignore[import-not-found]

    await load(session, request["url"])
    out = []
    for threshold, baseline_js in request["modes"]:
        baseline = int(await evaluate(session, f"({baseline_js})()") or 0)
        service = DomService(session, viewport_threshold=threshold)
        times: list[float] = []
        text, state = "", None
        for _ in range(int(request["runs"]) + 1):
            start = time.perf_counter()
            state, _tree, _timing = await service.get_serialized_dom_tree()
            text = state.llm_representation()
            times.append((time.perf_counter() - start) * 1000)
        assert state is not None
        hits = await matched(session, state.selector_map, request["index_js"])
        out.append(
            {
                "text": text,
                "ms": times[1:],
                "baseline": baseline,
                "matched": hits,
                "refs": len(state.selector_map),
            }
        )
    return {"modes": out}


async def worker(cdp_url: str) -> int:
    import logging
    from importlib.metadata import version

    from browser_use.browser import BrowserProfile, BrowserSession  # type: ignore[import-not-found]

    logging.disable(logging.CRITICAL)
    profile = BrowserProfile(cdp_url=cdp_url, viewport={"width": 1280, "height": 800})
    session = BrowserSession(browser_profile=profile)
    await session.start()
    emit({"ready": True, "version": version("browser-use")})
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            try:
                emit(await serialize(session, json.loads(line)))
            except Exception as exc:  # reported per page; the bench goes on
                emit({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        await session.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(worker(sys.argv[1])))
