"""Every request a browser context makes is judged, not only the address a tool was asked to
open (seed 003 ch. 07): HTTP redirects, meta refresh, ``location =`` from page script, link
clicks, form submits, iframes, popups, and subresources (``fetch``, images, scripts).

``NavigationRules`` says whether an address may be opened without a human, exactly as the
policy engine would judge ``browser.navigate`` to it (schemes, ``file:`` outside the project,
private / link-local / loopback hosts, the run's grants). It also puts in the grants that
need no human: the loopback ports this session's own processes serve (``process.start``) and
the user config's ``browsing.allow_hosts``.

``NavigationGuard`` applies the rules at the ``BrowserContext``: ``context.route`` sees every
request but the hops of a redirect (Playwright continues those unrouted, checked in Chromium
150), which the ``request`` event reports with ``redirected_from``. A routed request the rules
refuse is aborted before it leaves; a refused redirect hop has already been sent when it is
seen, so a navigation that took it is stopped (its frame is sent to ``about:blank``) and a
subresource hop is reported as not stoppable. Each refusal is a ``NavigationBlock`` the next
browser tool result reports (code ``BROWSER_NAVIGATION_BLOCKED``), never silently.

What a tool call was approved for passes: ``approve(url)`` lets the frame open that address
during the call, and pages of an origin opened so may keep loading from that same origin.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Request, Route, WebSocketRoute
from playwright.async_api import Error as PlaywrightError

from xclaw.browser.session import Resolver, resolve_host
from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import Access, Decision, Grant, PreparedCall, Risk, ToolSpec
from xclaw.policy.browsing import file_url_path, host_origins, judge_address, site_origin
from xclaw.policy.engine import PolicyEngine
from xclaw.policy.reach import is_loopback_host
from xclaw.tools.base import Tool, Workspace
from xclaw.tools.browser_judge import web_address

BLOCKED_CODE = "BROWSER_NAVIGATION_BLOCKED"
_UNROUTED = ("data:", "blob:", "about:")  # no request leaves the browser for these
_SPEC = ToolSpec("browser.request", "a request a page made", {}, True, Risk.READ)
_DNS_TTL_S = 10.0  # how long a host's addresses are reused (every image asks again else)

Kind = Literal["navigation", "redirect", "subresource"]


@dataclass(frozen=True, slots=True)
class NavigationBlock:
    """One request the rules refused."""

    url: str
    kind: Kind
    main_frame: bool
    reason: str
    policy_code: str
    stopped: bool = True  # False: a redirect hop of a subresource, already sent when seen
    page_url: str = ""
    at: float = field(default_factory=time.time)

    @property
    def is_navigation(self) -> bool:
        return self.kind != "subresource"

    def sentence(self) -> str:
        what = {
            "navigation": "a navigation",
            "redirect": "a redirect",
            "subresource": "a request",
        }[self.kind]
        where = "the page" if self.main_frame else "a frame"
        done = "was blocked" if self.stopped else "was seen too late to stop"
        return f"{what} of {where} to {self.url} {done}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("at")
        out["code"] = BLOCKED_CODE
        return out


def block_key(url: str) -> str:
    """What passes and trust are kept by: the site origin, or a ``file:`` URL's path."""
    path = file_url_path(url)
    if path is not None:
        return f"file:{path}"
    return site_origin(url) or url


