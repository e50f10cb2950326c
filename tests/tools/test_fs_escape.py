"""Attacks on the file tools that must fail (Linux): a folder swapped for a link between the
policy check and the open, hard links to files outside the root, and OSErrors in the path layer.

Every call goes through the real dispatcher, ``PolicyEngine`` and a fixed approver, as a model's
call would; each attack asserts that nothing outside the root was read, listed or written and
that every refusal is a coded ToolResult, never a crash.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.dispatch import run_tool_calls
from xclaw.core.errors import PolicyDenied
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunState
from xclaw.core.tooling import Grant, PreparedCall, Risk, Toolbox
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.tools import _safe_open
from xclaw.tools import base as tools_base
from xclaw.tools.base import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux attacks")

SECRET = "OUTSIDE-SECRET-7f3a"
INSIDE = "inside content\n"
RACE_CALLS = 3000
FALLBACK_RACE_CALLS = 800


@dataclass(slots=True)
class _Deps:
    toolbox: Toolbox
    policy: PolicyEngine
    approver: ModeApprover
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)


class Agent:
    """One run's tools behind the real dispatcher, policy engine and a fixed approver."""

    def __init__(self, root: Path, approval: Literal["allow", "deny"] = "deny") -> None:
        self.workspace = Workspace(root)
        self.toolbox = coding_registry().bind(self.workspace)
        self.policy = PolicyEngine(self.workspace)
        self.deps = _Deps(self.toolbox, self.policy, ModeApprover(approval))

    async def call(self, name: str, **args: Any) -> ToolResult:
        state = RunState("attack", "attack", [])  # fresh: thousands of identical calls are fine
        records = await run_tool_calls(state, self.deps, [ToolCallPart("c1", name, args)])
        return records[0].result

    async def unchecked(self, name: str, **args: Any) -> ToolResult:
        """The tool alone, as if the policy had allowed it: its own checks must hold."""
        return await self.checked_then(name, lambda: None, **args)

    async def checked_then(self, name: str, between: Callable[[], None], **args: Any) -> ToolResult:
        """The policy allows the call, ``between`` changes the tree, then the tool runs."""
        prepared = self.toolbox.prepare(ToolCallPart("c1", name, args))
        assert isinstance(prepared, PreparedCall), prepared
        between()
        return await self.toolbox.execute(prepared, lambda _stream, _text: None)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = (tmp_path / "outside").resolve()
    d.mkdir()
    (d / "secret.txt").write_text(SECRET + "\n")
    (d / "outside-only.txt").write_text(SECRET + "\n")
    return d


