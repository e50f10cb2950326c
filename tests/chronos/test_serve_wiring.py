"""`xclaw serve` carries chronos: a hook in the user config is served at /hooks/<name> by the
real gateway process — an unsigned call is refused, a signed one starts a scripted run that
becomes a finished durable session."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from xclaw.chronos.webhooks import github_signature
from xclaw.dirs import config_dir

pytestmark = pytest.mark.timeout(90)
SECRET = "serve-hook-secret-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        assert proc.poll() is None, "xclaw serve exited early"
        try:
            if httpx.get(url).json() == {"ok": True}:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail("xclaw serve did not come up")


def test_serve_mounts_the_configured_webhooks(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "Reviewed it."}) + "\n")
    user = config_dir() / "xclaw.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    hook = {"secret_env": "GH_SERVE_SECRET", "task": "Review {{payload.repository.full_name}}."}
    user.write_text(yaml.safe_dump({"chronos": {"hooks": {"github": hook}}}))
    port = _free_port()
    argv = [sys.executable, "-m", "xclaw", "serve", "--port", str(port), "-C", str(root)]
    argv += ["-m", f"scripted:{script}", "--sandbox", "host"]
    env = {**os.environ, "NO_COLOR": "1", "GH_SERVE_SECRET": SECRET}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(f"{base}/healthz", proc)
        body = json.dumps({"repository": {"full_name": "acme/site"}}).encode()
        unsigned = httpx.post(f"{base}/hooks/github", content=body)
        assert unsigned.status_code == 401
        headers = {
            "X-Hub-Signature-256": github_signature(SECRET, body),
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-GitHub-Event": "push",
            "Content-Type": "application/json",
        }
        signed = httpx.post(f"{base}/hooks/github", content=body, headers=headers)
        assert signed.status_code == 202, signed.text
        from xclaw.store.sqlite import open_store

        deadline = time.monotonic() + 30
        found = []
        while time.monotonic() < deadline and not found:
            store = open_store()
            try:
                found = [
                    s
                    for s in store.list_sessions()
                    if s.id.startswith("hook-github-") and s.state == "success"
                ]
            finally:
                store.close()
            time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    store = open_store()
    sessions = [(s.id, s.state) for s in store.list_sessions()]
    store.close()
    assert found, f"no finished hook session: {sessions} {err.decode()[-3000:]}"
    assert "acme/site" in found[0].task
    assert SECRET not in err.decode(errors="replace")
    # uvicorn shuts down gracefully, then re-raises SIGTERM as its exit status.
    assert proc.returncode in (0, -15), err.decode(errors="replace")[-2000:]
    assert "Application shutdown complete" in err.decode(errors="replace")
