"""`xclaw chat` (a terminal WebSocket client) and `xclaw serve`, as real processes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from gateway_support import TOKEN, serving
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.gateway.auth import gateway_token_path

pytestmark = pytest.mark.timeout(40)

MARK = "chat-cli-ran-7"
EXEC = {
    "text": "Running it.",
    "tool_calls": [
        {
            "id": "call_1",
            "name": "terminal.exec",
            "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK}"]},
        }
    ],
}
XCLAW = [sys.executable, "-m", "xclaw"]


def _chat(url: str, stdin: str, *extra: str, token: str | None = TOKEN) -> str:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("XCLAW_GATEWAY_TOKEN", None)
    if token:
        env["XCLAW_GATEWAY_TOKEN"] = token
    done = subprocess.run(
        [*XCLAW, "chat", "--url", url, *extra],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _chat_process(url: str) -> subprocess.Popen[str]:
    """``xclaw chat`` left running, for a test that types into it while it works."""
    env = {**os.environ, "NO_COLOR": "1", "XCLAW_GATEWAY_TOKEN": TOKEN}
    return subprocess.Popen(
        [*XCLAW, "chat", "--url", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_chat_prints_deltas_and_asks_the_approval_here(root: Path) -> None:
    with serving(root, [EXEC, f"It printed {MARK}."]) as server:
        out = _chat(server.ws_url, "run the check\ny\n")
    assert "session cli-" in out
    assert "approve?" in out and "terminal.exec" in out
    assert f"It printed {MARK}." in out and "[completed]" in out
    assert out.count(MARK) >= 3  # the arguments, the output, the answer


def test_chat_deny_and_continue_the_session(root: Path) -> None:
    with serving(root, [EXEC, "Not run.", "second turn"]) as server:
        first = _chat(server.ws_url, "run it\nno\n")
        sid = first.split("session ", 1)[1].split()[0]
        second = _chat(server.ws_url, "again\n", "--session", sid)
    assert "APPROVAL_DENIED" in first and "Not run." in first
    assert f"session {sid}" in second and "second turn" in second


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "-m", "scripted:x.yaml"])
    assert result.exit_code != 0
    assert "GATEWAY_REMOTE_NEEDS_TOKEN" in result.output or "loopback" in result.output
    assert not gateway_token_path().exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_then_chat(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "served by xclaw serve"}) + "\n")
    port = _free_port()
    proc = subprocess.Popen(
        [*XCLAW, "serve", "--port", str(port), "-C", str(root), "-m", f"scripted:{script}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                if httpx.get(f"{base}/healthz").json() == {"ok": True}:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token = gateway_token_path().read_text().strip()
        out = _chat(f"ws://127.0.0.1:{port}/ws", "hello\n", token=None)  # reads the token file
        listed = httpx.get(f"{base}/api/sessions", headers={"Authorization": f"Bearer {token}"})
    finally:
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=15)
    assert "served by xclaw serve" in out
    assert stdout.count(token) == 1  # printed once, on the start that made it
    assert token not in stderr  # the logs never
    assert [s["state"] for s in listed.json()] == ["success"]


def test_ctrl_c_stops_the_turn_and_the_chat_goes_on(root: Path) -> None:
    slow = {
        "text": "Waiting.",
        "tool_calls": [
            {
                "id": "c1",
                "name": "terminal.exec",
                "arguments": {"program": "sh", "argv": ["-c", "touch started; sleep 20"]},
            }
        ],
    }
    with serving(root, [slow, "after the stop"]) as server:
        proc = _chat_process(server.ws_url)
        assert proc.stdin is not None
        proc.stdin.write("wait\ny\nnext\n")
        proc.stdin.flush()
        for _ in range(200):
            if (root / "started").exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, out + err
    assert "[stopping]" in out and "[interrupted]" in out
    assert "after the stop" in out


# -- the prompt, Markdown, explicit answers, steps/rollback/fork/new ---------------------------
REPLY_MD = f"""# Result

- it printed **{MARK}**
- nothing else