@pytest.fixture(params=["openat2", "walk"])
def opener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of opening beneath the root; the walk must never touch openat2."""
    if request.param == "openat2":
        if not _safe_open.openat2_available():
            pytest.skip("this kernel has no openat2")
        return "openat2"
    force_walk(monkeypatch)
    return "walk"


def force_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_openat2(*_args: object) -> int:
        raise AssertionError("openat2 used although the kernel 'lacks' it")

    monkeypatch.setattr(_safe_open, "openat2_available", lambda: False)
    monkeypatch.setattr(_safe_open, "_openat2", no_openat2)


def outside_names(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.iterdir())


def leaked(result: ToolResult) -> bool:
    return SECRET in result.to_model_text() or "outside-only" in result.to_model_text()


def coded_failure(result: ToolResult) -> bool:
    """A refusal the model can act on: a stable PATH_* code, not a crash."""
    code = result.error_code or ""
    return not result.ok and code.startswith(("PATH_", "APPROVAL_")) and code != "TOOL_CRASHED"


# --- races: a folder swapped for a link between the check and the open ----------------------

# The swapper is a process of its own, so it runs truly in parallel with the tool's syscalls
# (a thread would mostly wait for the GIL). renameat2(RENAME_EXCHANGE) swaps both names in one
# step: 'dir' is never missing, every call meets either the real folder or the link.
_SWAPPER = r"""
import ctypes, os, signal, sys
exchange = ctypes.CDLL(None, use_errno=True).renameat2
a, b = (os.fsencode(x) for x in sys.argv[1:3])
swaps = 0
def stop(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
while True:
    if exchange(-100, a, -100, b, 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    swaps += 1
"""


class Swapper:
    """Keeps swapping root/dir between a real folder and a link to the outside folder, which
    holds a file of the same name as the one inside."""

    def __init__(self, root: Path, outside: Path) -> None:
        if getattr(ctypes.CDLL(None), "renameat2", None) is None:
            pytest.skip("libc has no renameat2 (glibc before 2.28)")
        self.dir, self.link = root / "dir", root / "link"
        self.dir.mkdir()
        (self.dir / "secret.txt").write_text(INSIDE)
        self.link.symlink_to(outside)
        self.swaps = 0

    def __enter__(self) -> Swapper:
        argv = [sys.executable, "-c", _SWAPPER, str(self.dir), str(self.link)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *_exc: object) -> None:
        self._proc.send_signal(signal.SIGTERM)
        out, _ = self._proc.communicate(timeout=10)
        self.swaps = int(out.strip() or 0)


async def race(agent: Agent, swapper: Swapper, calls: int, name: str, **args: Any) -> Counter[str]:
    """Run the call ``calls`` times while the swapper runs; fail on any leak or crash."""
    seen: Counter[str] = Counter()
    with swapper:
        for _ in range(calls):
            result = await agent.call(name, **args)
            assert not leaked(result), result
            assert result.ok or coded_failure(result), result
            seen["ok" if result.ok else str(result.error_code)] += 1
    # Both outcomes occurred, so the swap really raced the calls (the test can fail).
    assert seen["ok"] > 0 and sum(seen.values()) > seen["ok"], seen
    assert swapper.swaps > calls, swapper.swaps
    return seen


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Durability is not what the write races test; 3,000 fsyncs would only slow them."""
    monkeypatch.setattr(os, "fsync", lambda _fd: None)


async def test_race_read_never_returns_outside_content(root: Path, outside: Path) -> None:
    agent, swapper = Agent(root), Swapper(root, outside)
    seen = await race(agent, swapper, RACE_CALLS, "fs.read", path="dir/secret.txt")
    assert "TOOL_CRASHED" not in seen


@pytest.mark.usefixtures("no_fsync")
async def test_race_write_never_lands_outside(root: Path, outside: Path) -> None:
    agent, swapper = Agent(root), Swapper(root, outside)
    await race(agent, swapper, RACE_CALLS, "fs.write", path="dir/new.txt", content="pwned\n")
    assert outside_names(outside) == ["outside-only.txt", "secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


async def test_race_list_never_lists_outside(root: Path, outside: Path) -> None:
    agent, swapper = Agent(root), Swapper(root, outside)
    await race(agent, swapper, RACE_CALLS, "fs.list", path="dir")


@pytest.mark.usefixtures("no_fsync")
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("fs.read", {"path": "dir/secret.txt"}),
        ("fs.write", {"path": "dir/new.txt", "content": "pwned\n"}),
        ("fs.list", {"path": "dir"}),
    ],
)
async def test_race_without_openat2_walk_holds_too(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, name: str, args: dict[str, Any]
) -> None:
    force_walk(monkeypatch)
    await race(Agent(root), Swapper(root, outside), FALLBACK_RACE_CALLS, name, **args)
    assert outside_names(outside) == ["outside-only.txt", "secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


# --- the same swap, made deterministic: right after the tool's own check ---------------------


@pytest.fixture
def swap_after_check(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], None]:
    """Arms a swap of root/dir for a link to outside, done the moment the tool has checked its
    path (after the policy engine's check, too): the worst possible moment."""
    (root / "dir").mkdir()
    (root / "dir" / "secret.txt").write_text(INSIDE)
    real_resolve = tools_base.resolve_inside_root

    def arm() -> None:
        def resolve_then_swap(*args: Any, **kwargs: Any) -> Any:
            checked = real_resolve(*args, **kwargs)
            if not (root / "dir").is_symlink():
                (root / "dir").rename(root / "parked")
                (root / "dir").symlink_to(outside)
            return checked

        monkeypatch.setattr(tools_base, "resolve_inside_root", resolve_then_swap)

    return arm


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("fs.read", {"path": "dir/secret.txt"}),
        ("fs.write", {"path": "dir/secret.txt", "content": "pwned\n"}),
        ("fs.write", {"path": "dir/new.txt", "content": "pwned\n"}),
        ("fs.edit", {"path": "dir/secret.txt", "old_text": "inside", "new_text": "pwned"}),
        ("fs.list", {"path": "dir"}),
    ],
)
async def test_swap_between_check_and_open_is_path_changed(
    root: Path,
    outside: Path,
    opener: str,
    swap_after_check: Callable[[], None],
    name: str,
    args: dict[str, Any],
) -> None:
    agent = Agent(root)
    assert (await agent.call("fs.read", path="dir/secret.txt")).ok  # the stamp fs.edit needs
    swap_after_check()
    result = await agent.call(name, **args)
    assert result.error_code == "PATH_CHANGED", (opener, result)
    assert not leaked(result)
    assert outside_names(outside) == ["outside-only.txt", "secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert (root / "parked" / "secret.txt").read_text() == INSIDE


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_search_swap_after_check_finds_nothing_outside(
    root: Path,
    outside: Path,
    opener: str,
    swap_after_check: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    engine: str,
) -> None:
    """ripgrep follows a target given by path; its matches are confirmed through a no-link fd."""
    if engine == "python":
        (tmp_path / "no-rg").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "no-rg"))
    swap_after_check()
    result = await Agent(root).call("fs.search", pattern=SECRET, path="dir")
    assert not leaked(result), (opener, result)
    if engine == "python":  # it opens the folder itself, no link followed
        assert result.error_code == "PATH_CHANGED", result
    else:  # ripgrep followed the link; every match it sent failed the confirmation
        assert result.ok and result.data["engine"] == "rg", result
        assert result.data["matches"] == [] and result.data["changed_left_out"] == 2


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_search_never_follows_links_out(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, engine: str
) -> None:
    if engine == "python":
        (tmp_path / "no-rg").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "no-rg"))
    (root / "to_outside").symlink_to(outside)
    (root / "to_secret.txt").symlink_to(outside / "secret.txt")
    (root / "plain.txt").write_text(f"not the {SECRET[:7]}\n")
    result = await Agent(root).call("fs.search", pattern=SECRET[:7])
    assert result.ok and result.data["engine"] == engine
    assert [m["path"] for m in result.data["matches"]] == ["plain.txt"]
    assert not leaked(result)


