"""Outside paths ask wherever a command names them (issue 20, item 3), and bulk deletes ask
inside the project like ``rm -rf`` (defence in depth) — through the real tool dispatch.

Each attack is one terminal.exec (or process.start) call under ``--approval deny``, in host
mode and in the bwrap sandbox: it must be refused before anything runs, with nothing outside
read or changed. The ordinary commands after them must run, unasked, in the sandbox (a false
refusal is a failure too). Nothing here needs root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.security.conftest import (
    REFUSED,
    SECRET,
    call,
    dump,
    git_env,
    output,
    set_mode,
    tree_snapshot,
)

PAYLOAD = '#!/bin/sh\ntouch RAN\ncat "$(dirname "$0")/../secret.txt"\n'

# {O}: the outside folder (a secret, and a program in tool/). In the project: run-link.sh
# and vendor/ link to that program and its folder, out/ to the outside folder, bin/ to an
# outside folder holding a link to the system sh. The third item must appear in the refusal.
ATTACKS: dict[str, tuple[str, dict[str, Any], str]] = {
    "program-absolute": (
        "terminal.exec",
        {"program": "{O}/tool/run.sh"},
        "runs a program from outside the project",
    ),
    "program-dotdot": (
        "terminal.exec",
        {"program": "../outside/tool/run.sh"},
        "runs a program from outside the project",
    ),
    "program-symlink-made-inside": (
        "terminal.exec",
        {"program": "./run-link.sh"},
        "./run-link.sh → {O}/tool/run.sh",
    ),
    "program-in-symlinked-folder": (
        "terminal.exec",
        {"program": "vendor/run.sh"},
        "vendor/run.sh → {O}/tool/run.sh",
    ),
    "program-folder-outside-file-system": (
        "terminal.exec",
        {"program": "bin/sh", "argv": ["-c", "touch RAN"]},
        "bin/sh → {O}/sysdir",
    ),
    "program-with-env": (
        "terminal.exec",
        {"program": "{O}/tool/run.sh", "env": {"MODE": "fast"}},
        "runs a program from outside the project",
    ),
    "program-via-env-launcher": (
        "terminal.exec",
        {"program": "env", "argv": ["vendor/run.sh"]},
        "runs a program from outside the project",
    ),
    "program-via-nice": (
        "terminal.exec",
        {"program": "nice", "argv": ["-n", "5", "{O}/tool/run.sh"]},
        "runs a program from outside the project",
    ),
    "process-start-outside": (
        "process.start",
        {"program": "vendor/run.sh", "wait_for_url_ms": 0},
        "runs a program from outside the project",
    ),
    "allowlisted-name-outside": (
        "terminal.exec",
        {"program": "{O}/tool/cat", "argv": ["data.txt"]},
        "runs a program from outside the project",
    ),
    "cwd-absolute": (
        "terminal.exec",
        {"program": "cat", "argv": ["secret.txt"], "cwd": "{O}"},
        "runs in {O}, outside the project",
    ),
    "cwd-through-symlink": (
        "terminal.exec",
        {"program": "cat", "argv": ["secret.txt"], "cwd": "out"},
        "runs in {O}, outside the project through a symbolic link",
    ),
    "cwd-symlink-dotdot": (
        "terminal.exec",
        {"program": "cat", "argv": ["secret.txt"], "cwd": "vendor/.."},
        "runs in {O}, outside the project",
    ),
    "argv-file-equals": (
        "terminal.exec",
        {"program": "grep", "argv": ["--file={O}/secret.txt", "data.txt"]},
        "arguments reach outside the project: --file={O}/secret.txt",
    ),
    "argv-at-file": (
        "terminal.exec",
        {"program": "gcc", "argv": ["@{O}/secret.txt"]},
        "arguments reach outside the project: @{O}/secret.txt",
    ),
    "argv-glued-at-file": (
        "terminal.exec",
        {"program": "curl", "argv": ["-sd@../outside/secret.txt", "http://127.0.0.1:9/"]},
        "arguments reach outside the project: -sd@../outside/secret.txt",
    ),
    "argv-file-url": (
        "terminal.exec",
        {"program": "curl", "argv": ["-s", "file://{O}/secret.txt"]},
        "arguments reach outside the project: file://{O}/secret.txt",
    ),
    "argv-through-symlinked-folder": (
        "terminal.exec",
        {"program": "cat", "argv": ["out/secret.txt"]},
        "arguments reach outside the project: out/secret.txt",
    ),
    "env-value-path": (
        "terminal.exec",
        {"program": "make", "env": {"CONFIG": "{O}/secret.txt"}},
        "arguments reach outside the project: CONFIG={O}/secret.txt",
    ),
    "stdin-xargs-cat": (
        "terminal.exec",
        {"program": "xargs", "argv": ["cat"], "stdin": "{O}/secret.txt\n"},
        "standard input names files outside the project",
    ),
    "stdin-xargs-quoted": (
        "terminal.exec",
        {"program": "xargs", "argv": ["cat"], "stdin": 'data.txt "{O}/secret.txt"\n'},
        "standard input names files outside the project",
    ),
    "stdin-wc-files0-from": (
        "terminal.exec",
        {"program": "wc", "argv": ["--files0-from=-"], "stdin": "{O}/secret.txt\0"},
        "standard input names files outside the project",
    ),
    "stdin-tar-files-from": (
        "terminal.exec",
        {"program": "tar", "argv": ["-cf", "o.tar", "-T", "-"], "stdin": "out/secret.txt\n"},
        "standard input names files outside the project",
    ),
    # Inside the project: every file would go, as with rm -rf.
    "find-exec-rm": (
        "terminal.exec",
        {"program": "find", "argv": [".", "-name", "*.txt", "-exec", "rm", "{}", "+"]},
        "rm run for every file",
    ),
    "find-execdir-rm": (
        "terminal.exec",
        {"program": "find", "argv": [".", "-type", "f", "-execdir", "rm", "-v", "{}", ";"]},
        "rm run for every file",
    ),
    "find-delete": (
        "terminal.exec",
        {"program": "find", "argv": ["src", "-delete"]},
        "find -delete",
    ),
    "xargs-rm": (
        "terminal.exec",
        {"program": "xargs", "argv": ["rm"], "stdin": "data.txt\nsrc/a.txt\n"},
        "rm run for every file",
    ),
    "find-exec-sh-c": (
        "terminal.exec",
        {
            "program": "find",
            "argv": [".", "-name", "*.txt", "-exec", "sh", "-c", 'rm "$1"', "_", "{}", ";"],
        },
        "inline code (sh -c), run for every file",
    ),
    "xargs-sh-c": (
        "terminal.exec",
        {"program": "xargs", "argv": ["-I{}", "sh", "-c", "rm {}"], "stdin": "data.txt\n"},
        "inline code (sh -c), run for every file",
    ),
    "sh-c-rm-rf": (
        "terminal.exec",
        {"program": "sh", "argv": ["-c", "echo x && rm -rf src"]},
        "recursive or forced delete, in inline code",
    ),
    "timeout-xargs-rm": (
        "terminal.exec",
        {"program": "timeout", "argv": ["5", "xargs", "rm"], "stdin": "data.txt\n"},
        "rm run for every file",
    ),
}


def _fill(value: Any, outside: Path, root: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{O}", str(outside)).replace("{R}", str(root))
    if isinstance(value, list | tuple):
        return type(value)(_fill(v, outside, root) for v in value)
    if isinstance(value, dict):
        return {k: _fill(v, outside, root) for k, v in value.items()}
    return value


def _stage(root: Path, outside: Path) -> None:
    tool = outside / "tool"
    tool.mkdir()
    for name in ("run.sh", "cat"):
        (tool / name).write_text(PAYLOAD)
        (tool / name).chmod(0o755)
    (outside / "sysdir").mkdir()
    os.symlink(shutil.which("sh") or "/bin/sh", outside / "sysdir" / "sh")
    (root / "data.txt").write_text("hello\n")
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("hello a\n")
    os.symlink(tool / "run.sh", root / "run-link.sh")
    os.symlink(tool, root / "vendor")
    os.symlink(outside, root / "out")
    os.symlink(outside / "sysdir", root / "bin")


@pytest.mark.parametrize("mode", ["host", "bwrap"])
@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_outside_paths_and_bulk_deletes_are_refused(
    case: str, mode: str, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, mode)
    _stage(root, outside)
    before_root, before_outside = tree_snapshot(root), tree_snapshot(outside)
    tool, args, why = _fill(ATTACKS[case], outside, root)
    result = call(root, tool, {"timeout_ms": 4000, **args} if tool == "terminal.exec" else args)
    text = dump(result)
    assert not result.ok, f"{case} ran under deny: {text[:1500]}"
    assert result.error_code == "APPROVAL_DENIED", text
    assert result.data["policy_code"] in REFUSED, text
    assert "Nothing ran" in result.message
    assert why in result.message, f"{case}: {result.message}"
    assert not (root / "RAN").exists(), f"{case}: the program ran"
    assert SECRET not in text
    assert tree_snapshot(root) == before_root, f"{case}: the project changed"
    assert tree_snapshot(outside) == before_outside, f"{case}: the outside folder changed"


def _git_init(root: Path) -> None:
    env = git_env(root.parent)
    for words in (["init", "-q"], ["add", "data.txt"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *words], cwd=root, env=env, check=True, capture_output=True)


def _stage_ordinary(root: Path) -> None:
    (root / "data.txt").write_text("hello\n")
    (root / "tmp.txt").write_text("scratch\n")
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("hello a\n")
    (root / "script.py").write_text(
        "import os\nprint('ok-script', os.environ.get('GREETING', ''))\n"
    )
    os.symlink("data.txt", root / "alias.txt")
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), venv_bin / "python3")
    (venv_bin / "tool").write_text("#!/bin/sh\necho ok-tool\n")
    (venv_bin / "tool").chmod(0o755)
    _git_init(root)


# (arguments, text the output must hold, also in host mode: an allow-listed read)
ORDINARY: dict[str, tuple[dict[str, Any], str, bool]] = {
    "usr-bin-env-python": (
        {"program": "/usr/bin/env", "argv": ["python3", "-c", "print('ok-env')"]},
        "ok-env",
        False,
    ),
    "python-script": ({"program": "python3", "argv": ["script.py"]}, "ok-script", False),
    "venv-python": ({"program": ".venv/bin/python3", "argv": ["script.py"]}, "ok-script", False),
    "venv-python-with-env": (
        {"program": ".venv/bin/python3", "argv": ["script.py"], "env": {"GREETING": "hi"}},
        "ok-script hi",
        False,
    ),
    "venv-tool": ({"program": ".venv/bin/tool"}, "ok-tool", False),
    "venv-tool-absolute": ({"program": "{R}/.venv/bin/tool"}, "ok-tool", False),
    "system-sh-absolute": (
        {"program": shutil.which("sh") or "/bin/sh", "argv": ["-c", "echo ok-sh"]},
        "ok-sh",
        False,
    ),
    "bash-c-build": (
        {
            "program": "bash",
            "argv": ["-c", "mkdir -p build && echo ok-build > build/o && cat build/o"],
        },
        "ok-build",
        False,
    ),
    "find-exec-grep": (
        {
            "program": "find",
            "argv": [".", "-name", "*.txt", "-exec", "grep", "-l", "hello", "{}", "+"],
        },
        "a.txt",
        False,
    ),
    "xargs-grep-inside": (
        {"program": "xargs", "argv": ["grep", "-c", "hello"], "stdin": "data.txt\n"},
        "1",
        False,
    ),
    "rm-one-file": ({"program": "rm", "argv": ["tmp.txt"]}, "", False),
    "git-status": ({"program": "git", "argv": ["status", "--short"]}, "", True),
    "ls-la": ({"program": "ls", "argv": ["-la"]}, "data.txt", True),
    "ls-in-subfolder": ({"program": "ls", "cwd": "src"}, "a.txt", True),
    "cat-symlink-inside": ({"program": "cat", "argv": ["alias.txt"]}, "hello", True),
    "find-by-name": ({"program": "find", "argv": [".", "-name", "*.txt"]}, "a.txt", True),
}


def _ordinary_cases() -> list[tuple[str, str]]:
    return [
        (case, mode)
        for case in sorted(ORDINARY)
        for mode in (("host", "bwrap") if ORDINARY[case][2] else ("bwrap",))
    ]


@pytest.mark.parametrize(("case", "mode"), _ordinary_cases())
def test_ordinary_work_is_not_refused(
    case: str, mode: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, mode)
    _stage_ordinary(root)
    args, expected, _ = ORDINARY[case]
    result = call(root, "terminal.exec", {"timeout_ms": 20_000, **_fill(args, root, root)})
    text = dump(result)
    assert result.error_code not in REFUSED, f"{case} was refused: {text[:1500]}"
    assert result.ok, f"{case} failed: {text[:1500]}"
    assert expected in output(result), text[:1500]