class NavigationRules:
    """Whether the session may open an address without a human, as the policy would judge
    ``browser.navigate`` to it in the run ``attach`` names."""

    def __init__(
        self, *, allow_hosts: Sequence[str] = (), resolver: Resolver = resolve_host
    ) -> None:
        self.allow_hosts = tuple(allow_hosts)
        self.resolver = resolver
        self.workspace: Workspace | None = None
        self._dns: dict[str, tuple[float, tuple[str, ...]]] = {}
        # Web origins found allowed, reused as long as their addresses are: grants only grow.
        self._allowed: dict[str, float] = {}

    def attach(self, workspace: Workspace) -> None:
        """Judge against this run's root and grants from now on."""
        self.workspace = workspace
        self._allowed.clear()
        self.sync_grants()

    def local_origins(self) -> set[str]:
        """Origins opened without asking: ``allow_hosts`` and what this session's processes
        serve on loopback (as published to this machine when sandboxed)."""
        found = {o for entry in self.allow_hosts for o in host_origins(entry)}
        processes = getattr(self.workspace, "processes", None)
        for mp in processes.managed() if processes is not None else ():
            if mp.status != "running":
                continue
            for url in mp.urls:
                served = mp.published.get(url, url)
                host = _host(served)
                if is_loopback_host(host):
                    found.update(host_origins(f"localhost:{_port(served)}"))
        return found

    def sync_grants(self) -> None:
        """Put the local origins in as site grants, so the policy engine sees them too."""
        if self.workspace is not None:
            self.workspace.grants.update(Grant("site", o) for o in self.local_origins())

    async def address(self, url: str) -> Any:
        host = _host(url)
        cached = self._dns.get(host)
        if cached is not None and time.monotonic() - cached[0] < _DNS_TTL_S:
            resolver: Resolver = _fixed(cached[1])
        else:
            resolver = self._remembering(host)
        return await web_address(url, resolver)

    def _remembering(self, host: str) -> Resolver:
        async def resolve(name: str) -> tuple[str, ...]:
            found = await self.resolver(name)
            self._dns[host] = (time.monotonic(), found)
            return found

        return resolve

    async def verdict(self, url: str) -> Decision | None:
        """None when ``url`` may be opened without asking; else the policy's decision."""
        origin = site_origin(url)
        seen = self._allowed.get(origin) if origin else None
        if seen is not None and time.monotonic() - seen < _DNS_TTL_S:
            return None
        found = await self._verdict(url)
        if found is None and origin:
            self._allowed[origin] = time.monotonic()
        return found

    async def _verdict(self, url: str) -> Decision | None:
        address = await self.address(url)
        if self.workspace is None:  # no run attached: no root, no grants
            if file_url_path(url) is not None:
                return Decision(
                    "ask",
                    Risk.SENSITIVE,
                    f"opens the local file {url}",
                    code="BROWSER_FILE_NEEDS_APPROVAL",
                )
            found = judge_address(address)
            if found is not None and found.grant is not None:
                if found.grant.value in self.local_origins():
                    return None
            return found
        self.sync_grants()
        call = ToolCallPart("guard", _SPEC.name, {"url": url})
        prepared = PreparedCall(call, _SPEC, None, "", access=Access(opens=(address,)))
        decision = PolicyEngine(self.workspace).evaluate(prepared)
        return None if decision.action == "allow" else decision


class NavigationGuard:
    """The rules applied to every request of one context; refusals wait in ``blocks``."""

    def __init__(self, rules: NavigationRules) -> None:
        self.rules = rules
        self.passes: set[str] = set()  # what the running tool call was approved to open
        self.trusted: set[str] = set()  # origins opened with approval: same-origin loads pass
        self.blocks: list[NavigationBlock] = []
        self._hops: set[asyncio.Task[None]] = set()

    async def install(self, context: BrowserContext) -> None:
        await context.route("**/*", self._route)
        await context.route_web_socket(lambda _url: True, self._route_socket)
        context.on("request", self._on_request)

    async def approve(self, url: str) -> None:
        """The call about to run was allowed to open ``url`` (by the policy or a human): let
        it through, and when it needed a human, trust its origin's same-origin loads."""
        if await self.rules.verdict(url) is not None:
            key = block_key(url)
            self.passes.add(key)
            self.trusted.add(key)

    @contextlib.contextmanager
    def during(self) -> Iterator[None]:
        """Passes given by ``approve`` last for one tool call."""
        try:
            yield
        finally:
            self.passes.clear()

    async def settle(self) -> None:
        """Wait for redirect hops still being judged."""
        while self._hops:
            await asyncio.gather(*list(self._hops), return_exceptions=True)

    async def take(self) -> list[NavigationBlock]:
        await self.settle()
        found, self.blocks = self.blocks, []
        return found

    async def _allowed(self, url: str, frame_url: str) -> Decision | None:
        key = block_key(url)
        if key in self.passes or (key in self.trusted and key == block_key(frame_url)):
            return None
        return await self.rules.verdict(url)

    async def _route(self, route: Route, request: Request) -> None:
        url = request.url
        if url.startswith(_UNROUTED):
            await _carry_on(route)
            return
        frame = _frame_url(request)
        try:
            verdict = await self._allowed(url, frame)
        except Exception as err:  # noqa: BLE001 - a broken check must refuse, never allow
            verdict = Decision("deny", Risk.SENSITIVE, f"could not be checked: {err}")
        if verdict is None:
            await _carry_on(route)
            return
        navigation = request.is_navigation_request()
        self.blocks.append(
            NavigationBlock(
                url,
                "navigation" if navigation else "subresource",
                _is_main(request),
                verdict.reason,
                verdict.code,
                page_url=frame,
            )
        )
        with contextlib.suppress(PlaywrightError):  # the page closed meanwhile
            await route.abort("blockedbyclient")

    async def _route_socket(self, socket: WebSocketRoute) -> None:
        """A WebSocket is judged as its http(s) twin; a refused one never reaches its server
        (not connecting a routed socket leaves it talking to no one), and is closed."""
        url = socket.url
        twin = "http" + url[2:] if url.startswith("ws") else url
        try:
            verdict = await self.rules.verdict(twin)
        except Exception as err:  # noqa: BLE001 - a broken check must refuse, never allow
            verdict = Decision("deny", Risk.SENSITIVE, f"could not be checked: {err}")
        if verdict is None:
            socket.connect_to_server()
            return
        self.blocks.append(NavigationBlock(url, "subresource", False, verdict.reason, verdict.code))
        with contextlib.suppress(PlaywrightError):
            await socket.close(code=1008, reason="blocked by xclaw")

    def _on_request(self, request: Request) -> None:
        previous = request.redirected_from
        if previous is None:
            return
        task = asyncio.get_running_loop().create_task(self._judge_hop(request, previous.url))
        self._hops.add(task)
        task.add_done_callback(self._hops.discard)

    async def _judge_hop(self, request: Request, came_from: str) -> None:
        url = request.url
        try:
            verdict = await self._allowed(url, came_from)
        except Exception as err:  # noqa: BLE001 - a broken check must refuse, never allow
            verdict = Decision("deny", Risk.SENSITIVE, f"could not be checked: {err}")
        if verdict is None:
            return
        navigation = request.is_navigation_request()
        self.blocks.append(
            NavigationBlock(
                url,
                "redirect",
                _is_main(request),
                f"redirected from {came_from}; {verdict.reason}",
                verdict.code,
                stopped=navigation,
                page_url=_frame_url(request),
            )
        )
        if navigation:
            with contextlib.suppress(PlaywrightError):  # closed, or already elsewhere
                await request.frame.goto("about:blank", timeout=5000)