def test_walk_refuses_a_link_in_any_component(root: Path, outside: Path, opener: str) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text(INSIDE)
    (root / "a" / "link").symlink_to(outside)
    (root / "a" / "b" / "flink.txt").symlink_to(root / "a" / "b" / "f.txt")
    top = _safe_open.open_path(root, _safe_open.DIR_FLAGS)
    try:
        fd = _safe_open.open_beneath(top, "a/b/f.txt", os.O_RDONLY)
        os.close(fd)
        for rel, flags in [
            ("a/link/secret.txt", os.O_RDONLY),
            ("a/link", os.O_RDONLY | os.O_DIRECTORY),
            ("a/b/flink.txt", os.O_RDONLY),
        ]:
            with pytest.raises(PolicyDenied) as info:
                _safe_open.open_beneath(top, rel, flags)
            assert info.value.code == "PATH_CHANGED", (opener, rel)
        for rel in ("../outside/secret.txt", str(outside / "secret.txt")):
            with pytest.raises(PolicyDenied) as info:
                _safe_open.open_beneath(top, rel, os.O_RDONLY)
            assert info.value.code == "PATH_INVALID"
        with pytest.raises(NotADirectoryError):  # a plain file in the way is no "change"
            _safe_open.open_beneath(top, "a/b/f.txt/x", os.O_RDONLY)
    finally:
        os.close(top)


def test_probe_falls_back_when_the_kernel_lacks_openat2() -> None:
    calls: list[int] = []

    def enosys(*args: object) -> int:
        calls.append(1)
        ctypes.set_errno(errno.ENOSYS)
        return -1

    def seccomp(*args: object) -> int:
        ctypes.set_errno(errno.EPERM)
        return -1

    assert _safe_open.probe_openat2(enosys) is False and calls == [1]
    assert _safe_open.probe_openat2(seccomp) is False


async def test_granted_folder_outside_is_opened_beneath_the_grant(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opener: str
) -> None:
    """A folder the user granted works; a link swapped into it after the check does not."""
    shared = (tmp_path / "shared").resolve()
    (shared / "d").mkdir(parents=True)
    (shared / "d" / "f.txt").write_text(INSIDE)
    elsewhere = (tmp_path / "elsewhere").resolve()
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text(SECRET + "\n")
    agent = Agent(root)
    agent.policy.grant(Grant("path", str(shared)))
    read = await agent.call("fs.read", path=str(shared / "d" / "f.txt"))
    assert read.ok and "inside content" in read.data["content"], read
    wrote = await agent.call("fs.write", path=str(shared / "d" / "new" / "g.txt"), content="x")
    assert wrote.ok and (shared / "d" / "new" / "g.txt").read_text() == "x"
    real_resolve = tools_base.resolve_inside_root

    def resolve_then_swap(*args: Any, **kwargs: Any) -> Any:
        checked = real_resolve(*args, **kwargs)
        (shared / "d").rename(shared / "parked")
        (shared / "d").symlink_to(elsewhere)
        return checked

    monkeypatch.setattr(tools_base, "resolve_inside_root", resolve_then_swap)
    swapped = await agent.call("fs.read", path=str(shared / "d" / "f.txt"))
    assert swapped.error_code == "PATH_CHANGED" and not leaked(swapped), (opener, swapped)


