"""`xclaw tools call`: one call through the real validation + policy + approval path.

Every escape class must fail with a coded error and leave everything outside the root
unread and unwritten; dangerous commands under ``--approval deny`` never run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app

SECRET = "TOP-SECRET-OUTSIDE"


def tools_call(
    root: Path, name: str, args: dict[str, Any], *extra: str
) -> tuple[int, dict[str, Any]]:
    runner = CliRunner()
    result = runner.invoke(
        app, ["tools", "call", name, "--args", json.dumps(args), "-C", str(root), *extra]
    )
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text(SECRET)
    return d.resolve()


def _refused(code: int, out: dict[str, Any]) -> str:
    assert code == 1 and out["ok"] is False, out
    assert SECRET not in json.dumps(out)
    return str(out.get("error_code"))


@pytest.mark.parametrize("name", ["fs.read", "fs.list", "fs.search"])
def test_traversal_and_absolute_reads_are_refused(root: Path, outside: Path, name: str) -> None:
    for raw in ["../outside/secret.txt", str(outside / "secret.txt"), "../outside"]:
        args: dict[str, Any] = {"path": raw}
        if name == "fs.search":
            args["pattern"] = SECRET
        code, out = tools_call(root, name, args)
        assert _refused(code, out) in {"APPROVAL_DENIED", "PATH_OUTSIDE_ROOT"}


def test_writes_outside_are_refused_and_nothing_is_written(root: Path, outside: Path) -> None:
    for raw in ["../outside/new.txt", str(outside / "new.txt"), "../outside/secret.txt"]:
        code, out = tools_call(root, "fs.write", {"path": raw, "content": "pwned"})
        _refused(code, out)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


def test_symlink_escapes_through_parent_and_target(root: Path, outside: Path) -> None:
    (root / "linkdir").symlink_to(outside)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dangling.txt").symlink_to(outside / "missing.txt")
    for name, args in [
        ("fs.read", {"path": "linkdir/secret.txt"}),
        ("fs.read", {"path": "link.txt"}),
        ("fs.list", {"path": "linkdir"}),
        ("fs.write", {"path": "linkdir/new.txt", "content": "pwned"}),
        ("fs.write", {"path": "link.txt", "content": "pwned"}),
        ("fs.write", {"path": "dangling.txt", "content": "pwned"}),
    ]:
        code, out = tools_call(root, name, args, "--approval", "allow")
        assert _refused(code, out).startswith("PATH_"), out
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


def test_device_files_and_nul_bytes(root: Path) -> None:
    (root / "zero").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe")
    cases = [
        ({"path": "zero"}, "--approval", "allow"),
        ({"path": "pipe"}, "--approval", "allow"),
        ({"path": "/dev/zero"}, "--approval", "allow"),
        ({"path": "a\u0000b"}, "--approval", "allow"),
        ({"path": "C:\\Windows\\win.ini"}, "--approval", "allow"),
        ({"path": "\\\\server\\share\\x"}, "--approval", "allow"),
    ]
    for args, *extra in cases:
        code, out = tools_call(root, "fs.read", args, *extra)
        assert _refused(code, out) in {"PATH_SPECIAL", "PATH_INVALID", "PATH_SYMLINK_ESCAPE"}


def test_reads_inside_the_root_work(root: Path) -> None:
    (root / "a.txt").write_text("hello\n")
    code, out = tools_call(root, "fs.read", {"path": "a.txt"})
    assert code == 0 and out["ok"] and "hello" in json.dumps(out)


@pytest.mark.parametrize(
    "program,argv",
    [
        ("rm", ["-rf", "keep"]),
        ("/bin/rm", ["-r", "-f", "keep"]),
        ("bash", ["-c", "touch pwned"]),
        ("sh", ["-c", "touch pwned"]),
        ("python3", ["-c", "open('pwned','w')"]),
        ("env", ["FOO=1", "sh", "-c", "touch pwned"]),
        ("nice", ["-n", "5", "bash", "-c", "touch pwned"]),
        ("timeout", ["5", "python3", "-c", "open('pwned','w')"]),
        ("sudo", ["touch", "pwned"]),
        ("chmod", ["-R", "000", "keep"]),
        ("git", ["-C", ".", "push", "origin", "main"]),
        ("npm", ["publish"]),
        ("touch", ["../outside/pwned"]),
    ],
)
def test_dangerous_commands_are_refused_under_deny(
    root: Path, outside: Path, program: str, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Host mode: nothing contains the program, so the policy is the only boundary.
    monkeypatch.setenv("XCLAW_SANDBOX", "host")
    (root / "keep").mkdir()
    (root / "keep" / "file").write_text("x")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    code, out = tools_call(
        root, "terminal.exec", {"program": program, "argv": argv}, "--approval", "deny"
    )
    assert _refused(code, out) == "APPROVAL_DENIED"
    assert (root / "keep" / "file").read_text() == "x"
    assert not (root / "pwned").exists() and not (outside / "pwned").exists()


def test_safe_command_runs(root: Path) -> None:
    code, out = tools_call(root, "terminal.exec", {"program": "touch", "argv": ["made"]})
    assert code == 0 and out["ok"] and (root / "made").exists()


def test_bad_arguments_and_unknown_tools(root: Path) -> None:
    code, out = tools_call(root, "fs.read", {"path": "a", "bogus": True})
    assert code == 1 and out["error_code"] == "TOOL_ARGUMENTS_INVALID" and out["retryable"]
    code, out = tools_call(root, "nope", {})
    assert code == 1 and out["error_code"] == "TOOL_NOT_FOUND"
    runner = CliRunner()
    bad = runner.invoke(app, ["tools", "call", "fs.read", "--args", "[1]", "-C", str(root)])
    assert bad.exit_code == 1 and json.loads(bad.stdout)["error_code"] == "TOOL_ARGUMENTS_INVALID"
    bad = runner.invoke(app, ["tools", "call", "fs.read", "--args", "{nope", "-C", str(root)])
    assert bad.exit_code == 2
