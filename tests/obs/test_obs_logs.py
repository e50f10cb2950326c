"""Structured logs: JSON lines with levels, never a registered secret; `xclaw serve` uses them."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from xclaw.core.errors import ConfigError
from xclaw.obs.logs import log_format, stderr_handler
from xclaw.redact import register_secret

SECRET = "log-test-secret-3c4d5e6f7a8b"


def _logger(fmt: str) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    logger = logging.getLogger(f"xclaw.test.obs.{fmt}")
    logger.handlers[:] = [stderr_handler(fmt, out)]  # type: ignore[arg-type]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, out


def test_json_lines_parse_and_hide_secrets() -> None:
    register_secret(SECRET)
    logger, out = _logger("json")
    logger.info("connected with %s", SECRET)
    logger.warning("slow turn", extra={"session": "s1", "headers": {"api_key": "abc123456789"}})
    try:
        raise RuntimeError(f"boom {SECRET}")
    except RuntimeError:
        logger.exception("turn failed")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["level"] for line in lines] == ["info", "warning", "error"]
    assert lines[0]["logger"] == "xclaw.test.obs.json"
    assert lines[0]["message"] == "connected with [REDACTED]"
    assert lines[1]["session"] == "s1" and lines[1]["headers"] == {"api_key": "[REDACTED]"}
    assert "RuntimeError: boom [REDACTED]" in lines[2]["exception"]
    assert lines[0]["time"].endswith("Z")
    assert SECRET not in out.getvalue() and "abc123456789" not in out.getvalue()


def test_text_lines_are_redacted_too() -> None:
    register_secret(SECRET)
    logger, out = _logger("text")
    try:
        raise ValueError(SECRET)
    except ValueError:
        logger.exception("failed with %s", SECRET)
    assert "ERROR" in out.getvalue() and "ValueError" in out.getvalue()
    assert SECRET not in out.getvalue()


def test_the_format_comes_from_the_flag_then_the_environment() -> None:
    assert log_format(None, {}) == "text"
    assert log_format(None, {"XCLAW_LOG_FORMAT": "JSON"}) == "json"
    assert log_format("text", {"XCLAW_LOG_FORMAT": "json"}) == "text"
    with pytest.raises(ConfigError) as err:
        log_format("yaml", {})
    assert err.value.code == "LOG_FORMAT_INVALID"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_writes_json_logs_and_serves_metrics(root: Path, tmp_path: Path) -> None:
    token = "serve-log-token-0123456789abcdef"
    token_file = tmp_path / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    (root / "script.yaml").write_text("- text: hi\n")
    port = _free_port()
    argv = [sys.executable, "-m", "xclaw", "serve", "-C", str(root), "--port", str(port)]
    argv += ["--token-file", str(token_file), "--model", f"scripted:{root / 'script.yaml'}"]
    env = {**os.environ, "XCLAW_LOG_FORMAT": "json"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.1)
        bare = httpx.get(base + "/metrics")
        # A token in the query is never read, and must not reach the access log either.
        scraped = httpx.get(
            base + f"/metrics?token={token}", headers={"Authorization": f"Bearer {token}"}
        )
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert bare.status_code == 401
    assert scraped.status_code == 200 and "xclaw_runs_total" in scraped.text
    stderr = err.decode()
    assert token not in stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert any("/metrics?token=[REDACTED]" in line["message"] for line in access)
    assert not any("color_message" in line for line in lines)
    assert all(line["level"] in ("debug", "info", "warning", "error", "critical") for line in lines)
