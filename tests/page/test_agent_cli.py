"""``xclaw page run``: a scripted model on a fixture page in headless Chromium, with the live
view; and the same clear error as ``xclaw run`` when no model is configured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from page_server import PageServer
from typer.testing import CliRunner

from xclaw.browser import find_browser
from xclaw.cli.app import app
from xclaw.core.errors import ConfigError


def browser_path() -> str:
    try:
        return str(find_browser(os.environ.get("XCLAW_TEST_BROWSER") or None))
    except ConfigError:
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")


def test_page_run_without_a_model_says_so(page_server: PageServer) -> None:
    result = CliRunner().invoke(app, ["page", "run", page_server.url("agent_chat.html"), "t"])
    assert result.exit_code == 2
    assert "MODEL_NOT_CONFIGURED" in result.stderr and "--model" in result.stderr


def test_page_run_completes_the_linear_example(page_server: PageServer, tmp_path: Path) -> None:
    script = tmp_path / "page.yaml"
    script.write_text(
        # CSS selectors work where a ref is not known in advance (a script is written blind).
        "- tool_calls: [{name: dom, arguments: {action: click, selector: '#open'}}]\n"
        "  text: 'REMAINING: 输入框输入 \"abc\" -> 发送'\n"
        "- expect: {last_contains: ['## Current remaining instruction', 'type=text']}\n"
        "  tool_calls: [{name: dom, arguments: {action: fill, selector: '#msg', value: abc}}]\n"
        "  text: 'REMAINING: 发送'\n"
        "- tool_calls: [{name: dom, arguments: {action: click, selector: '#send'}}]\n"
        '  text: "Sent abc.\\nREMAINING: DONE"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app,
        [
            "page",
            "run",
            page_server.url("agent_chat.html"),
            '点击按钮 -> 输入框输入 "abc" -> 发送',
            "--model",
            f"scripted:{script}",
            "--headless",
            "--browser",
            browser_path(),
            "--max-rounds",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    for line in ("round 1", "round 3", "first snapshot:", "→ dom", 'with "abc"', "completed"):
        assert line in out, line
    assert "Sent abc." in out and "3 rounds · 3 tool calls (0 failed" in out
