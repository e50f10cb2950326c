"""Where commands reach outside the project: programs, cwd, env values, redirect-like
arguments and file names on standard input, judged on real terminal.exec calls."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import Command, Decision, Grant, PreparedCall
from xclaw.policy.command_paths import command_outside_paths, program_locations
from xclaw.policy.engine import PolicyEngine
from xclaw.sandbox.bwrap import BwrapSandbox
from xclaw.sandbox.host import HostSandbox
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.process import process_tools
from xclaw.tools.registry import ToolRegistry


class Calls:
    """terminal.exec and process.start calls judged by the engine, host or sandboxed."""

    def __init__(self, root: Path, *, host: bool) -> None:
        self.workspace = Workspace(root, sandbox=HostSandbox() if host else BwrapSandbox())
        tools = ToolRegistry([*exec_tools(), *process_tools()])
        self.toolbox = tools.bind(self.workspace)
        self.engine = PolicyEngine(self.workspace)

    def decide(
        self, program: str, *argv: str, tool: str = "terminal.exec", **extra: Any
    ) -> Decision:
        arguments = {"program": program, "argv": list(argv), **extra}
        prepared = self.toolbox.prepare(ToolCallPart("c1", tool, arguments))
        assert isinstance(prepared, PreparedCall), prepared
        return self.engine.evaluate(prepared)


@pytest.fixture(params=["host", "bwrap"])
def calls(request: pytest.FixtureRequest, root: Path) -> Calls:
    return Calls(root, host=request.param == "host")


@pytest.fixture
def sandboxed(root: Path) -> Calls:
    return Calls(root, host=False)


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Another project next to this one, with a program and a secret."""
    d = tmp_path / "other"
    (d / "tool").mkdir(parents=True)
    (d / "tool" / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (d / "tool" / "run.sh").chmod(0o755)
    (d / "secret.txt").write_text("s3cret\n")
    return d.resolve()


def _outside(d: Decision) -> tuple[str, str]:
    return d.action, d.code


# --- programs --------------------------------------------------------------------------


def test_program_outside_the_project_asks_for_its_folder(calls: Calls, other: Path) -> None:
    d = calls.decide(str(other / "tool" / "run.sh"))
    assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT")
    assert "runs a program from outside the project" in d.reason
    assert d.targets == (str(other / "tool" / "run.sh"),)
    assert d.grant == Grant("path", str(other / "tool"))
    calls.engine.grant(d.grant)
    assert calls.decide(str(other / "tool" / "run.sh")).code != "COMMAND_OUTSIDE_ROOT"


@pytest.mark.parametrize("tool", ["terminal.exec", "process.start"])
def test_program_through_a_symlink_out_asks(
    sandboxed: Calls, root: Path, other: Path, tool: str
) -> None:
    os.symlink(other / "tool" / "run.sh", root / "run.sh")
    os.symlink(other / "tool", root / "vendor")
    for program in ("./run.sh", "vendor/run.sh", "../other/tool/run.sh"):
        d = sandboxed.decide(program, tool=tool)
        assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT"), program
        assert d.targets == (str(other / "tool" / "run.sh"),)
    assert "vendor/run.sh → " in sandboxed.decide("vendor/run.sh").reason


def test_program_whose_folder_is_outside_asks_though_the_file_is_a_system_one(
    sandboxed: Calls, root: Path, other: Path
) -> None:
    # The sandbox shows the program's folder: a link to /bin/sh in another project's folder
    # would show that folder.
    os.symlink(shutil.which("sh") or "/bin/sh", other / "sh")
    os.symlink(other, root / "bin")
    d = sandboxed.decide("bin/sh", "-c", "true")
    assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT")
    assert d.targets == (str(other),)


def test_programs_launchers_run_are_judged_too(sandboxed: Calls, other: Path) -> None:
    run = str(other / "tool" / "run.sh")
    for line in (["env", run], ["nice", "-n", "5", run], ["timeout", "5", run]):
        assert sandboxed.decide(*line).code == "COMMAND_OUTSIDE_ROOT", line
    d = sandboxed.decide(run, env={"MODE": "x"})
    assert "runs a program from outside the project" in d.reason


def test_system_and_path_programs_run_unasked(sandboxed: Calls) -> None:
    assert sandboxed.decide("/usr/bin/env", "python3", "-c", "print(1)").action == "allow"
    sh = shutil.which("sh")
    assert sh is not None
    assert sandboxed.decide(sh, "-c", "echo hi").action == "allow"
    assert sandboxed.decide(os.path.realpath(sys.executable), "-V").action == "allow"
    assert sandboxed.decide("env", "/usr/bin/env", "true").action == "allow"


def test_project_venv_programs_run_unasked(sandboxed: Calls, root: Path) -> None:
    (root / ".venv" / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), root / ".venv" / "bin" / "python3")
    (root / ".venv" / "bin" / "tool").write_text("#!/bin/sh\necho tool\n")
    for program in (".venv/bin/python3", str(root / ".venv" / "bin" / "python3")):
        assert sandboxed.decide(program, "script.py").action == "allow", program
        # env= makes the program an argument of `env` for the policy: still a program.
        assert sandboxed.decide(program, "script.py", env={"X": "1"}).action == "allow"
    assert sandboxed.decide(".venv/bin/tool").action == "allow"


