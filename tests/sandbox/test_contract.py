"""The ``Sandbox`` contract of ``xclaw.core.sandbox``: every backend implements it, an agent
takes one sandbox, a factory or None, and the command tools refuse, with a code, a sandbox
that can neither launch nor run a command."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from xclaw.core.messages import ToolCallPart
from xclaw.core.sandbox import Mode, Sandbox, sandbox_from
from xclaw.core.tooling import PreparedCall
from xclaw.sandbox import BwrapSandbox, HostSandbox, LocalSandbox, RemoteSandbox
from xclaw.sandbox.remote import E2BSandbox, E2BSettings
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.registry import ToolRegistry


class OnlyAMode:
    """A sandbox of the contract alone: it has a mode and closes, and starts nothing."""

    mode: Mode = "host"
    closed = 0

    async def close(self) -> None:
        self.closed += 1


def test_every_backend_is_a_sandbox_of_its_kind() -> None:
    remote = E2BSandbox(E2BSettings("xclaw", "e2b_key"), session_id="s1")  # connects on use
    for local in (HostSandbox(), BwrapSandbox()):
        assert isinstance(local, Sandbox) and isinstance(local, LocalSandbox)
        assert not isinstance(local, RemoteSandbox)
    assert isinstance(remote, Sandbox) and isinstance(remote, RemoteSandbox)
    assert not isinstance(remote, LocalSandbox)
    assert not isinstance(object(), Sandbox)


def test_an_agent_takes_a_sandbox_a_factory_or_none() -> None:
    one = HostSandbox()
    made: list[HostSandbox] = []

    def factory() -> HostSandbox:
        made.append(HostSandbox())
        return made[-1]

    assert sandbox_from(one) is one and sandbox_from(one) is one  # the same for every run
    first, second = sandbox_from(factory), sandbox_from(factory)
    assert (first, second) == (made[0], made[1]) and first is not second  # one per run
    assert sandbox_from(None) is None  # the workspace chooses


def test_the_sandbox_check_is_remembered_only_for_classes_that_define_it() -> None:
    """``sandbox_from`` remembers the protocol check per class; objects that hold the members
    as their own attributes (a namespace) are checked each time."""
    from xclaw.core.sandbox import _is_sandbox

    holding = SimpleNamespace(mode="host", close=HostSandbox().close)
    assert sandbox_from(holding) is holding  # a sandbox: given back as it is
    assert not _is_sandbox(SimpleNamespace())  # the same class, not a sandbox
    assert _is_sandbox(OnlyAMode()) and _is_sandbox(OnlyAMode())  # remembered, still right
    made: list[HostSandbox] = []

    def make() -> HostSandbox:
        made.append(HostSandbox())
        return made[-1]

    assert sandbox_from(make) is made[0] and sandbox_from(make) is made[1]  # factories


async def test_a_sandbox_that_starts_nothing_is_refused_with_a_code(root: Path) -> None:
    box = OnlyAMode()
    workspace = Workspace(root, sandbox=box)
    toolbox = ToolRegistry(exec_tools()).bind(workspace)
    prepared = toolbox.prepare(ToolCallPart("c1", "terminal.exec", {"program": "true"}))
    assert isinstance(prepared, PreparedCall), prepared
    result = await toolbox.execute(prepared, lambda _stream, _text: None)
    assert not result.ok and result.error_code == "SANDBOX_UNSUPPORTED"
    assert "OnlyAMode" in result.message
    await workspace.close()
    assert box.closed == 1  # still closed with the session, as every sandbox is
