"""GitHub Copilot credentials: a GitHub token is exchanged for a short-lived Copilot token.

``GET {token_url}`` with ``Authorization: token $GITHUB_TOKEN`` answers
``{"token": ..., "expires_at": <unix seconds>, "endpoints": {"api": <base url>}}``. The token
is cached until shortly before it expires, then fetched again; concurrent requests share one
exchange.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from xclaw.core.errors import ModelError, ModelRequestRejected, ModelUnavailable
from xclaw.models._http import error_for_status, map_sdk_error, provider_message
from xclaw.redact import register_secret

__all__ = ["CopilotToken"]

# Refresh this long before the stated expiry, so a token never dies mid-request.
_EXPIRY_MARGIN_S = 60.0


class CopilotToken:
    """A ``CredentialSource`` for ``OpenAIChatModel``: ``(copilot_token, base_url)``."""

    def __init__(
        self,
        github_token: str,
        *,
        token_url: str,
        default_base_url: str,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._github_token = github_token
        self.token_url = token_url
        self.default_base_url = default_base_url
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._token: str | None = None
        self._base_url = default_base_url
        self._expires_at = 0.0
        self.exchanges = 0  # how many times the token was fetched (tests and diagnostics)

    async def credentials(self) -> tuple[str, str]:
        async with self._lock:
            if self._token is None or self._clock() >= self._expires_at - _EXPIRY_MARGIN_S:
                await self._exchange()
            assert self._token is not None
            return self._token, self._base_url

    async def _exchange(self) -> None:
        headers = {
            **self._headers,
            "Authorization": f"token {self._github_token}",
            "Accept": "application/json",
        }
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s) as client:
                response = await client.get(self.token_url, headers=headers)
        except httpx.HTTPError as err:
            raise map_sdk_error(err, provider="copilot token exchange") from None
        if response.status_code != 200:
            raise _exchange_error(response)
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ModelUnavailable(
                "the Copilot token exchange answered without a token.",
                code="MODEL_AUTH_EXCHANGE_FAILED",
                hint="Retry later; check that GitHub Copilot is enabled for this account.",
            )
        expires_at = body.get("expires_at")
        self._expires_at = float(expires_at) if isinstance(expires_at, int | float) else 0.0
        endpoints = body.get("endpoints")
        api = endpoints.get("api") if isinstance(endpoints, dict) else None
        self._base_url = api if isinstance(api, str) and api else self.default_base_url
        register_secret(token)
        self._token = token
        self.exchanges += 1


def _exchange_error(response: httpx.Response) -> ModelError:
    message = provider_message(response.text, response.reason_phrase)
    if response.status_code in (401, 403, 404):
        return ModelRequestRejected(
            f"GitHub refused the Copilot token exchange ({response.status_code}): {message}",
            code="MODEL_AUTH_FAILED",
            hint="Check that $GITHUB_TOKEN is valid and the account has GitHub Copilot.",
            status=response.status_code,
        )
    return error_for_status(response.status_code, message, provider="copilot token exchange")