```sh
echo {MARK}
```
"""


def test_a_prompt_markdown_and_an_answer_asked_again(root: Path) -> None:
    with serving(root, [EXEC, REPLY_MD]) as server:
        out = _chat(server.ws_url, "run the check\nmaybe\n\nY\n")
    assert "you> run the check" in out  # the prompt, and the line read after it
    assert out.count("approve [y/") == 3  # "maybe" and "" asked again; "Y" allowed it
    assert "Please answer y" in out
    assert "✓ terminal.exec" in out
    # rendered, not raw: no heading marks, bullets, bold stars or code fences
    assert "Result" in out and "# Result" not in out
    assert f"• it printed {MARK}" in out and "**" not in out and "```" not in out
    assert f"echo {MARK}" in out and "[completed]" in out


def test_end_of_input_at_an_approval_denies(root: Path) -> None:
    with serving(root, [EXEC, "Not run."]) as server:
        out = _chat(server.ws_url, "run it\n")
    assert "no answer (end of input): denied" in out and "APPROVAL_DENIED" in out
    assert not (root / "out.txt").exists()


def test_an_approval_settled_elsewhere_stops_asking(root: Path) -> None:
    with serving(root, [EXEC, "Timed out.", "later"], approval_timeout=1.0) as server:
        proc = _chat_process(server.ws_url)
        assert proc.stdin is not None
        proc.stdin.write("run it\n")
        proc.stdin.flush()
        time.sleep(3.0)  # no answer: the gateway denies after 1 s
        out, err = proc.communicate("and now\n", timeout=20)
    assert proc.returncode == 0, out + err
    assert "(the question was settled elsewhere)" in out and "Timed out." in out
    assert "you> and now" in out and "later" in out  # the next line is a message again
    assert not (root / "out.txt").exists()


def _messages(session_id: str) -> list[str]:
    from xclaw.gateway.sessions import session_messages
    from xclaw.store.sqlite import open_store

    store = open_store()
    try:
        items = [i.payload for i in store.load_items(session_id)]
    finally:
        store.close()
    return [m["text"] for m in session_messages(items) if m["role"] == "user"]


def test_steps_rollback_fork_and_new_in_the_chat(root: Path) -> None:
    lines = [
        "hello",
        "again",
        "/steps",
        "/rollback s0003",  # the second message's step: it and its answer go
        "/steps",
        "/fork s0002",  # the first answer: a new session with hello + answer 1
        "third",
        "/new",
        "fourth",
        "/rollback s9999",
        "/rollback",
        "/nonsense",
        "//slash message",
    ]
    with serving(root, lambda: [f"answer {n}" for n in range(1, 6)]) as server:
        out = _chat(server.ws_url, "\n".join(lines) + "\n")
    first = out.split("session ", 1)[1].split()[0]
    forked = re.search(r"forked \S+ at s0002: now in session (\S+)", out)
    fresh = re.search(r"a new session: now in session (\S+)", out)
    assert forked is not None and fresh is not None, out
    assert len({first, forked.group(1), fresh.group(1)}) == 3
    steps_tables = out.split("you> /steps")[1:]
    assert "s0004" in steps_tables[0] and "user_input" in steps_tables[0]
    assert "s0003" not in steps_tables[1].split("you>")[0]  # rolled back
    assert f"rewound {first} to before s0003: removed 2 steps" in out
    assert "error STEP_NOT_FOUND" in out and "usage: /rollback STEP" in out
    assert "unknown command /nonsense" in out
    assert _messages(first) == ["hello"]
    assert _messages(forked.group(1)) == ["hello", "third"]
    assert _messages(fresh.group(1)) == ["fourth", "/slash message"]
    assert out.rstrip().endswith(f"continue with: xclaw chat --session {fresh.group(1)}")


def test_steps_show_each_worker_under_the_step_that_started_it() -> None:
    from rich.console import Console
    from rich.table import Table

    from xclaw.cli.chat_cmd import _step_rows

    steps = [
        {"id": "s0001", "turn": 0, "kind": "user_input", "name": "user", "status": "completed"},
        {"id": "s0003", "turn": 1, "kind": "tool_call", "name": "agents.delegate"},
        {"id": "s0004", "turn": 2, "kind": "llm_call", "name": "lead", "status": "completed"},
    ]
    coder_steps = [{"id": "s0001", "turn": 1, "kind": "tool_call", "name": "deliver"}]
    children = [
        {"id": "web-1.coder-ab12", "worker": "coder", "state": "success", "step": "s0003"},
    ]
    children[0]["steps"] = coder_steps  # type: ignore[assignment]
    table = Table("step", "turn", "kind", "name", "status")
    _step_rows(table, steps, children, "")
    console = Console(width=120, record=True)
    console.print(table)
    lines = [line for line in console.export_text().splitlines() if "s000" in line or "└" in line]
    assert ["s0001" in lines[0], "s0003" in lines[1]] == [True, True]
    assert "└ coder-ab12" in lines[2] and "coder" in lines[2] and "success" in lines[2]
    assert "  s0001" in lines[3] and "deliver" in lines[3]  # the worker's own step, indented
    assert "s0004" in lines[4]  # the parent's next step comes after the worker
