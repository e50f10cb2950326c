"""Harness for the security suites: one tool call through validation, policy and approval.

Every call goes the way ``xclaw tools call`` takes it (``coding_registry`` + ``PolicyEngine``
+ ``run_tool_calls``), in a chosen sandbox mode, and the session (its network namespace and
processes) is closed afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xclaw.cli.tools_cmd import _CallDeps
from xclaw.coding.toolset import coding_registry
from xclaw.core.dispatch import run_tool_calls
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunState
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace

SECRET = "XCLAW-TOP-SECRET-7f3a"
KEY_VALUE = "sk-planted-9c1e5b7d"
PLANTED = {
    "OPENAI_API_KEY": KEY_VALUE + "-openai",
    "ANTHROPIC_API_KEY": KEY_VALUE + "-anthropic",
    "MYSQL_PWD": KEY_VALUE + "-mysql",
    "DB_PASS": KEY_VALUE + "-db",
    "PGPASSWORD": KEY_VALUE + "-pg",
    "GITHUB_TOKEN": KEY_VALUE + "-gh",
}
# Codes that mean "policy stopped it before anything ran".
REFUSED = {
    "APPROVAL_DENIED",
    "COMMAND_NOT_ALLOWLISTED",
    "COMMAND_NEEDS_APPROVAL",
    "COMMAND_PUBLISHES",
    "COMMAND_NEEDS_NETWORK",
    "COMMAND_PROTECTED_PATH",
    "COMMAND_OUTSIDE_ROOT",
    "PATH_OUTSIDE_ROOT",
    "PATH_HARDLINK",
    "PATH_PROTECTED",
}


async def call_async(
    root: Path,
    name: str,
    args: dict[str, Any],
    *,
    approval: str = "deny",
    workspace: Workspace | None = None,
) -> ToolResult:
    owned = workspace is None  # a workspace the caller passed lives on after the call
    workspace = workspace or Workspace(root, output_dir=root.parent / "xclaw-out")
    deps = _CallDeps(
        coding_registry().bind(workspace),
        PolicyEngine(workspace),
        ModeApprover(approval),  # type: ignore[arg-type]
    )
    state = RunState("security", f"call {name}", [])
    try:
        records = await run_tool_calls(state, deps, [ToolCallPart("call_1", name, args)])
    finally:
        if owned:
            await workspace.close()
    return records[0].result


def call(root: Path, name: str, args: dict[str, Any], *, approval: str = "deny") -> ToolResult:
    return asyncio.run(call_async(root, name, args, approval=approval))


def dump(result: ToolResult) -> str:
    return json.dumps(result.to_dict(), default=str)


def output(result: ToolResult) -> str:
    return str(result.data.get("stdout", "")) + str(result.data.get("stderr", ""))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret folder outside the project root."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text(SECRET + "\n")
    return d.resolve()


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (home / ".gitconfig").write_text("[user]\n\tname = Victim\n")
    monkeypatch.setenv("HOME", str(home))
    return home.resolve()


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for k, v in PLANTED.items():
        monkeypatch.setenv(k, v)
    return PLANTED


@pytest.fixture
def sandbox_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("XCLAW_SANDBOX", raising=False)
    yield


def set_mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("XCLAW_SANDBOX", mode)


def no_leak(result: ToolResult, *needles: str) -> None:
    text = dump(result)
    for n in (SECRET, KEY_VALUE, *needles):
        assert n not in text, f"leaked {n!r}: {text[:2000]}"


def tree_snapshot(path: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``path`` with its mode and content (to prove nothing changed)."""
    snap: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            snap[str(p.relative_to(path))] = (st.st_mode, data)
    return snap


def git_env(home: Path) -> dict[str, str]:
    """A git environment of fixed identity that reads no system config (test fixtures)."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
