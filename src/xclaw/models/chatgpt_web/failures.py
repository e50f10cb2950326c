"""The errors the ChatGPT web transport raises, all ``ModelError``s so the loop treats them as
a failed model transport (never as a protocol violation by the model).

    ModelRequestRejected (retrying alone cannot help; a person or an update must act)
        WEB_LOGIN_REQUIRED          not signed in: run ``xclaw login``
        WEB_ADAPTER_OUTDATED        the page no longer matches the locators; bundle written
        WEB_CONVERSATION_NOT_FOUND  a saved conversation URL no longer opens that chat
        WEB_URL_REFUSED             a URL outside the configured site
        BROWSER_*                   no browser, a profile inside a project or in use, ...
    ModelUnavailable (worth another attempt; a retry of the same message resumes, not resends)
        WEB_TAKEOVER_TIMEOUT        a challenge or banner did not clear in time
        WEB_TURN_NOT_STARTED        no reply began after the message was sent
        WEB_TURN_TIMEOUT            the reply did not finish in time
        WEB_BROWSER_LOST            the browser kept dying
        WEB_PAGE_ERROR              the page kept failing an operation (navigation, click)
"""

from __future__ import annotations

from pathlib import Path

from xclaw.core.errors import ModelError, ModelRequestRejected, ModelUnavailable, XclawError
from xclaw.models.chatgpt_web.locators import ADAPTER_VERSION
from xclaw.models.chatgpt_web.page_state import Takeover
from xclaw.redact import redact


def login_required(detail: str = "The browser is not signed in to ChatGPT.") -> ModelError:
    return ModelRequestRejected(
        detail,
        code="WEB_LOGIN_REQUIRED",
        hint="Run `xclaw login` and sign in in the browser window it opens.",
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


def turn_timeout(waited_s: float) -> ModelError:
    return ModelUnavailable(
        f"The reply did not finish within {waited_s:.0f}s.",
        code="WEB_TURN_TIMEOUT",
        hint="The chat may still be working; resuming waits for the same reply again.",
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
