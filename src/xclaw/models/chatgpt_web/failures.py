"""The errors the ChatGPT web transport raises: ``ModelError``s, so the loop treats them as a
failed model transport (never as a protocol violation by the model), and pauses.

    EndRun, status "interrupted" (a pause: the session resumes with ``xclaw resume``)
        WEB_LOGIN_REQUIRED          signed out (at the start or mid-run): ``xclaw login`` first
        WEB_TURN_TIMEOUT            the reply did not finish, also after one safe retry
        WEB_TAKEOVER_STOPPED        asked to act on the page (the web UI), the person chose Stop
    ModelRequestRejected (retrying alone cannot help; a person or an update must act)
        WEB_LOGIN_REQUIRED          ``xclaw login`` saw nobody sign in (or has no window)
        WEB_ADAPTER_OUTDATED        the page no longer matches the locators; bundle written
        WEB_MODE_UNAVAILABLE        a mode asked for strictly (``pro!``) could not be selected
        WEB_TAKEOVER_HEADLESS       a person is needed, but the browser has no window
        WEB_CONVERSATION_NOT_FOUND  a saved conversation URL no longer opens that chat
        WEB_URL_REFUSED             a URL outside the configured site
        BROWSER_*                   no browser, a profile inside a project or in use, ...
    ModelUnavailable (worth another attempt; a retry of the same message resumes, not resends)
        WEB_TAKEOVER_TIMEOUT        a challenge or banner did not clear in time
        WEB_TURN_NOT_STARTED        no reply began after the message was sent
        WEB_BROWSER_LOST            the browser kept dying
        WEB_PAGE_ERROR              the page kept failing an operation (navigation, click)
"""

from __future__ import annotations

from pathlib import Path

from xclaw.core.errors import (
    EndRun,
    ModelError,
    ModelRequestRejected,
    ModelUnavailable,
    XclawError,
)
from xclaw.models.chatgpt_web.locators import ADAPTER_VERSION
from xclaw.models.chatgpt_web.modes import ModeSelection
from xclaw.models.chatgpt_web.page_state import Takeover
from xclaw.redact import redact


def login_required(detail: str = "The browser is not signed in to ChatGPT.") -> ModelError:
    return ModelRequestRejected(
        detail,
        code="WEB_LOGIN_REQUIRED",
        hint="Run `xclaw login` and sign in in the browser window it opens.",
    )


def signed_out(detail: str = "The browser is not signed in to ChatGPT.") -> EndRun:
    """A pause, not a failure: nothing was lost, the session goes on once signed in again."""
    return EndRun(
        f"{detail} The session is paused: sign in with `xclaw login`, then resume it.",
        code="WEB_LOGIN_REQUIRED",
    )


def login_headless() -> ModelError:
    return ModelRequestRejected(
        "The browser is not signed in to ChatGPT, and with --headless it has no window to "
        "sign in with.",
        code="WEB_LOGIN_REQUIRED",
        hint="Run `xclaw login` without --headless and sign in in the window it opens.",
    )


def mode_unavailable(selection: ModeSelection) -> ModelError:
    return ModelRequestRejected(
        f"The mode {selection.requested!r} was asked for strictly and cannot be used: "
        f"{selection.warning}",
        code="WEB_MODE_UNAVAILABLE",
        hint=f"Wait until it is available again, or ask for {selection.requested!r} without "
        "'!' to accept the fallback.",
    )


def takeover_headless(takeover: Takeover) -> ModelError:
    return ModelRequestRejected(
        f"{takeover.message} A person must handle it in the browser window, but the browser "
        "runs headless (no window).",
        code="WEB_TAKEOVER_HEADLESS",
        hint="Resume the session without --headless and handle it in the window.",
    )


def takeover_stopped(takeover: Takeover) -> EndRun:
    """The person was asked (web UI) and chose Stop: a pause, the session can go on later."""
    return EndRun(
        f"{takeover.message} You chose to stop. The session is paused: resume it when the "
        "ChatGPT page works again.",
        code="WEB_TAKEOVER_STOPPED",
    )


def adapter_outdated(missing: str, bundle: Path) -> ModelError:
    return ModelRequestRejected(
        f"The ChatGPT page no longer matches web adapter {ADAPTER_VERSION}: the {missing} "
        "was not found. This is not a model error.",
        code="WEB_ADAPTER_OUTDATED",
        hint=f"Update xclaw. A diagnostic bundle (redacted) was saved in {bundle}.",
    )


def conversation_not_found(url: str) -> ModelError:
    return ModelRequestRejected(
        f"The saved conversation {url} did not open.",
        code="WEB_CONVERSATION_NOT_FOUND",
        hint="Start a new session; the old chat may have been deleted.",
    )


def url_refused(url: str, base_url: str) -> ModelError:
    return ModelRequestRejected(
        f"{url} is not a conversation on {base_url}.",
        code="WEB_URL_REFUSED",
        hint="Only conversation URLs of the configured site can be opened.",
    )


def browser_failed(err: XclawError) -> ModelError:
    return ModelRequestRejected(err.message, code=err.code, hint=err.hint)


def takeover_timeout(takeover: Takeover, waited_s: float) -> ModelError:
    return ModelUnavailable(
        f"{takeover.message} It did not clear within {waited_s:.0f}s.",
        code="WEB_TAKEOVER_TIMEOUT",
        hint="Deal with it in the browser window, then resume the session.",
    )


def turn_not_started(waited_s: float) -> ModelError:
    return ModelUnavailable(
        f"No reply started within {waited_s:.0f}s of sending the message.",
        code="WEB_TURN_NOT_STARTED",
        hint="Look at the browser window; resume the session when the chat works again.",
    )


def turn_timeout(waited_s: float) -> EndRun:
    return EndRun(
        f"The reply did not finish within {waited_s:.0f}s, also after reloading the chat once "
        "(the message was not sent again). The session is paused: look at the chat in the "
        "browser, then resume it.",
        code="WEB_TURN_TIMEOUT",
    )


def browser_lost(attempts: int) -> ModelError:
    return ModelUnavailable(
        f"The browser closed or crashed, and {attempts} attempt(s) to carry on failed.",
        code="WEB_BROWSER_LOST",
        hint="Run `xclaw doctor`, then resume the session.",
    )


def page_error(detail: str) -> ModelError:
    return ModelUnavailable(
        f"The ChatGPT page failed: {redact(detail)}",
        code="WEB_PAGE_ERROR",
        hint="Look at the browser window; resume the session when the page works again.",
    )
