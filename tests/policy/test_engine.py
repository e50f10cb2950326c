"""PolicyEngine decisions on real prepared calls: paths, secrets, commands, grants."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import Access, Command, Decision, Grant, Policy, PreparedCall, Risk
from xclaw.policy.engine import PolicyEngine, narrow_path_grant
from xclaw.sandbox.host import HostSandbox
from xclaw.tools.base import Tool, Workspace, tool
from xclaw.tools.registry import ToolRegistry


@tool("t.read", path_args=("path",))
def t_read(path: str) -> ToolResult:
    """Read a file."""
    return ToolResult.success("read")


@tool("t.write", risk=Risk.WRITE, path_args=("path",))
def t_write(path: str) -> ToolResult:
    """Write a file."""
    return ToolResult.success("written")


def _command_access(args: Any) -> Access:
    return Access(command=Command(args.program, tuple(args.argv), args.cwd))


@tool("t.exec", risk=Risk.EXECUTE, read_only=False, access=_command_access)
def t_exec(program: str, argv: list[str], cwd: str = ".") -> ToolResult:
    """Run a program."""
    return ToolResult.success("ran")


@tool("t.publish", risk=Risk.EXTERNAL)
def t_publish(note: str) -> ToolResult:
    """Publish something somewhere."""
    return ToolResult.success("published")


@tool(
    "t.copy",
    risk=Risk.WRITE,
    access=lambda a: Access(reads=(a.src,), writes=(a.dst,)),
)
def t_copy(src: str, dst: str) -> ToolResult:
    """Copy a file."""
    return ToolResult.success("copied")


TOOLS: list[Tool] = [t_read, t_write, t_exec, t_publish, t_copy]


class Harness:
    def __init__(self, root: Path, *, host: bool = True) -> None:
        # host: the deny-list and allow-list as host mode applies them (no sandbox contains
        # code); otherwise the default sandbox (bwrap), where only what it cannot contain asks.
        self.workspace = Workspace(root, sandbox=HostSandbox() if host else None)
        self.toolbox = ToolRegistry(TOOLS).bind(self.workspace)
        self.engine = PolicyEngine(self.workspace)

    def decide(self, name: str, **arguments: Any) -> Decision:
        prepared = self.toolbox.prepare(ToolCallPart("c1", name, arguments))
        assert isinstance(prepared, PreparedCall), prepared
        return self.engine.evaluate(prepared)

    def run(self, program: str, *argv: str, cwd: str = ".") -> Decision:
        return self.decide("t.exec", program=program, argv=list(argv), cwd=cwd)


@pytest.fixture
def h(root: Path) -> Harness:
    return Harness(root)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "shared"
    d.mkdir()
    (d / "schema.json").write_text("{}")
    return d.resolve()


def test_engine_satisfies_the_policy_protocol(h: Harness) -> None:
    policy: Policy = h.engine
    assert policy is h.engine


# --- paths ---------------------------------------------------------------------------------


def test_inside_paths_allow_with_the_tools_risk(h: Harness, root: Path) -> None:
    (root / "a.txt").write_text("x")
    assert h.decide("t.read", path="a.txt") == Decision("allow", Risk.READ)
    assert h.decide("t.write", path="new/b.txt") == Decision("allow", Risk.WRITE)


def test_outside_file_asks_with_a_parent_folder_grant(h: Harness, outside: Path) -> None:
    d = h.decide("t.read", path=str(outside / "schema.json"))
    assert (d.action, d.risk, d.code) == ("ask", Risk.SENSITIVE, "PATH_OUTSIDE_ROOT")
    assert d.grant == Grant("path", str(outside))
    assert d.targets == (str(outside / "schema.json"),)


def test_outside_folder_is_granted_itself(h: Harness, outside: Path, root: Path) -> None:
    rel = os.path.relpath(outside, root)
    d = h.decide("t.write", path=rel)
    assert d.code == "PATH_OUTSIDE_ROOT"
    assert d.grant == Grant("path", str(outside))


def test_after_a_path_grant_the_folder_is_allowed(h: Harness, outside: Path) -> None:
    d = h.decide("t.write", path=str(outside / "new.json"))
    assert d.action == "ask" and d.grant is not None
    h.engine.grant(d.grant)
    assert h.decide("t.write", path=str(outside / "new.json")).action == "allow"
    assert h.decide("t.read", path=str(outside / "schema.json")).action == "allow"
    assert h.decide("t.read", path=str(outside.parent / "other.txt")).action == "ask"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda root, out: os.symlink(out, root / "link"), "PATH_SYMLINK_ESCAPE"),
        (lambda root, out: os.mkfifo(root / "link"), "PATH_SPECIAL"),
        (lambda root, out: os.symlink("/dev/null", root / "link"), "PATH_SPECIAL"),
    ],
)
def test_unapprovable_paths_are_denied(
    h: Harness, root: Path, outside: Path, make: Any, code: str
) -> None:
    make(root, outside)
    d = h.decide("t.read", path="link")
    assert (d.action, d.code) == ("deny", code)
    assert d.reason and d.grant is None


def test_invalid_path_is_denied(h: Harness) -> None:
    assert h.decide("t.read", path="C:\\Windows").code == "PATH_INVALID"
    assert h.decide("t.read", path="a\x00b").action == "deny"


def test_reading_a_secret_asks_until_that_file_is_granted(h: Harness, root: Path) -> None:
    (root / ".env").write_text("TOKEN=x")
    (root / ".env.example").write_text("TOKEN=")
    d = h.decide("t.read", path=".env")
    assert (d.action, d.risk, d.code) == ("ask", Risk.SENSITIVE, "PATH_SECRET")
    assert d.grant == Grant("path", str(root / ".env"))
    assert h.decide("t.read", path=".env.example").action == "allow"
    h.engine.grant(d.grant)
    assert h.decide("t.read", path=".env").action == "allow"


def test_secret_reached_through_an_innocent_symlink_asks(h: Harness, root: Path) -> None:
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_ed25519").write_text("key")
    os.symlink(".ssh/id_ed25519", root / "notes.txt")
    assert h.decide("t.read", path="notes.txt").code == "PATH_SECRET"


def test_writing_a_secret_name_inside_the_root_is_allowed(h: Harness) -> None:
    assert h.decide("t.write", path=".env").action == "allow"


def test_writing_inside_dot_git_asks(h: Harness, root: Path) -> None:
    (root / ".git" / "hooks").mkdir(parents=True)
    d = h.decide("t.write", path=".git/hooks/pre-commit")
    assert (d.action, d.code) == ("ask", "PATH_GIT_INTERNAL")
    assert d.grant == Grant("path", str(root / ".git" / "hooks" / "pre-commit"))
    assert h.decide("t.read", path=".git/config").action == "allow"
    assert h.decide("t.write", path=".github/workflows/ci.yml").action == "allow"
    assert d.grant is not None
    h.engine.grant(d.grant)
    assert h.decide("t.write", path=".git/hooks/pre-commit").action == "allow"


# --- commands ------------------------------------------------------------------------------


def test_malformed_command_input_never_raises(h: Harness) -> None:
    assert h.run("ls", "/etc/a\x00b").action == "allow"  # terminal.exec refuses NUL itself
    assert h.run("ls", cwd="a\x00b").code == "PATH_INVALID"


def test_safe_command_allows_with_the_tools_risk(root: Path) -> None:
    sandboxed = Harness(root, host=False)
    assert sandboxed.run("npm", "run", "build") == Decision("allow", Risk.EXECUTE)
    assert sandboxed.run("rm", "file.txt").action == "allow"
    assert sandboxed.run("bash", "-c", "make && ./a.out").action == "allow"  # contained
    host = Harness(root)
    assert host.run("ls", "-la").action == "allow"
    assert host.run("git", "status").action == "allow"
    d = host.run("npm", "run", "build")
    assert (d.action, d.code) == ("ask", "COMMAND_NOT_ALLOWLISTED")
    assert d.grant == Grant("command", "program npm")
    host.engine.grant(d.grant)
    assert host.run("npm", "run", "test").action == "allow"


def test_sandbox_still_asks_for_what_it_cannot_contain(root: Path) -> None:
    h = Harness(root, host=False)
    assert h.run("curl", "http://127.0.0.1:8000/").action == "allow"
    d = h.run("curl", "https://example.com/")
    assert (d.action, d.code, d.network) == ("ask", "COMMAND_NEEDS_NETWORK", True)
    h.engine.grant(d.grant)
    assert h.run("curl", "https://example.com/x") == Decision("allow", Risk.SENSITIVE, network=True)
    assert h.run("git", "send-pack", "origin").code == "COMMAND_PUBLISHES"
    assert h.run("python3", "-m", "twine", "upload", "dist/*").code == "COMMAND_PUBLISHES"
    assert h.run("docker", "buildx", "build", "--push", ".").code == "COMMAND_PUBLISHES"
    assert h.run("cp", "cfg", "xclaw.yaml").code == "COMMAND_PROTECTED_PATH"
    assert h.run("cp", "x", ".git/hooks/post-commit").code == "COMMAND_PROTECTED_PATH"
    assert h.run("cp", "x", "sub/.git/config").code == "COMMAND_PROTECTED_PATH"
    assert h.run("rm", "-rf", "src").code == "COMMAND_NEEDS_APPROVAL"


def test_risky_command_asks_with_a_command_grant(h: Harness) -> None:
    d = h.run("git", "-C", ".", "push", "origin", "main")
    assert (d.action, d.risk, d.code) == ("ask", Risk.EXTERNAL, "COMMAND_NEEDS_APPROVAL")
    assert d.grant == Grant("command", "git push")
    assert "git -C . push origin main" in d.reason


def test_command_grant_allows_the_same_rule_only(h: Harness) -> None:
    d = h.run("rm", "-rf", "build")
    assert d.grant == Grant("command", "rm")
    h.engine.grant(d.grant)
    assert h.run("rm", "-rf", "dist").action == "allow"
    assert h.run("/usr/bin/env", "rm", "-r", "x").action == "allow"
    assert h.run("bash", "-c", "rm -rf x").action == "ask"
    assert h.run("git", "push").action == "ask"
    assert h.run("sudo", "rm", "-rf", "x").action == "ask"


def test_command_arguments_outside_the_root_ask(root: Path, outside: Path) -> None:
    h = Harness(root, host=False)
    d = h.run("cp", "a.txt", str(outside / "a.txt"))
    assert (d.action, d.risk, d.code) == ("ask", Risk.SENSITIVE, "COMMAND_OUTSIDE_ROOT")
    assert d.targets == (str(outside / "a.txt"),)
    assert d.grant == Grant("path", str(outside))
    h.engine.grant(d.grant)
    assert h.run("cp", "a.txt", str(outside / "a.txt")).action == "allow"


def test_cwd_outside_the_root_asks_also_through_a_symlink(
    h: Harness, root: Path, outside: Path
) -> None:
    d = h.run("ls", cwd=str(outside))
    assert (d.action, d.code) == ("ask", "PATH_OUTSIDE_ROOT")
    assert d.grant == Grant("path", str(outside))
    os.symlink(outside, root / "out")
    d = h.run("ls", cwd="out")  # the link resolved first: the question names its target
    assert (d.action, d.code) == ("ask", "PATH_OUTSIDE_ROOT")
    assert d.targets == (str(outside),)
    assert d.grant == Grant("path", str(outside))
    assert "symbolic link" in d.reason


def test_one_ask_lists_every_reason_and_target(h: Harness, outside: Path) -> None:
    d = h.run("sudo", "cp", "x", str(outside / "x"))
    assert d.action == "ask"
    assert d.code == "COMMAND_NEEDS_APPROVAL"  # destructive outranks sensitive
    assert "sudo" in d.reason and "outside the project" in d.reason
    assert d.targets == (str(outside / "x"),)


def test_deny_outranks_ask(h: Harness, root: Path, outside: Path) -> None:
    os.mkfifo(root / "pipe")
    d = h.run("git", "push", cwd="pipe")
    assert (d.action, d.code) == ("deny", "PATH_SPECIAL")
    os.mkfifo(root / "fifo")
    d = h.decide("t.copy", src=str(outside / "schema.json"), dst="fifo")
    assert (d.action, d.code) == ("deny", "PATH_SPECIAL")


def test_the_most_severe_ask_names_the_grant(h: Harness, outside: Path) -> None:
    d = h.run("sudo", "ls", cwd=str(outside))  # sensitive cwd first, destructive command next
    assert (d.risk, d.code, d.grant) == (
        Risk.DESTRUCTIVE,
        "COMMAND_NEEDS_APPROVAL",
        Grant("command", "sudo"),
    )
    assert d.reason.startswith("sudo runs as another user")
    assert str(outside) in d.reason


def test_every_outside_target_is_listed_for_allow_once(h: Harness, outside: Path) -> None:
    other = outside.parent / "other"
    other.mkdir()
    d = h.decide("t.copy", src=str(outside / "schema.json"), dst=str(other / "copy.json"))
    assert d.targets == (str(outside / "schema.json"), str(other / "copy.json"))
    assert d.grant == Grant("path", str(outside))


# --- risky tools and grants ----------------------------------------------------------------


def test_risky_tool_asks_without_any_access_info(h: Harness) -> None:
    d = h.decide("t.publish", note="v1")
    assert (d.action, d.risk, d.code) == ("ask", Risk.EXTERNAL, "TOOL_NEEDS_APPROVAL")
    assert d.grant == Grant("command", "tool:t.publish")
    h.engine.grant(d.grant)
    assert h.decide("t.publish", note="v2") == Decision("allow", Risk.EXTERNAL)


def test_model_arguments_never_add_grants(h: Harness, outside: Path) -> None:
    h.decide("t.read", path=str(outside / "schema.json"))
    h.run("git", "push")
    assert h.workspace.grants == set()


def test_grant_needs_an_absolute_path_and_stores_it_resolved(
    h: Harness, tmp_path: Path, outside: Path
) -> None:
    with pytest.raises(ValueError):
        h.engine.grant(Grant("path", "../shared"))
    os.symlink(outside, tmp_path / "alias")
    h.engine.grant(Grant("path", str(tmp_path / "alias")))
    assert h.workspace.grants == {Grant("path", str(outside))}


def test_grants_are_never_wide(root: Path, tmp_path: Path) -> None:
    assert narrow_path_grant(Path("/etc/hostname"), root) == Grant("path", "/etc/hostname")
    assert narrow_path_grant(Path("/etc"), root, is_dir=True) is None
    assert narrow_path_grant(Path("/"), root, is_dir=True) is None
    # The project's own parent would open every sibling project: offer the file only.
    sibling = root.parent / "notes.txt"
    assert narrow_path_grant(sibling, root, is_dir=False) == Grant("path", str(sibling))
    home = Path.home().resolve()
    assert narrow_path_grant(home / ".bashrc", root, is_dir=False) == Grant(
        "path", str(home / ".bashrc")
    )


def test_top_level_file_asks_without_offering_root(h: Harness) -> None:
    d = h.decide("t.read", path="/etc/hostname")
    assert d.action == "ask"
    assert d.grant == Grant("path", "/etc/hostname")