async def _carry_on(route: Route) -> None:
    with contextlib.suppress(PlaywrightError):  # the page closed meanwhile
        await route.continue_()


def _frame_url(request: Request) -> str:
    try:
        return request.frame.url
    except PlaywrightError:  # a service worker's request has no frame
        return ""


def _is_main(request: Request) -> bool:
    try:
        frame = request.frame
        return frame.parent_frame is None
    except PlaywrightError:
        return False


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def _fixed(found: tuple[str, ...]) -> Resolver:
    async def resolve(_name: str) -> tuple[str, ...]:
        return found

    return resolve


def blocked_result_data(blocks: Sequence[NavigationBlock]) -> list[dict[str, Any]]:
    return [b.as_dict() for b in blocks]


BLOCKED_HINT = (
    "The page was not allowed to go there on its own; where a navigation was stopped, the tab "
    "shows the browser's error page (or about:blank). If you need that address, open it with "
    "the navigate tool so the user can approve it; otherwise go back to the pages you were given."
)


def reporting(t: Tool, guard: NavigationGuard, *, navigating: bool) -> Tool:
    """``t`` with what the guard blocked since the previous call appended to its result; a
    ``navigating`` tool whose main-frame navigation was blocked fails (``with_blocks``)."""
    inner = t.fn

    async def fn(*args: Any, **kwargs: Any) -> ToolResult:
        try:
            out = inner(*args, **kwargs)
            result: ToolResult = await out if inspect.isawaitable(out) else out
        except ToolError as err:
            result = ToolResult.failure(
                err.code, err.message, hint=err.hint, retryable=err.retryable, data=err.data
            )
        return with_blocks(result, await guard.take(), navigating=navigating)

    t.fn = fn
    return t


def with_blocks(
    result: ToolResult, blocks: Sequence[NavigationBlock], *, navigating: bool
) -> ToolResult:
    """``result`` with the blocked requests said in words and data; a navigating call whose
    main-frame navigation was blocked fails with ``BROWSER_NAVIGATION_BLOCKED``."""
    if not blocks:
        return result
    data = {**result.data, "navigation_blocked": [b.as_dict() for b in blocks]}
    said = "; ".join(b.sentence() for b in blocks[:5])
    if len(blocks) > 5:
        said += f"; and {len(blocks) - 5} more"
    if navigating and any(b.is_navigation and b.main_frame for b in blocks):
        before = f"{result.message} " if result.ok else ""
        return ToolResult.failure(
            BLOCKED_CODE,
            f"{before}Blocked ({BLOCKED_CODE}): {said}.",
            hint=BLOCKED_HINT,
            data=data,
        )
    text = f"{result.message} Also blocked ({BLOCKED_CODE}): {said}."
    return replace(result, message=text, data=data, hint=result.hint or BLOCKED_HINT)
