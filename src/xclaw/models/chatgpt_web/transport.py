"""``ChatGPTWebTransport``: the ChatGPT web page as a ``TextTransport`` (seed 000 §4.1, §4.3).

``send(text)`` opens a conversation when none is open (signed in, composer found, mode
selected), types the message with trusted input, sends it, waits for the completion gate and
returns the reply as Markdown. The operations of the seed's ``WebModelAdapter`` are public
methods: ``launch``, ``auth_state``, ``wait_for_manual_login``, ``start_conversation``,
``select_mode``, ``send_message``, ``wait_for_turn_complete``, ``get_last_assistant_message``,
``request_manual_takeover``, ``aclose``; plus ``open_conversation(url)`` for a resume and
``attach_files`` before a message.

Recovery (seed 000 §9.3): when the browser dies mid-message, the page is relaunched on the
same profile and reopens ``conversation_url``; if the reply had started it is awaited, else
the message is posted again. A retried ``send`` of the same text after a failure resumes the
same way instead of posting twice, and so does a new process resuming a paused session: the
message the pause left posted (``posted_unread``, kept with the session, ``expect_posted``) is
awaited in the reopened chat, never typed again. A reply that does not finish within
``turn_s`` gets one safe retry (seed 000 §13): the chat is reloaded and the reply awaited
again; the message is posted again only when the reloaded chat shows it never arrived. Still
unfinished, the session pauses.

Outdated selectors show in seconds: once the page has loaded and says it is signed in, its
composer must show within ``controls_s``. A signed-out page pauses the session
(``WEB_LOGIN_REQUIRED``) before anything is sent. Each reply read is reported as
``conversation.reply_read`` (clipboard or DOM, and why).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator as PageLocator
from playwright.async_api import Page

from xclaw.browser.manager import BrowserManager, EventSink
from xclaw.core.errors import ModelError, XclawError
from xclaw.models.chatgpt_web import failures
from xclaw.models.chatgpt_web.diagnostics import write_bundle
from xclaw.models.chatgpt_web.dom import Scope, attempts, click, find
from xclaw.models.chatgpt_web.keyboard import type_message
from xclaw.models.chatgpt_web.locators import (
    COMPOSER,
    CONVERSATION_PATH,
    FILE_INPUT,
    SEND_BUTTON,
    Locator,
)
from xclaw.models.chatgpt_web.mode_menu import select_mode
from xclaw.models.chatgpt_web.modes import ModeSelection
from xclaw.models.chatgpt_web.options import ChatGPTWebOptions, DeltaHook, TakeoverHook
from xclaw.models.chatgpt_web.page_state import AuthState, Takeover, same_origin, session_state
from xclaw.models.chatgpt_web.reply import ReplyRead, Source, read_reply
from xclaw.models.chatgpt_web.scripts import CLIPBOARD_CAPTURE
from xclaw.models.chatgpt_web.signin import auth_once, require_login
from xclaw.models.chatgpt_web.turns import (
    TurnTimedOut,
    TurnWaiter,
    count_turns,
    count_user_turns,
)
from xclaw.models.chatgpt_web.watch import PageWatch
from xclaw.redact import redact

T = TypeVar("T")
_RECOVERIES = 2  # relaunches or page failures tolerated within one send


@dataclass(frozen=True, slots=True)
class _Pending:
    """A message posted whose reply was not read yet."""

    text: str | None  # None: posted by an earlier process (``expect_posted``), text unknown
    baseline: int  # assistant turns before it
    users: int  # the person's turns before it: a reload tells from them whether it arrived


class ChatGPTWebTransport:
    """One ChatGPT web conversation at a time, in the dedicated browser (see the module)."""

    def __init__(
        self,
        options: ChatGPTWebOptions | None = None,
        *,
        manager: BrowserManager | None = None,
        on_takeover: TakeoverHook | None = None,
        on_event: EventSink | None = None,
        on_delta: DeltaHook | None = None,
        remote_takeover: Callable[[], bool] | None = None,
    ) -> None:
        """``manager``: share a browser (its owner closes it); by default one is made from
        ``options.browser`` and closed by ``aclose``. ``remote_takeover``: whether a surface
        answers takeovers from elsewhere right now (``options.TakeoverHook``)."""
        self.options = options or ChatGPTWebOptions()
        base = self.options.base_url
        self.base_url = base if base.endswith("/") else base + "/"
        self._owns_manager = manager is None
        self.manager = manager or BrowserManager(self.options.browser, on_event=on_event)
        self.on_delta = on_delta
        self.watch = PageWatch(
            self.manager,
            self.base_url,
            self.options.timeouts,
            on_takeover=on_takeover,
            on_event=on_event,
            wait_headless=self.options.headless_takeover == "wait",
            remote=remote_takeover,
        )
        self.mode_selection: ModeSelection | None = None
        self.last_reply_source: Source | None = None
        self.last_read: ReplyRead | None = None
        self.last_diagnostics: Path | None = None  # the latest WEB_ADAPTER_OUTDATED bundle
        self._conversation_url: str | None = None
        self._opened = False  # a conversation (new or reopened) is what the page shows
        self._pending: _Pending | None = None
        self._streamed = ""
        # Told where a posted message waits for its reply (``posted_unread``), and None once
        # the reply is read: a surface keeps it with the session, so that a new process waits
        # for that reply (``expect_posted``) instead of posting the message again.
        self.on_posted: Callable[[dict[str, Any] | None], None] | None = None

    @property
    def conversation_url(self) -> str | None:
        """The open chat's URL once the site has given it one (after the first reply)."""
        return self._conversation_url

    @property
    def posted_unread(self) -> dict[str, Any] | None:
        """The message posted whose reply is not read yet, as a new process finds it again:
        the chat's URL and the turns before it. None when there is none (or no URL yet)."""
        pending, url = self._pending, self._conversation_url
        if pending is None or url is None:
            return None
        return {"url": url, "assistant_turns": pending.baseline, "user_turns": pending.users}

    def expect_posted(self, posted: Mapping[str, Any]) -> bool:
        """After ``open_conversation(url)`` in a new process (a resume): the message a paused
        run had posted there (its ``posted_unread``) is not posted again; the next ``send``
        waits for its reply, or posts when the reopened chat shows it never arrived. False,
        changing nothing, when ``posted`` is not about the open chat or is malformed."""
        url, assistant, users = (posted.get(k) for k in ("url", "assistant_turns", "user_turns"))
        counts = [n for n in (assistant, users) if type(n) is int and n >= 0]
        if url != self._conversation_url or not self._opened or len(counts) != 2:
            return False
        self._set_pending(_Pending(None, counts[0], counts[1]))
        return True

    # -- TextTransport ---------------------------------------------------------------------

    async def send(self, text: str) -> str:
        failed = 0
        while True:
            try:
                return await self._send_once(text)
            except PlaywrightError as err:
                failed += 1
                if failed > _RECOVERIES:
                    raise self._page_failure(err, failed) from None
                await asyncio.sleep(self.options.timeouts.poll_s)

    async def aclose(self) -> None:
        if self._owns_manager:
            await self.manager.close()

    # -- the adapter operations ------------------------------------------------------------

    async def launch(self) -> None:
        await self._guard(self._page())

    async def auth_state(self) -> AuthState:
        """Signed in or not, read from the site without sending anything (``xclaw login``,
        ``doctor``). Opens the base URL when the page is blank; never leaves a sign-in page."""
        return await self._guard(self._auth_state())

    async def wait_for_manual_login(self, timeout_s: float | None = None) -> None:
        """Show the window and wait until the person has signed in."""
        await self._guard(self._wait_for_login(timeout_s))

    async def start_conversation(self) -> None:
        await self._guard(self._start_conversation())

    async def open_conversation(self, url: str) -> None:
        """Reopen a saved chat (a resume); ``WEB_CONVERSATION_NOT_FOUND`` if it is gone."""
        parts = urlsplit(url)
        if not same_origin(url, self.base_url) or not CONVERSATION_PATH.search(parts.path):
            raise failures.url_refused(redact(url), self.base_url)
        await self._guard(self._open_conversation(url))

    async def select_mode(self, mode: str) -> ModeSelection:
        """Select ``mode`` in the model menu; reported as ``conversation.mode_selected``."""
        return await self._guard(self._select_mode(mode))

    async def attach_files(self, paths: Sequence[Path]) -> bool:
        """Attach files to the next message through the page's file input. Best effort: False
        when the page offers no input or refuses them."""
        try:
            page = await self._ready_page()
            found = await find(page, FILE_INPUT)
            if found is None:
                return False
            await found.first.set_input_files([str(p) for p in paths])
            return True
        except PlaywrightError:
            return False

    async def send_message(self, text: str) -> int:
        """Post ``text`` without waiting; returns the turn count the reply will follow."""
        return await self._guard(self._post_new(text))

    async def wait_for_turn_complete(self, baseline: int) -> str:
        """Wait for the reply after ``baseline`` turns and return it."""
        reply = await self._guard(self._complete(baseline))
        self._set_pending(None)
        return reply

    async def get_last_assistant_message(self) -> str:
        """The last reply on the page, read once the completion gate passes for it."""
        return await self._guard(self._complete(-1))

    async def request_manual_takeover(self, reason: str) -> None:
        """Hand the window to the person (e.g. on a user's request) until the page is clear."""
        page = await self._guard(self._page())
        takeover = Takeover("WEB_MANUAL", reason, redact(page.url))
        await self._guard(self.watch.take_over(page, takeover))

    # -- pages and conversations -----------------------------------------------------------

    async def _guard(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except PlaywrightError as err:
            raise self._page_failure(err, 1) from None

    def _page_failure(self, err: PlaywrightError, attempts: int) -> ModelError:
        if not self.manager.alive:
            return failures.browser_lost(attempts)
        return failures.page_error((str(err).strip().splitlines() or ["no detail"])[0])

    async def _page(self) -> Page:
        """The live page; after a relaunch it shows the open chat again."""
        reopen = (self._conversation_url or self.base_url) if self._opened else None
        try:
            await self.manager.add_init_script(CLIPBOARD_CAPTURE)
            page = await self.manager.page(reopen_url=reopen)
        except ModelError:
            raise
        except XclawError as err:
            raise failures.browser_failed(err) from None
        page.set_default_timeout(self.options.timeouts.action_s * 1000)
        return page

    async def _ready_page(self) -> Page:
        """A page showing the open conversation, signed in, with a composer."""
        if not self._opened:
            await self._start_conversation()
        generation = self.manager.generation
        page = await self._page()
        if self.manager.generation != generation:  # relaunched: the chat was reopened
            await self._settle(page)
        return page

    async def _goto(self, page: Page, url: str) -> None:
        await page.goto(
            url, wait_until="domcontentloaded", timeout=self.options.timeouts.page_load_s * 1000
        )

    async def _settle(self, page: Page) -> PageLocator:
        """Wait until the page has loaded, is signed in and shows its composer (in seconds:
        a loaded, signed-in page without one no longer matches the adapter)."""
        await page.wait_for_load_state("load", timeout=self.options.timeouts.page_load_s * 1000)
        await require_login(self.watch, page)
        return await self._composer(page)

    async def _start_conversation(self) -> None:
        page = await self._page()
        await self._goto(page, self.base_url)
        await self._settle(page)
        self._conversation_url, self._opened = None, True
        self._set_pending(None)
        if self.options.mode:
            await self._select_mode(self.options.mode)

    async def _open_conversation(self, url: str) -> None:
        page = await self._page()
        await self._goto(page, url)
        await self._settle(page)
        if not await self._shows_conversation(page, url):
            raise failures.conversation_not_found(redact(url))
        self._conversation_url, self._opened = url, True
        self._set_pending(None)
        if self.options.mode:
            await self._select_mode(self.options.mode)

    async def _shows_conversation(self, page: Page, url: str) -> bool:
        """The chat's history rendered under its own URL (a missing chat redirects away)."""
        wanted = urlsplit(url).path.rstrip("/")
        deadline = time.monotonic() + self.options.timeouts.page_load_s
        while urlsplit(page.url).path.rstrip("/") == wanted:
            if await count_turns(page) or time.monotonic() > deadline:
                return True
            await asyncio.sleep(self.options.timeouts.poll_s)
        return False

    async def _select_mode(self, mode: str) -> ModeSelection:
        """Select ``mode``; anything but a confirmed choice is a warning in the event, and
        with ``mode_strict`` an error (``WEB_MODE_UNAVAILABLE``)."""
        page = await self._page()
        selection = await select_mode(page, mode, settle_s=self.options.timeouts.menu_s)
        self.mode_selection = selection
        self.watch.emit("conversation.mode_selected", selection.to_dict())
        if self.options.mode_strict and selection.warning is not None:
            raise failures.mode_unavailable(selection)
        return selection

    def _note_url(self, url: str) -> None:
        if not same_origin(url, self.base_url) or not CONVERSATION_PATH.search(urlsplit(url).path):
            return
        if url != self._conversation_url:
            self._conversation_url = url
            self.watch.emit("conversation.created", {"url": url})
            if self._pending is not None:
                self._set_pending(self._pending)  # now it can be found again: say where

    def _set_pending(self, pending: _Pending | None) -> None:
        self._pending = pending
        if self.on_posted is not None:
            self.on_posted(self.posted_unread)

    async def _arrived(self, page: Page, pending: _Pending) -> bool:
        """Whether the page shows the pending message (or its reply) after a reload."""
        return (
            await count_turns(page) > pending.baseline
            or await count_user_turns(page) > pending.users
        )

    # -- signing in ------------------------------------------------------------------------

    async def _auth_state(self) -> AuthState:
        page = await self._page()
        if not page.url.startswith(("http://", "https://")):
            await self._goto(page, self.base_url)
        deadline = time.monotonic() + self.options.timeouts.page_load_s
        while (state := await auth_once(self.watch, page)) is AuthState.UNKNOWN:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(self.options.timeouts.poll_s)
        return state

    async def _wait_for_login(self, timeout_s: float | None) -> None:
        if self.manager.headless and not self.watch.wait_headless:
            if await self._auth_state() is AuthState.LOGGED_IN:
                return
            raise failures.login_headless()  # nobody can sign in without a window
        page = await self._page()
        await self.manager.show()
        if not page.url.startswith(("http://", "https://")):
            await self._goto(page, self.base_url)
        limit = self.options.timeouts.login_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        asked = False
        while (await auth_once(self.watch, page)) is not AuthState.LOGGED_IN:
            if not asked:
                self.watch.emit("browser.auth_required", {"url": redact(page.url)})
                asked = True
            if time.monotonic() > deadline:
                raise failures.login_required(f"Nobody signed in within {limit:.0f}s.")
            await asyncio.sleep(max(self.options.timeouts.poll_s, 0.5))

    # -- composing and sending -------------------------------------------------------------

    async def _composer(self, page: Page) -> PageLocator:
        deadline = time.monotonic() + self.options.timeouts.controls_s
        while (found := await find(page, COMPOSER)) is None:
            _, paused = await self.watch.clear(page)
            deadline += paused
            if time.monotonic() > deadline:
                raise await self._outdated(COMPOSER, page)
            await asyncio.sleep(self.options.timeouts.poll_s)
        return found.first

    async def _send_once(self, text: str) -> str:
        page = await self._ready_page()
        pending = self._pending
        if pending is None or pending.text not in (None, text):
            baseline = await self._post_new(text)
        else:  # the same message after a failure, or one a paused run posted: resume it
            pending = _Pending(text, pending.baseline, pending.users)
            self._set_pending(pending)
            baseline = pending.baseline
            if not await self._arrived(page, pending):
                await self._post(page, text)  # it never arrived
        reply = await self._complete(baseline)
        self._set_pending(None)
        return reply

    async def _post_new(self, text: str) -> int:
        page = await self._ready_page()
        if await session_state(page, self.base_url) is AuthState.LOGGED_OUT:
            self.watch.emit("browser.auth_required", {"url": redact(page.url)})
            raise failures.signed_out("The browser was signed out of ChatGPT before a message.")
        baseline = await count_turns(page)
        self._set_pending(_Pending(text, baseline, await count_user_turns(page)))
        await self._post(page, text)
        return baseline

    async def _post(self, page: Page, text: str) -> None:
        composer = await self._composer(page)
        await click(page, composer)
        if not await type_message(page, composer, text):
            raise await self._outdated(COMPOSER, page)
        send = await find(page, SEND_BUTTON)
        if send is not None:
            await click(page, send.first)
        else:
            await composer.press("Enter")

    # -- replies ---------------------------------------------------------------------------

    async def _complete(self, baseline: int) -> str:
        """Wait for the reply after ``baseline`` turns (-1: whatever is last) and read it."""
        page = await self._page()
        if baseline < 0:
            baseline = max(await count_turns(page) - 1, 0)
        try:
            turn, _ = await self._wait_turn(page, baseline)
        except TurnTimedOut:
            turn = await self._retry_turn(page, baseline)
        read = await read_reply(page, turn, copy_timeout_s=self.options.timeouts.copy_s)
        self._note_url(page.url)
        self.last_read, self.last_reply_source = read, read.source
        self.watch.emit("conversation.reply_read", read.to_dict())
        return read.text

    async def _wait_turn(self, page: Page, baseline: int) -> tuple[PageLocator, bool]:
        self._streamed = ""
        waiter = TurnWaiter(
            self.watch,
            self.options.timeouts,
            outdated=self._outdated,
            on_text=self._stream,
            on_url=self._note_url,
        )
        return await waiter.wait(page, baseline)

    async def _retry_turn(self, page: Page, baseline: int) -> PageLocator:
        """The one safe retry of a reply that did not finish (seed 000 §13): reload the chat
        (a stalled stream often shows its finished reply then) and wait once more. The message
        is posted again only when the reloaded chat shows it never arrived."""
        waited = self.options.timeouts.turn_s
        self.watch.emit(
            "model.retry",
            {
                "model": "chatgpt-web",
                "attempt": 1,
                "delay_s": 0,
                "code": "WEB_TURN_TIMEOUT",
                "reason": f"the reply did not finish within {waited:g}s; reloading the chat "
                "once (the message is not sent again)",
            },
        )
        if self._conversation_url is not None:
            await self._goto(page, self._conversation_url)
            await self._settle(page)
            pending = self._pending
            if pending is not None and pending.text and not await self._arrived(page, pending):
                await self._post(page, pending.text)  # it never arrived: this is its first time
        try:
            turn, _ = await self._wait_turn(page, baseline)
        except TurnTimedOut:
            raise failures.turn_timeout(waited) from None
        return turn

    def _stream(self, text: str) -> None:
        if self.on_delta is None or text == self._streamed:
            return
        if text.startswith(self._streamed):
            self.on_delta(text[len(self._streamed) :])
        self._streamed = text

    async def _outdated(self, locator: Locator, scope: Scope) -> ModelError:
        page = await self._page()
        bundle = await write_bundle(
            page, missing=locator.name, tried=await attempts(scope, locator)
        )
        self.last_diagnostics = bundle
        return failures.adapter_outdated(locator.name, bundle)
