"""A loopback HTTP server for the page fixtures (``fixtures/``, our own HTML).

Static files, plus ``Content-Security-Policy: script-src 'self'`` on ``csp.html`` (a page that
forbids ``eval``/``new Function``). By hand: ``python tests/page/page_server.py --port 8766``.
"""

from __future__ import annotations

import argparse
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


class _Handler(SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        if self.path.split("?")[0].endswith("csp.html"):
            self.send_header("Content-Security-Policy", "script-src 'self'")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # quiet tests


class PageServer:
    """Serves ``fixtures/`` on 127.0.0.1 at a free port; ``url(name)`` addresses a page."""

    def __init__(self, root: Path = FIXTURES) -> None:
        handler = partial(_Handler, directory=str(root))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self._server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return self.base + name

    def start(self) -> PageServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8766)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(_Handler, directory=str(FIXTURES)))
    print(f"serving {FIXTURES} on http://127.0.0.1:{port}/")
    server.serve_forever()
