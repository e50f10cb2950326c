"""Fixture pages for the browser tool tests, served from loopback, and the harness that runs
one tool call through the real dispatch (inspect → policy → approval → execute).

Pages are our own: a form with every kind of control plus noise (scripts, styles, SVG,
comments, hidden nodes), a long page for paging, a late cookie banner, a modal popup, a page
with destructive buttons and a payment form, a tall page to scroll and a page to land on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser
from xclaw.browser.session import BrowserSession, BrowserTimeouts
from xclaw.core.dispatch import run_tool_calls
from xclaw.core.errors import ConfigError
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunState
from xclaw.core.tooling import Answer, ApprovalRequest
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.registry import BoundToolbox

# The resolver rule lets a public-looking name
# reach the loopback fixture server once a human approved it.
# Short enough for a quick suite, long enough for two busy cores.
FAST = BrowserTimeouts(navigation_s=10, action_s=2, settle_s=2, quiet_ms=120)
TEST_ARGS = (*CONTAINER_ARGS, "--host-resolver-rules=MAP dev.example 127.0.0.1")
# What the policy's resolver is told in tests: names that lead into private networks.
FAKE_DNS = {
    "dev.example": ("127.0.0.2",),
    "intranet.example": ("10.0.0.7",),
    "router.example": ("192.168.1.1",),
    "public.example": ("93.184.216.34",),
}


def browser_executable() -> str | None:
    try:
        return str(find_browser())
    except ConfigError:
        return None


def browser_options() -> BrowserOptions:
    return BrowserOptions(executable=browser_executable(), headless=True, args=TEST_ARGS)


async def fake_resolver(host: str) -> tuple[str, ...]:
    return FAKE_DNS.get(host, ())


NOISE = """
<script>window.__state = {"user": null, "items": [1, 2, 3], "token": "abc"};</script>
<style>.btn-primary { background: linear-gradient(#fff, #000); } .x { color: red; }</style>
<!-- a comment the model must never see -->
<svg width="20" height="20"><path d="M0 0 L10 10 L20 0 Z"></path></svg>
<meta name="csrf-token" content="abc123">
"""

FORM = f"""<!doctype html><html><head><title>Form page</title>{NOISE}</head><body>
<nav class="top-nav"><a href="/next" class="nav-link very-long-class-name">Next page</a></nav>
<main>
<h1 class="title" data-x="1">Order form</h1>
<p style="color: blue">Fill in the form.<span hidden>secret hidden text</span></p>
<div style="display:none"><button>Invisible button</button></div>
<form id="f" onsubmit="event.preventDefault(); document.getElementById('out').textContent =
  'submitted: ' + document.getElementById('name').value">
  <label for="name">Name</label> <input id="name" name="name" placeholder="Your name">
  <input type="hidden" name="csrf" value="zzz">
  <label><input type="checkbox" name="gift" id="gift"> Gift wrap</label>
  <select name="city" id="city"><option>Shanghai</option><option>Beijing</option></select>
  <textarea name="note" id="note" placeholder="Note"></textarea>
  <button type="submit" id="send">Send</button>
</form>
<div contenteditable="true" id="editor">Edit me</div>
<div role="button" tabindex="0" id="fancy" onclick="this.textContent = 'Fancy pressed'">Fancy</div>
<button id="counter" onclick="this.textContent = 'Clicked ' + (++window.n || (window.n = 1))">
  Count</button>
<input id="search" name="q" placeholder="Search" oninput="
  const list = document.getElementById('suggest');
  list.innerHTML = this.value ? '<li role=option>' + this.value + ' one</li>' +
    '<li role=option>' + this.value + ' two</li>' : '';">
<ul id="suggest" role="listbox"></ul>
<p id="out"></p>
</main>
</body></html>"""


def long_page(buttons: int = 40) -> str:
    rows = "".join(
        f"<p>Paragraph {i}: " + "lorem ipsum dolor sit amet " * 8 + f"</p><button id='b{i}'>"
        f"Button {i}</button>"
        for i in range(buttons)
    )
    return f"<!doctype html><html><head><title>Long</title>{NOISE}</head><body>{rows}</body></html>"


COOKIE = """<!doctype html><html><head><title>Cookies</title></head><body>
<h1>News</h1><p>Some article text.</p>
<script>
setTimeout(() => {
  const bar = document.createElement('div');
  bar.id = 'cookie-banner';
  bar.style.cssText = 'position:fixed;bottom:0;left:0;right:0;background:#eee;padding:10px';
  bar.innerHTML = 'We use cookies. <button id="acc">Accept all</button> ' +
    '<button id="cfg">Settings</button>';
  document.body.appendChild(bar);
  document.getElementById('acc').onclick = () => { document.cookie = 'consent=yes'; bar.remove(); };
}, 150);
</script></body></html>"""

MODAL = """<!doctype html><html><head><title>Modal</title></head><body>
<h1>Shop</h1><button id="under" onclick="this.textContent = 'Under clicked'">Under</button>
<div id="overlay" style="position:fixed;inset:0;background:rgba(0,0,0,.5)">
  <div role="dialog" aria-modal="true" style="background:#fff;margin:100px auto;width:300px">
    <p>Subscribe to our newsletter!</p>
    <button class="modal-close" aria-label="Close"
      onclick="document.getElementById('overlay').remove()">×</button>
  </div>
</div></body></html>"""

# Destructive buttons, a payment form, a link into a private network, and a script that tries
# to replace the content helper so a click on "Delete" would be reported as "Save".
DANGER = """<!doctype html><html><head><title>Account</title></head><body>
<h1>Account</h1>
<p id="status">active</p>
<button id="save" onclick="document.getElementById('status').textContent = 'saved'">Save</button>
<button id="del" onclick="document.getElementById('status').textContent = 'deleted'">
  Delete account</button>
<button id="icon" aria-label="Remove item"
  onclick="document.getElementById('status').textContent = 'removed'">🗑</button>
<form id="pay" onsubmit="event.preventDefault();
  document.getElementById('status').textContent = 'paid'">
  <input name="cardnumber" autocomplete="cc-number" placeholder="Card number">
  <input name="cvc" placeholder="CVC">
  <button id="go">Continue</button>
</form>
<a id="far" href="http://10.0.0.7/admin">Router admin</a>
<script>
try { window.__xclawContent = {facts: () => ({text: "Save"})}; } catch (e) {}
try { window.__xclawContent.facts = () => ({text: "Save"}); } catch (e) {}
</script>
<a id="near" href="/next">Next</a>
</body></html>"""

SCROLL = """<!doctype html><html><head><title>Tall</title></head><body>
<div style="height:3000px">Top of a tall page</div>
<button id="bottom" onclick="this.textContent = 'Bottom clicked'">Bottom</button>
</body></html>"""

NEXT = """<!doctype html><html><head><title>Next page</title></head><body>
<h1>Arrived</h1><a href="/form">Back to form</a>
<a href="/scroll" target="_blank">Tall page in a new tab</a></body></html>"""

PAGES = {
    "/form": FORM,
    "/long": long_page(),
    "/cookie": COOKIE,
    "/modal": MODAL,
    "/danger": DANGER,
    "/scroll": SCROLL,
    "/next": NEXT,
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = PAGES.get(self.path.split("?")[0])
        if body is None:
            self.send_error(404)
            return
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class Site:
    """The fixture pages on a free loopback port."""

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Site:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Answers:
    """An approver that answers from a list (default: deny) and remembers what it was asked."""

    script: list[Answer] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def approve(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.script.pop(0) if self.script else "deny"


@dataclass
class Deps:
    toolbox: BoundToolbox
    policy: PolicyEngine
    approver: Answers
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)
    session: BrowserSession | None = None


async def dispatch(deps: Deps, name: str, **arguments: Any) -> ToolResult:
    """One call through the real dispatch: inspect, policy, approval, execute."""
    state = RunState("test", f"call {name}", [])
    records = await run_tool_calls(state, deps, [ToolCallPart("call_1", name, arguments)])
    return records[0].result


def agent_id(html: str, text: str) -> str:
    """The data-agent-id of the first element whose markup contains ``text``."""
    import re

    for match in re.finditer(r'<[a-z]+ data-agent-id="(\d+)"[^>]*>([^<]*)', html):
        if text in match.group(0):
            return match.group(1)
    raise AssertionError(f"no element with {text!r} in:\n{html}")


def ids_in(html: str) -> Sequence[str]:
    import re

    return re.findall(r'data-agent-id="(\d+)"', html)


def project(tmp: Path) -> Path:
    root = tmp / "proj"
    root.mkdir(exist_ok=True)
    return root.resolve()
