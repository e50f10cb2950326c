"""Secrets never reach what we print, nor the programs a model starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import PreparedCall
from xclaw.redact import MASK, redact, scrub_environment
from xclaw.tools.base import Workspace
from xclaw.tools.registry import ToolRegistry

FAKE_KEYS = [
    "sk-proj-abcdefghijklmnopqrstuvwx1234",
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abcdefghij",
]


@pytest.mark.parametrize("key", FAKE_KEYS)
def test_known_formats_are_masked(key: str) -> None:
    out = redact(f"calling with {key} now")
    assert key not in out and MASK in out


def test_assignments_and_bearer_tokens() -> None:
    text = (
        'OPENAI_API_KEY=abc123secretvalue password: "hunter22" '
        "Authorization: Bearer abcdef123456789"
    )
    out = redact(text)
    assert "abc123secretvalue" not in out and "hunter22" not in out and "abcdef123456789" not in out
    assert out.startswith("OPENAI_API_KEY=")


def test_ordinary_text_is_untouched() -> None:
    text = "built 2 pages into dist/ at http://127.0.0.1:8000/ (token count 12)"
    assert redact(text) == text


def test_scrub_environment_drops_credentials() -> None:
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "x",
        "GITHUB_TOKEN": "y",
        "DB_PASSWORD": "z",
        "HOME": "/root",
    }
    assert scrub_environment(env) == {"PATH": "/bin", "HOME": "/root"}


async def test_programs_never_see_our_keys(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak-0000000000")
    box = coding_registry().bind(Workspace(root))
    prepared = box.prepare(ToolCallPart("c1", "terminal.exec", {"program": "env"}))
    assert isinstance(prepared, PreparedCall)
    result = await box.execute(prepared, lambda stream, text: None)
    assert result.ok and "should-not-leak" not in json.dumps(result.to_dict())
    assert "PATH=" in result.data["stdout"]


def test_env_argument_is_judged_by_policy(root: Path) -> None:
    from xclaw.policy.engine import PolicyEngine

    ws = Workspace(root)
    box = ToolRegistry(coding_registry()).bind(ws)
    prepared = box.prepare(
        ToolCallPart(
            "c1", "terminal.exec", {"program": "ls", "env": {"GIT_SSH_COMMAND": "touch pwned"}}
        )
    )
    assert isinstance(prepared, PreparedCall)
    assert PolicyEngine(ws).evaluate(prepared).action == "ask"
