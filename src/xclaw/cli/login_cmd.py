"""``xclaw login``: sign in to ChatGPT once, in xclaw's own browser profile."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from xclaw.cli.common import console, fail
from xclaw.cli.web import browser_flags
from xclaw.core.errors import XclawError


def login(
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="The site (default https://chatgpt.com/).")
    ] = None,
    browser: Annotated[
        str | None, typer.Option("--browser", help="Chromium/Chrome to use.")
    ] = None,
    headless: Annotated[
        bool,
        typer.Option(
            "--headless", help="No window: only checks the login, and fails when signed out."
        ),
    ] = False,
    timeout_s: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for you to sign in.")
    ] = 600.0,
) -> None:
    """Open the dedicated browser, wait for you to sign in by hand, and confirm it."""
    browser_flags(headless, browser)
    try:
        asyncio.run(_login(base_url, timeout_s))
    except XclawError as err:
        fail(err)


async def _login(base_url: str | None, timeout_s: float) -> None:
    from xclaw.models.chatgpt_web import AuthState
    from xclaw.models.chatgpt_web.failures import login_headless
    from xclaw.models.web import chatgpt_web_model

    model = chatgpt_web_model(None, base_url=base_url)
    transport = model.transport
    try:
        state = await transport.auth_state()  # type: ignore[attr-defined]
        if state is not AuthState.LOGGED_IN and transport.manager.headless:  # type: ignore[attr-defined]
            raise login_headless()  # no window to sign in with: say so, do not wait
        if state is not AuthState.LOGGED_IN:
            console.print(
                "Sign in to ChatGPT in the browser window that opened "
                f"(waiting up to {timeout_s:g} s; your login stays in xclaw's own profile)."
            )
            await transport.wait_for_manual_login(timeout_s)  # type: ignore[attr-defined]
        profile = transport.manager.profile  # type: ignore[attr-defined]
        console.print(f"[green]logged in[/] — profile {profile}")
    finally:
        await model.aclose()