def test_path_entries_and_home_toolchains_are_program_locations(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    shims = home / ".mytool" / "shims"
    shims.mkdir(parents=True)
    local_bin = home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    tools = tmp_path / "opt-tools" / "bin"
    tools.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    path = [str(shims), str(local_bin), str(tools), str(home), "relative/bin", "/"]
    monkeypatch.setenv("PATH", os.pathsep.join([*path, os.environ["PATH"]]))
    found = program_locations(root)
    assert home / ".mytool" in found  # the toolchain's top folder, as the sandbox shows it
    assert local_bin in found and home / ".local" not in found
    assert tools in found
    assert home not in found and Path("/") not in found and tmp_path not in found
    h = Calls(root, host=False)
    versions = home / ".mytool" / "versions" / "1.0" / "bin"
    versions.mkdir(parents=True)
    (versions / "tool").write_text("#!/bin/sh\n")
    assert h.decide(str(versions / "tool")).action == "allow"
    (home / "projects" / "x").mkdir(parents=True)
    (home / "projects" / "x" / "tool").write_text("#!/bin/sh\n")
    assert h.decide(str(home / "projects" / "x" / "tool")).code == "COMMAND_OUTSIDE_ROOT"


def test_malformed_programs_never_raise(calls: Calls) -> None:
    # terminal.exec refuses NUL bytes itself; the policy must only not crash on them.
    assert calls.decide("./a\x00b").action in ("allow", "ask")
    assert calls.decide("env", "./a\x00b").action in ("allow", "ask")


def test_host_allow_list_needs_the_real_program(root: Path, other: Path) -> None:
    h = Calls(root, host=True)
    (root / "ls").write_text("#!/bin/sh\necho not ls\n")
    d = h.decide("./ls", "-la")  # a file the model wrote, named like a reader
    assert _outside(d) == ("ask", "COMMAND_NOT_ALLOWLISTED")
    (other / "tool" / "cat").write_text("#!/bin/sh\n")
    assert h.decide(str(other / "tool" / "cat"), "x").code == "COMMAND_OUTSIDE_ROOT"
    assert h.decide("/bin/ls", "-la").action == "allow"
    assert h.decide("ls", "-la").action == "allow"


# --- working directory -------------------------------------------------------------------


def test_cwd_outside_or_through_a_symlink_asks(calls: Calls, root: Path, other: Path) -> None:
    os.symlink(other, root / "out")
    for cwd in (str(other), "out", "out/tool/.."):
        d = calls.decide("ls", cwd=cwd)
        assert _outside(d) == ("ask", "PATH_OUTSIDE_ROOT"), cwd
        assert d.targets == (str(other),)
    # Relative programs and arguments are judged from where the command would run.
    d = calls.decide("tool/run.sh", cwd="out")
    assert str(other / "tool" / "run.sh") in d.targets


# --- env values, redirect-like arguments ---------------------------------------------------


def test_env_values_that_are_paths_ask(sandboxed: Calls, other: Path) -> None:
    d = sandboxed.decide("make", env={"CONFIG": str(other / "secret.txt")})
    assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT")
    assert d.targets == (str(other / "secret.txt"),)
    assert sandboxed.decide("make", env={"CONFIG": "build/conf.mk"}).action == "allow"


@pytest.mark.parametrize(
    "argv",
    [
        ["--file={O}/secret.txt"],
        ["@{O}/secret.txt"],
        ["-d@{O}/secret.txt"],
        ["-F", "f=<{O}/secret.txt"],
        ["file://{O}/secret.txt"],
        ["--data-binary", "@../other/secret.txt"],
    ],
)
def test_redirect_like_arguments_ask(sandboxed: Calls, other: Path, argv: list[str]) -> None:
    words = [a.replace("{O}", str(other)) for a in argv]
    d = sandboxed.decide("gcc", *words)
    assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT")
    assert d.targets == (str(other / "secret.txt"),)


# --- standard input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "stdin"),
    [
        (["xargs", "cat"], "{O}/secret.txt\n"),
        (["xargs", "-0", "cat"], "data.txt\0{O}/secret.txt\0"),
        (["xargs", "cat"], "'{O}/secret.txt'\n"),
        (["xargs", "-d", "\n", "cat"], "  {O}/secret.txt\n"),
        (["wc", "--files0-from=-"], "{O}/secret.txt\0"),
        (["tar", "-cf", "o.tar", "-T", "-"], "{O}/secret.txt\n"),
        (["cpio", "-o"], "../other/secret.txt\n"),
        (["git", "add", "--pathspec-from-file=-"], "{O}/secret.txt\n"),
        (["nice", "xargs", "cat"], "{O}/secret.txt\n"),
    ],
)
def test_file_names_on_standard_input_ask(
    calls: Calls, other: Path, line: list[str], stdin: str
) -> None:
    d = calls.decide(*line, stdin=stdin.replace("{O}", str(other)))
    assert _outside(d) == ("ask", "COMMAND_OUTSIDE_ROOT")
    assert "standard input names files outside the project" in d.reason
    assert str(other / "secret.txt") in d.targets


