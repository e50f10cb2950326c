"""A stand-in for the ChatGPT web page, served on loopback, for the web adapter's tests.

Two sites, same server and switches: ``fixture_site/`` (the 2025 page: article turns, a header
model switcher) and ``fixture_site_2026/`` (written from public records of the 2026 page:
section turns with ``data-turn``, the ``__composer-pill`` opening a picker whose rows carry
effort controls with ``model-switcher-`` test ids, toasts for limits, in-turn errors with a
Retry button). Each is our own code reproducing the states the adapter must handle: signed in
or out, verification challenges (strong and weak evidence), a streamed reply with a stop
button then a finished turn with a copy button, a "thinking" preamble that looks finished, a
mode menu (disabled items, an empty first render, rows without a checkmark), error banners, a
file input, and conversation URLs ``/c/<id>`` that reload a conversation.

Page variants (``variant``): ``current``; ``outdated`` (no composer the adapter knows);
``renamed`` (ids and test ids renamed: only the fallbacks match); ``no_action_bar`` (finished
turns without an action bar); ``no_copy`` (an action bar without a copy button); and
``flat_insert``. Per reply: a preamble (``thinking``), a banner until cleared (``banner``), a
stall mid-way (``cut_ms``), an error with a Retry button (``error``), a stream that never ends
(``endless``, also after a reload, until ``finish_streams``), and signing out once it is
answered (``sign_out_after``).

Tests drive it through ``FixtureSite`` in the same process (``configure``, ``queue``,
``use_script``, ``posted``); a person can drive it over HTTP (``POST /__control`` with JSON).
Replies come from a queue of texts or from a ``ScriptedTransport`` fed the message the page
posted, so a scripted run can be answered by the page in the XML protocol.

By hand: ``python tests/browser/fixture_server.py --port 8765 --script demo``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from xclaw.models.text.transport import ScriptedReply, ScriptedTransport

SITE_DIR = Path(__file__).parent / "fixture_site"
SITE_2026_DIR = Path(__file__).parent / "fixture_site_2026"
DEMO_SCRIPT = Path(__file__).parents[2] / "src" / "xclaw" / "coding" / "demo" / "script.yaml"
# Secrets the page carries, so tests can check a diagnostic bundle masks them.
SECRET_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmaXh0dXJlLXVzZXIifQ.c2lnbmF0dXJlLWZpeHR1cmU"
SECRET_KEY = "sk-proj-FIXTUREfixture0123456789abcdef"
DEFAULT_MENU = (
    {"slug": "gpt-5-instant", "label": "Sofort"},
    {"slug": "gpt-5-thinking", "label": "Denken"},
    {"slug": "gpt-5-pro", "label": "Profi"},
)
# The 2026 picker: rows with effort controls inside them, and a submenu of older models.
MENU_2026 = (
    {"slug": "gpt-5-3", "label": "Instantané"},
    {"slug": "gpt-5-5-thinking", "label": "Réflexion", "effort": True},
    {"slug": "gpt-5-5-pro", "label": "Pro", "effort": True},
    {"slug": "legacy-models", "label": "Anciens modèles", "submenu": True},
)
_CONVERSATION = re.compile(r"^/backend-api/conversation/([A-Za-z0-9-]+)$")
_PAGE = re.compile(r"^/(c/[A-Za-z0-9-]+/?)?$")


@dataclass
class Reply:
    """One scripted answer and how the page plays it."""

    text: str
    thinking: str | None = None  # a preamble that sits still, stop button gone, before the answer
    banner: str | None = None  # an error banner halfway through, until ``clear_banner``
    chunk: int = 40  # characters per streamed step
    interval_ms: int = 15  # between steps
    cut_ms: int = 0  # halfway: the stream stalls this long, stop button gone, then goes on
    error: str | None = None  # halfway: the stream ends in this error, with a Retry button
    endless: bool = False  # halfway: the stream goes quiet and never ends, even after a reload
    sign_out_after: bool = False  # the session ends once this reply is answered


@dataclass
class SiteState:
    auth: str = "in"  # "in" | "out"
    challenge: str | None = None  # None | "strong" | "weak"
    # "current", "outdated" (no composer the adapter knows), "renamed" (ids and test ids
    # renamed), "no_action_bar", "no_copy" (an action bar without a copy button), "flat_insert"
    # (the editor flattens newlines in inserted text)
    variant: str = "current"
    copy: str = "clipboard"  # "clipboard" | "execcommand" | "broken"
    menu: list[dict[str, Any]] = field(default_factory=lambda: [dict(i) for i in DEFAULT_MENU])
    menu_empty_first: bool = False  # the first opening of the menu renders no items
    menu_marks_checked: bool = True  # False: no row says it is the active one (no checkmark)
    current_mode: str = "gpt-5-instant"
    banner: str | None = None  # the banner showing now (set while a reply plays one)
    conversations: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    posted: list[dict[str, Any]] = field(default_factory=list)


class FixtureSite:
    """The server and its state. ``url`` ends with '/'."""

    def __init__(self, port: int = 0, site_dir: Path = SITE_DIR) -> None:
        self.site_dir = site_dir
        self.state = self.fresh_state()
        self.lock = threading.Lock()
        self.replies: deque[Reply] = deque()
        self.scripted: ScriptedTransport | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def start(self) -> FixtureSite:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    # -- control -------------------------------------------------------------------------

    @property
    def year(self) -> str:
        return "2026" if self.site_dir == SITE_2026_DIR else "2025"

    def fresh_state(self) -> SiteState:
        if self.year == "2025":
            return SiteState()
        return SiteState(menu=[dict(i) for i in MENU_2026], current_mode="gpt-5-3")

    def reset(self) -> None:
        with self.lock:
            self.state = self.fresh_state()
            self.replies.clear()
            self.scripted = None

    def configure(self, **changes: Any) -> None:
        with self.lock:
            for key, value in changes.items():
                if not hasattr(self.state, key):
                    raise KeyError(f"no site setting {key!r}")
                setattr(self.state, key, value)

    def queue(self, *replies: str | Reply) -> None:
        with self.lock:
            self.replies.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)

    def use_script(self, transport: ScriptedTransport) -> None:
        """Answer every message with ``transport.send(message)`` (the XML protocol)."""
        with self.lock:
            self.scripted = transport

    def finish_streams(self) -> None:
        """Every endless reply has finished on the server: a reload shows it whole (as the
        real site does once a generation the adapter stopped waiting for ends)."""
        with self.lock:
            for history in self.state.conversations.values():
                for message in history:
                    if message.pop("endless", False):
                        message["text"] = message.pop("full")

    def clear_banner(self) -> None:
        self.configure(banner=None)

    @property
    def posted(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.state.posted)

    # -- the page's API ------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """A message from the page: store it, pick the reply, say how to play it."""
        text = str(body.get("text", ""))
        with self.lock:
            if self.state.auth != "in":
                return {"error": "unauthorized"}
            cid = body.get("conversation_id") or uuid.uuid4().hex[:12]
            self.state.posted.append(
                {
                    "text": text,
                    "conversation_id": cid,
                    "model": self.state.current_mode,
                    "attachments": list(body.get("attachments") or []),
                }
            )
            scripted = self.scripted
            reply = None if scripted else (self.replies.popleft() if self.replies else None)
        if scripted is not None:
            try:
                reply = Reply(asyncio.run(scripted.send(text)), chunk=400)
            except Exception as err:  # noqa: BLE001 - shown in the page, where the test reads it
                reply = Reply(f"[fixture script error] {err}")
        if reply is None:
            reply = Reply("(the fixture has no reply queued)")
        answer: dict[str, Any] = {"role": "assistant", "text": reply.text}
        if reply.endless:  # a reload shows it still running, half written (until finish_streams)
            answer = {
                "role": "assistant",
                "text": reply.text[: len(reply.text) // 2],
                "endless": True,
                "full": reply.text,
            }
        with self.lock:
            history = self.state.conversations.setdefault(cid, [])
            history += [{"role": "user", "text": text}, answer]
            if reply.sign_out_after:
                self.state.auth = "out"
        return {"conversation_id": cid, "reply": asdict(reply)}

    def page_config(self) -> dict[str, Any]:
        with self.lock:
            s = self.state
            return {
                "auth": s.auth,
                "variant": s.variant,
                "copy": s.copy,
                "menu": s.menu,
                "menu_empty_first": s.menu_empty_first,
                "menu_marks_checked": s.menu_marks_checked,
                "current_mode": s.current_mode,
                "banner": s.banner,
            }


def _handler(site: FixtureSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            _get(site, self)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            _post(site, self, json.loads(raw) if raw else {})

    return Handler


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, kind: str) -> None:
    handler.send_response(status)
    handler.send_header("content-type", kind)
    handler.send_header("content-length", str(len(body)))
    handler.send_header("cache-control", "no-store")
    handler.end_headers()
    handler.wfile.write(body)


def _json(handler: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
    _send(handler, status, json.dumps(value).encode(), "application/json")


def _file(site: FixtureSite, name: str) -> Path:
    """The site's own file, else the 2025 site's (the challenge pages are not ChatGPT's)."""
    own = site.site_dir / name
    return own if own.exists() else SITE_DIR / name


def _html(site: FixtureSite, name: str) -> bytes:
    text = _file(site, name).read_text(encoding="utf-8")
    return text.replace("{{SECRET_JWT}}", SECRET_JWT).replace("{{SECRET_KEY}}", SECRET_KEY).encode()


def _get(site: FixtureSite, h: BaseHTTPRequestHandler) -> None:
    path = h.path.split("?", 1)[0]
    challenge = site.state.challenge
    if path in ("/common.js", "/app.js", "/style.css"):
        kind = "text/javascript" if path.endswith(".js") else "text/css"
        _send(h, 200, _file(site, path[1:]).read_bytes(), kind + "; charset=utf-8")
    elif path == "/api/challenge":
        _json(h, {"challenge": challenge})
    elif challenge and (path == "/api/auth/session" or _PAGE.match(path)):
        status = 403 if path.startswith("/api/") else 200
        _send(h, status, _html(site, f"challenge_{challenge}.html"), "text/html; charset=utf-8")
    elif path == "/api/auth/session":
        signed_in = site.state.auth == "in"
        user = {"id": "user-fixture", "name": "Fixture User", "email": "fixture@example.invalid"}
        _json(h, {"user": user, "accessToken": SECRET_JWT} if signed_in else {})
    elif path == "/backend-api/state":
        _json(h, site.page_config())
    elif (found := _CONVERSATION.match(path)) is not None:
        history = site.state.conversations.get(found.group(1))
        if history is None:
            _json(h, {"error": "no such conversation"}, 404)
        else:
            _json(h, {"messages": history})
    elif path == "/auth/login":
        _send(h, 200, _html(site, "login.html"), "text/html; charset=utf-8")
    elif _PAGE.match(path):
        _send(h, 200, _html(site, "index.html"), "text/html; charset=utf-8")
    else:
        _json(h, {"error": "not found"}, 404)


def _post(site: FixtureSite, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    path = h.path.split("?", 1)[0]
    if path == "/backend-api/conversation":
        answer = site.answer(body)
        _json(h, answer, 401 if "error" in answer else 200)
    elif path == "/backend-api/mode":
        site.configure(current_mode=str(body["slug"]))
        _json(h, {"ok": True})
    elif path == "/backend-api/banner":
        site.configure(banner=body.get("banner"))
        _json(h, {"ok": True})
    elif path == "/auth/complete":
        site.configure(auth="in")
        _json(h, {"ok": True})
    elif path == "/__control":
        replies = body.pop("queue", [])
        site.configure(**body)
        site.queue(*(Reply(**r) if isinstance(r, dict) else str(r) for r in replies))
        _json(h, site.page_config())
    else:
        _json(h, {"error": "not found"}, 404)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="'demo' or a script file: answer in the XML protocol")
    parser.add_argument("--logged-out", action="store_true")
    parser.add_argument("--site", choices=("2025", "2026"), default="2025")
    args = parser.parse_args()
    site = FixtureSite(args.port, SITE_2026_DIR if args.site == "2026" else SITE_DIR)
    if args.script:
        from xclaw.models.scripted import load_script
        from xclaw.models.text.transport import script_to_xml

        path = DEMO_SCRIPT if args.script == "demo" else Path(args.script)
        site.use_script(ScriptedTransport(script_to_xml(load_script(path))))
    if args.logged_out:
        site.configure(auth="out")
    site.start()
    print(site.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        site.stop()


__all__ = [
    "DEMO_SCRIPT",
    "MENU_2026",
    "SITE_2026_DIR",
    "SITE_DIR",
    "FixtureSite",
    "Reply",
    "ScriptedReply",
    "SECRET_JWT",
    "SECRET_KEY",
]

if __name__ == "__main__":
    main()
