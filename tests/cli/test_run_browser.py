"""``xclaw run --browser``: the coding agent gets the browser tools on a Chromium context of
its own. A scripted model starts a server with process.start, opens the page it serves (the
session's own port: no question, although loopback asks otherwise) and reads it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.browser import CONTAINER_ARGS
from xclaw.cli.app import app

SERVER = [
    "-u",
    "-c",
    "import http.server, socketserver\n"
    "s = socketserver.TCPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
    "print(f'Serving on http://127.0.0.1:{s.server_address[1]}/')\n"
    "s.serve_forever()\n",
]


def _script(path: Path, turns: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def _run(root: Path, script: Path, *extra: str) -> object:
    return CliRunner().invoke(
        app,
        ["run", "-C", str(root), "--model", f"scripted:{script}", *extra, "read the page"],
    )


def test_run_with_browser_reads_the_page_its_own_server_serves(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XCLAW_BROWSER_ARGS", " ".join(CONTAINER_ARGS))
    (root / "index.html").write_text(
        "<title>Fixture</title><h1>Hello from the fixture</h1><button>Press me</button>",
        encoding="utf-8",
    )
    start = {
        "id": "start",
        "name": "process.start",
        "arguments": {"program": sys.executable, "argv": SERVER, "wait_for_url_ms": 15000},
    }
    script = _script(
        tmp_path / "s.jsonl",
        [
            {"tool_calls": [start]},
            {
                "expect": {"last_ok": True},
                "tool_calls": [
                    {
                        "id": "open",
                        "name": "browser.navigate",
                        "arguments": {"url": "{{result:start.data.detectedUrls.0}}index.html"},
                    }
                ],
            },
            {
                "expect": {"last_ok": True, "last_contains": ["Opened Fixture"]},
                "tool_calls": [{"id": "read", "name": "browser.content", "arguments": {}}],
            },
            {
                "expect": {"last_contains": ["Hello from the fixture", "Press me"]},
                "text": "The page says hello.",
            },
        ],
    )
    result = _run(root, script, "--browser")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    out = result.stdout  # type: ignore[attr-defined]
    assert "browser.navigate" in out and "browser.content" in out and "completed" in out


def test_run_without_browser_has_no_browser_tools(root: Path, tmp_path: Path) -> None:
    script = _script(
        tmp_path / "s.jsonl",
        [
            {"tool_calls": [{"name": "browser.navigate", "arguments": {"url": "example.org"}}]},
            {"expect": {"last_contains": ["TOOL_NOT_FOUND"]}, "text": "No browser here."},
        ],
    )
    result = _run(root, script)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]


def test_a_project_file_may_not_widen_browsing(root: Path, tmp_path: Path) -> None:
    (root / "xclaw.yaml").write_text("browsing:\n  allow_hosts: ['localhost:5432']\n")
    script = _script(tmp_path / "s.jsonl", [{"text": "done"}])
    result = _run(root, script, "--browser")
    assert result.exit_code == 2 and "CONFIG_UNSAFE" in result.stderr  # type: ignore[attr-defined]