# --- hard links to files outside the root ----------------------------------------------------


@pytest.fixture
def hardlink(root: Path, outside: Path) -> Path:
    """root/hl.txt and outside/secret.txt are one file (one inode, two names)."""
    os.link(outside / "secret.txt", root / "hl.txt")
    return root / "hl.txt"


def assert_outside_intact(outside: Path, hardlink: Path) -> None:
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert (outside / "secret.txt").stat().st_nlink == 2
    assert hardlink.stat().st_ino == (outside / "secret.txt").stat().st_ino


def test_policy_asks_about_the_exact_hardlinked_file(
    root: Path, outside: Path, hardlink: Path
) -> None:
    agent = Agent(root)
    for name, args in [
        ("fs.read", {"path": "hl.txt"}),
        ("fs.write", {"path": "hl.txt", "content": "x"}),
    ]:
        prepared = agent.toolbox.prepare(ToolCallPart("c", name, args))
        assert isinstance(prepared, PreparedCall)
        decision = agent.policy.evaluate(prepared)
        assert (decision.action, decision.risk, decision.code) == (
            "ask",
            Risk.SENSITIVE,
            "PATH_HARDLINK",
        )
        assert decision.grant == Grant("path", str(hardlink))
        assert decision.targets == (str(hardlink),)
    # Granting the folder that holds the other name is no approval of the shared content.
    agent.policy.grant(Grant("path", str(outside)))
    far = agent.toolbox.prepare(ToolCallPart("c", "fs.read", {"path": str(outside / "secret.txt")}))
    assert isinstance(far, PreparedCall)
    assert agent.policy.evaluate(far).code == "PATH_HARDLINK"
    agent.policy.grant(Grant("path", str(hardlink)))
    assert agent.policy.evaluate(prepared).action == "allow"


@pytest.mark.usefixtures("opener")
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("fs.read", {"path": "hl.txt"}),
        ("fs.write", {"path": "hl.txt", "content": "pwned\n"}),
        ("fs.edit", {"path": "hl.txt", "old_text": "OUTSIDE", "new_text": "pwned"}),
        ("fs.list", {"path": "hl.txt"}),
        ("fs.search", {"path": "hl.txt", "pattern": "SECRET"}),
    ],
)
async def test_hardlink_is_refused_under_deny(
    outside: Path, hardlink: Path, name: str, args: dict[str, Any]
) -> None:
    agent = Agent(hardlink.parent, "deny")
    result = await agent.call(name, **args)
    assert result.error_code == "APPROVAL_DENIED", result
    assert result.data["policy_code"] == "PATH_HARDLINK"
    assert not leaked(result)
    assert_outside_intact(outside, hardlink)


@pytest.mark.usefixtures("opener")
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("fs.read", {"path": "hl.txt"}),
        ("fs.write", {"path": "hl.txt", "content": "pwned\n"}),
        ("fs.edit", {"path": "hl.txt", "old_text": "OUTSIDE", "new_text": "pwned"}),
    ],
)
async def test_hardlink_made_after_the_policy_check_is_refused_by_the_tool(
    root: Path, outside: Path, name: str, args: dict[str, Any]
) -> None:
    """The tool re-checks st_nlink on what it opened: linking after the check gains nothing."""
    (root / "hl.txt").write_text("plain\n")
    agent = Agent(root)
    await agent.call("fs.read", path="hl.txt")  # the stamp fs.edit needs

    def relink() -> None:
        prepared = agent.toolbox.prepare(ToolCallPart("c0", name, args))
        assert isinstance(prepared, PreparedCall)
        assert agent.policy.evaluate(prepared).action == "allow"  # checked: one link only
        (root / "hl.txt").unlink()
        os.link(outside / "secret.txt", root / "hl.txt")

    result = await agent.checked_then(name, relink, **args)
    assert result.error_code == "PATH_HARDLINK", result
    assert not leaked(result)
    assert_outside_intact(outside, root / "hl.txt")


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_search_leaves_hardlinked_files_out_and_says_so(
    root: Path,
    outside: Path,
    hardlink: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    engine: str,
) -> None:
    if engine == "python":
        (tmp_path / "no-rg").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "no-rg"))
    (root / "plain.txt").write_text(f"{SECRET[:7]} here\n")
    result = await Agent(root).call("fs.search", pattern=SECRET[:7])
    assert result.ok and result.data["engine"] == engine
    assert [m["path"] for m in result.data["matches"]] == ["plain.txt"]
    assert result.data["hard_links_left_out"] == 1
    assert "1 file(s) with several hard links were left out" in result.message
    assert not leaked(result)


