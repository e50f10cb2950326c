"""Two loopback servers for the navigation-guard tests: ``Site`` is the page the model was
allowed to open (trusted like a user's ``browsing.allow_hosts``), ``Inner`` stands for a
service nobody trusted (a router page, a database console: loopback asks like any private
address). ``Site`` pages try to reach ``Inner`` every way a page can; ``Inner`` counts what
reached it, so a test can tell a blocked request from one that was merely hidden.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser
from xclaw.browser.session import BrowserTimeouts
from xclaw.core.errors import ConfigError

FAST = BrowserTimeouts(navigation_s=10, action_s=2, settle_s=1.5, quiet_ms=100)


def browser_options() -> BrowserOptions:
    try:
        executable = str(find_browser())
    except ConfigError:
        executable = None
    return BrowserOptions(executable=executable, headless=True, args=CONTAINER_ARGS)


class _Server:
    def __init__(self, pages: dict[str, Any]) -> None:
        self.pages = pages
        self.hits: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _answer(self) -> None:
                owner.hits.append(self.path)
                page = owner.pages.get(self.path.split("?")[0])
                if page is None:
                    page = f"<title>{self.path}</title><p>page {self.path}</p>"
                if isinstance(page, tuple):  # (status, location)
                    self.send_response(page[0])
                    self.send_header("Location", page[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._answer()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def site_pages(inner: str) -> dict[str, Any]:
    """The trusted site's pages, each reaching for ``inner`` (the untrusted server) one way."""
    return {
        "/start": "<title>Start</title><h1>Start</h1><a id='near' href='/next'>Next</a>",
        "/redirect": (302, f"{inner}/secret?via=redirect"),
        "/hop": (302, "/redirect"),  # a same-site hop first, then the private one
        "/meta": f"<title>Meta</title><meta http-equiv='refresh' content='0;url={inner}/secret'>",
        "/script": f"<title>Script</title><script>location = '{inner}/secret?via=script'</script>",
        "/later": "<title>Later</title><p>waiting</p><script>setTimeout(() =>"
        f" location.href = '{inner}/secret?via=later', 400)</script>",
        "/link": "<title>Link</title><a id='go' href='/hop'>Go</a>",
        "/form": f"<title>Form</title><form method='post' action='{inner}/secret?via=form'>"
        "<input name='q' value='x'><button id='send'>Send</button></form>",
        "/frame": f"<title>Frame</title><iframe src='{inner}/secret?via=iframe'></iframe>",
        "/fetch": "<title>Fetch</title><p id='out'>pending</p><script>"
        f"fetch('{inner}/secret?via=fetch').then(r => r.text())"
        ".then(t => document.getElementById('out').textContent = 'read: ' + t.length,"
        " e => document.getElementById('out').textContent = 'failed')</script>",
        "/file": "<title>File</title><a id='pw' href='file:///etc/passwd'>passwd</a>",
        "/socket": "<title>Socket</title><p id='out'>pending</p><script>"
        "const url = new URLSearchParams(location.search).get('to');"
        "const ws = new WebSocket(url);"
        "ws.onopen = () => ws.send('ping');"
        "ws.onmessage = e => document.getElementById('out').textContent = 'got ' + e.data;"
        "ws.onclose = () => { const o = document.getElementById('out');"
        " if (o.textContent === 'pending') o.textContent = 'closed'; };</script>",
    }


def start_servers() -> tuple[_Server, _Server]:
    inner = _Server({"/secret": "<title>Inner secret</title><p>router admin</p>"})
    site = _Server(site_pages(inner.url))
    return site, inner