def test_standard_input_that_is_no_file_list_is_not_judged(
    sandboxed: Calls, root: Path, other: Path
) -> None:
    (root / "data.txt").write_text("x\n")
    assert sandboxed.decide("xargs", "cat", stdin="data.txt\n").action == "allow"
    text = f"{other}/secret.txt\n"
    assert sandboxed.decide("cat", stdin=text).action == "allow"  # text, not a file name
    assert sandboxed.decide("python3", "fmt.py", stdin=text).action == "allow"


def test_outside_paths_are_listed_by_role(root: Path, other: Path) -> None:
    command = Command(
        "env",
        (f"CFG={other}/c", "xargs", str(other / "tool" / "run.sh"), "../other/secret.txt"),
        ".",
        stdin=f"{other}/x\n",
    )
    found = command_outside_paths(command, root, root)
    assert [(o.role, o.path) for o in found] == [
        ("program", other / "tool" / "run.sh"),
        ("argument", other / "c"),
        ("argument", other / "secret.txt"),
        ("standard input", other / "x"),
    ]


# --- deleting through find and xargs -------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        ["find", ".", "-name", "*.txt", "-exec", "rm", "{}", "+"],
        ["find", ".", "-execdir", "rm", "{}", ";"],
        ["find", ".", "-delete"],
        ["xargs", "rm"],
        ["find", ".", "-exec", "sh", "-c", 'rm "$1"', "_", "{}", ";"],
        ["sh", "-c", "rm -rf src"],
        ["rm", "-rf", "src"],
    ],
)
def test_bulk_deletes_ask_inside_the_sandbox_like_rm_rf(sandboxed: Calls, line: list[str]) -> None:
    d = sandboxed.decide(*line, stdin="a.txt\n")
    assert _outside(d) == ("ask", "COMMAND_NEEDS_APPROVAL")
    assert d.grant is not None and d.grant.kind == "command"


def test_a_granted_rm_covers_find_and_xargs_but_not_other_code(sandboxed: Calls) -> None:
    d = sandboxed.decide("find", ".", "-exec", "rm", "{}", "+")
    assert d.grant == Grant("command", "rm")
    sandboxed.engine.grant(d.grant)
    assert sandboxed.decide("find", ".", "-exec", "rm", "{}", "+").action == "allow"
    assert sandboxed.decide("xargs", "rm", stdin="a.txt\n").action == "allow"
    assert sandboxed.decide("bash", "-c", "rm -rf x; git push").action == "ask"
    mixed = sandboxed.decide("find", ".", "-exec", "rm", "{}", "+", "-exec", "sh", "-c", "x", ";")
    assert mixed.action == "ask"