async def test_list_flags_hardlinks_without_reading_them(root: Path, hardlink: Path) -> None:
    result = await Agent(root).call("fs.list")
    assert result.ok
    entry = {e["path"]: e for e in result.data["entries"]}["hl.txt"]
    assert entry["hard_links"] == 2 and not leaked(result)


@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_hardlink_granted_by_a_human_is_usable(
    root: Path,
    outside: Path,
    hardlink: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    engine: str,
) -> None:
    if engine == "python":
        (tmp_path / "no-rg").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "no-rg"))
    agent = Agent(root, "deny")
    agent.policy.grant(Grant("path", str(hardlink)))  # the *allow for task* answer
    read = await agent.call("fs.read", path="hl.txt")
    assert read.ok and SECRET in read.data["content"]
    found = await agent.call("fs.search", pattern=SECRET)
    assert [m["path"] for m in found.data["matches"]] == ["hl.txt"]
    assert "hard_links_left_out" not in found.data
    edited = await agent.call("fs.edit", path="hl.txt", old_text="OUTSIDE", new_text="INSIDE")
    assert edited.ok, edited
    # An atomic replace gives hl.txt a new inode: the outside name keeps its content.
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert (root / "hl.txt").read_text().startswith("INSIDE-")
    assert (root / "hl.txt").stat().st_nlink == 1


async def test_hardlink_allowed_once_is_usable_only_for_that_call(
    root: Path, hardlink: Path
) -> None:
    once = await Agent(root, "allow").call("fs.read", path="hl.txt")
    assert once.ok and SECRET in once.data["content"]
    denied = Agent(root, "deny")
    other = root / "other.txt"
    other.write_text("x")
    denied.policy.grant(Grant("path", str(other)))  # a grant for a different file
    refused = await denied.call("fs.read", path="hl.txt")
    assert refused.data["policy_code"] == "PATH_HARDLINK" and not leaked(refused)


# --- OSError in the path layer: a coded refusal, never a crash --------------------------------


@pytest.mark.parametrize(
    ("err", "code"),
    [(errno.EACCES, "PATH_INVALID"), (errno.ELOOP, "PATH_INVALID"), (errno.EINVAL, "PATH_CHANGED")],
)
@pytest.mark.parametrize("name", ["fs.read", "fs.write", "fs.list", "fs.search"])
async def test_realpath_oserror_becomes_a_coded_refusal(
    root: Path, monkeypatch: pytest.MonkeyPatch, err: int, code: str, name: str
) -> None:
    (root / "victim").mkdir()
    agent = Agent(root)
    real = os.path.realpath

    def failing(path: Any, *args: Any, **kwargs: Any) -> str:
        if "victim" in os.fspath(path):
            raise OSError(err, os.strerror(err), path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", failing)
    args: dict[str, Any] = {"path": "victim"}
    if name == "fs.write":
        args = {"path": "victim/f.txt", "content": "x"}
    if name == "fs.search":
        args["pattern"] = "x"
    checked = await agent.call(name, **args)
    assert (checked.ok, checked.error_code) == (False, code), checked
    assert checked.message and checked.hint
    unchecked = await agent.unchecked(name, **args)  # the tool's own resolve, too
    assert (unchecked.ok, unchecked.error_code) == (False, code), unchecked


async def test_stat_oserror_becomes_a_coded_refusal(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "victim.txt").write_text(INSIDE)
    agent = Agent(root)
    real = os.stat

    def failing(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if "victim" in os.fspath(path):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", failing)
    for name in ("fs.read", "fs.list"):
        result = await agent.call(name, path="victim.txt")
        assert result.error_code == "PATH_INVALID", result
