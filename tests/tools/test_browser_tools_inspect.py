"""The generic ``inspect`` step the browser tools need, without a browser: a tool's inspector
runs before the policy and replaces the call's Access; its failure refuses the call unrun; a
tool without one is unchanged; and the model's arguments can never skip it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from browser_site import Answers, Deps, dispatch

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Access, Grant, PageElement, WebAddress
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace, tool
from xclaw.tools.registry import ToolRegistry


def _deps(root: Path, tools: list[Any], answers: Answers | None = None) -> Deps:
    workspace = Workspace(root)
    return Deps(ToolRegistry(tools).bind(workspace), PolicyEngine(workspace), answers or Answers())


def _tools(ran: list[str], looked: list[str], world: dict[str, Any]) -> list[Any]:
    async def look(args: Any) -> Access:
        looked.append(args.target)
        if world.get("fail"):
            raise ToolError("cannot see it", code="TARGET_GONE", hint="look again")
        if world.get("crash"):
            raise RuntimeError("inspector bug")
        if world.get("slow"):
            await asyncio.sleep(5)
        return Access(
            reads=tuple(world.get("reads", ())),
            opens=tuple(WebAddress(u) for u in world.get("opens", ())),
            element=world.get("element"),
        )

    @tool("act", timeout_s=0.5, inspector=look)
    def act(target: str) -> ToolResult:
        """Act on a target."""
        ran.append(target)
        return ToolResult.success("acted")

    @tool("plain", path_args=("path",))
    def plain(path: str) -> ToolResult:
        """Read a path."""
        ran.append(path)
        return ToolResult.success("read")

    return [act, plain]


async def test_the_inspector_decides_what_the_policy_sees(root: Path, tmp_path: Path) -> None:
    ran: list[str] = []
    looked: list[str] = []
    world: dict[str, Any] = {}
    deps = _deps(root, _tools(ran, looked, world))
    assert (await dispatch(deps, "act", target="a")).ok and ran == ["a"] and looked == ["a"]
    world["reads"] = [str(tmp_path / "outside.txt")]  # found only by looking
    refused = await dispatch(deps, "act", target="b")
    assert refused.error_code == "APPROVAL_DENIED" and ran == ["a"]
    assert deps.approver.asked[-1].decision.code == "PATH_OUTSIDE_ROOT"
    world["reads"] = []
    world["element"] = PageElement("click", "button", text="Delete all")
    assert (await dispatch(deps, "act", target="c")).error_code == "APPROVAL_DENIED"
    assert deps.approver.asked[-1].decision.code == "BROWSER_DESTRUCTIVE_ACTION"
    world["element"] = None
    world["opens"] = ["javascript:alert(1)"]
    assert (await dispatch(deps, "act", target="d")).error_code == "APPROVAL_DENIED"
    assert ran == ["a"]


async def test_a_failed_or_slow_look_refuses_the_call_unrun(root: Path) -> None:
    ran: list[str] = []
    world: dict[str, Any] = {"fail": True}
    deps = _deps(root, _tools(ran, [], world))
    failed = await dispatch(deps, "act", target="x")
    assert (failed.error_code, failed.hint) == ("TARGET_GONE", "look again")
    world.update(fail=False, slow=True)
    slow = await dispatch(deps, "act", target="y")
    assert slow.error_code == "TOOL_TIMEOUT" and "nothing ran" in slow.message
    world.update(slow=False, crash=True)
    crashed = await dispatch(deps, "act", target="z")
    assert crashed.error_code == "TOOL_CRASHED" and "inspector bug" in crashed.message
    assert ran == [] and deps.approver.asked == []


async def test_tools_without_an_inspector_keep_their_declared_access(root: Path) -> None:
    ran: list[str] = []
    deps = _deps(root, _tools(ran, [], {}))
    (root / "f.txt").write_text("x")
    assert (await dispatch(deps, "plain", path="f.txt")).ok
    assert (await dispatch(deps, "plain", path="/etc/hostname")).error_code == "APPROVAL_DENIED"
    assert ran == ["f.txt"]


async def test_a_site_grant_covers_only_its_origin(root: Path) -> None:
    ran: list[str] = []
    world: dict[str, Any] = {"opens": ["http://10.0.0.7:8080/admin"]}
    answers = Answers(["task"])
    deps = _deps(root, _tools(ran, [], world), answers)
    assert (await dispatch(deps, "act", target="1")).ok
    assert answers.asked[0].decision.grant == Grant("site", "http://10.0.0.7:8080")
    assert "pages on http://10.0.0.7:8080" in answers.asked[0].decision.grant.describe()
    assert (await dispatch(deps, "act", target="2")).ok and len(answers.asked) == 1
    world["opens"] = ["http://10.0.0.7:9090/"]
    assert (await dispatch(deps, "act", target="3")).error_code == "APPROVAL_DENIED"
    assert ran == ["1", "2"]
