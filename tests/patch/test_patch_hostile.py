"""Hostile tool calls: nothing outside the worktree changes, and the job fails closed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.patch.conftest import tree_hash
from tests.patch.test_patch_job import HI, call, job

from xclaw.patch.diffparse import parse_patch
from xclaw.sandbox.host import HostSandbox

GIT_CONFIG_PATCH = (
    "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n"
    "@@ -1 +1 @@\n-x\n+y\n"
)


@pytest.mark.parametrize(
    "bad",
    [
        call("replace_text", "h1", path="../outside.txt", oldText="a", newText="b"),
        call("replace_text", "h1", path="/etc/passwd", oldText="a", newText="b"),
        call("replace_text", "h1", path=".env", oldText="TOKEN", newText="X"),
        call("apply_patch", "h1", patch=GIT_CONFIG_PATCH),
        call("replace_text", "h1", path="src/app.py", oldText="x" * 600_000, newText="y"),
    ],
)
def test_terminal_hostile_write_ends_job(
    repo: Path, sandbox: HostSandbox, bad: dict[str, Any]
) -> None:
    start = tree_hash(repo)
    record = asyncio.run(job(repo, [{"tool_calls": [bad]}], sandbox).run())
    assert record.status == "failed"
    assert tree_hash(repo) == start
    assert "TOKEN=secret" in (repo / ".env").read_text()


FENCED = "```diff\ndiff --git a/src/app.py b/src/app.py\n```\n"
BEGIN = "*** Begin Patch\n*** Update File: src/app.py\n*** End Patch\n"


def test_retryable_rejections_then_success(repo: Path, sandbox: HostSandbox) -> None:
    start = tree_hash(repo)
    turns = [
        {
            "tool_calls": [
                call("read_file", "r1", path="../../etc/passwd"),
                call("read_file", "r2", path=".git/config"),
                call("read_file", "r3", path="missing.py"),
            ]
        },
        {
            "expect": {"last_contains": ["TOOL_PATH_DENIED"]},
            "tool_calls": [
                call("apply_patch", "p1", patch=FENCED),
            ],
        },
        {
            "expect": {"last_contains": ["PATCH_REJECTED"]},
            "tool_calls": [call("apply_patch", "p2", patch=BEGIN)],
        },
        {
            "expect": {"last_contains": ["PATCH_REJECTED"]},
            "tool_calls": [
                call("replace_text", "p3", path="src/app.py", oldText="nowhere", newText="x"),
            ],
        },
        {
            "expect": {"last_contains": ["PATCH_REJECTED"]},
            "tool_calls": [
                call("replace_text", "p4", path="src/app.py", oldText="'hello'", newText="'hi'   "),
            ],
        },
        {
            "expect": {"last_contains": ["whitespace"]},
            "tool_calls": [
                call("read_file", "m1", path="src/app.py", extra=1),
                call("replace_text", "d1", path="src/app.py", oldText="'hello'", newText="'hi'"),
                call("replace_text", "d1", path="src/app.py", oldText="'hi'", newText="'yo'"),
            ],
        },
        {
            "expect": {"last_contains": ["TOOL_ARGUMENTS_INVALID"]},
            "tool_calls": [
                call("read_file", "r1", path="src/app.py"),  # a provider may reuse ids across turns
            ],
        },
        {"expect": {"last_contains": ["'hi'"]}, "text": "done"},
    ]
    pj = job(repo, turns, sandbox)
    record = asyncio.run(pj.run())
    pj.model.assert_complete()  # type: ignore[attr-defined]
    assert record.status == "review", record.reason
    assert "'hi'" in record.diff and "'yo'" not in record.diff  # the duplicate id did nothing
    assert tree_hash(repo) == start


def test_apply_conflict_fails_closed(repo: Path, sandbox: HostSandbox) -> None:
    turns = [
        {"tool_calls": [HI]},
        "done",
    ]
    pj = job(repo, turns, sandbox)
    record = asyncio.run(pj.run())
    record.diff = record.diff.replace("return 'hello'", "return 'HELLO'")  # stale context
    before = tree_hash(repo)
    with pytest.raises(Exception) as err:
        asyncio.run(pj.apply(record))
    assert getattr(err.value, "code", "") == "PATCH_CONFLICT"
    assert tree_hash(repo) == before


@pytest.mark.parametrize(
    "text",
    [
        "diff --git a/a b/b\n--- a/a\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n",
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,3 +1 @@\n-x\n+y\n",
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\nrm -rf /\n",
    ],
)
def test_non_canonical_diffs_are_rejected(text: str) -> None:
    with pytest.raises(Exception) as err:
        parse_patch(text)
    assert getattr(err.value, "code", "") == "PATCH_REJECTED"
