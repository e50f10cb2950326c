"""The policy engine: allow, ask or deny one prepared tool call (seed 000 §8).

It judges what the call would touch (``PreparedCall.access``), never what the model says about
it: paths are resolved against the root and the task's grants, commands are classified by
``classify_command``. Grants only ever come from ``grant()``, which the loop calls after a
human answered *allow for task*; every grant proposed here is narrow (one folder, one file,
or one program form).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from xclaw.core.errors import PolicyDenied
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import (
    Access,
    Command,
    Decision,
    Grant,
    PreparedCall,
    Risk,
    WorkspaceView,
)
from xclaw.policy.allowlist import known_safe
from xclaw.policy.approval import approval_denied_result, policy_denied_result
from xclaw.policy.arguments import linked_arguments, protected_arguments
from xclaw.policy.browsing import file_url_path, judge_address, judge_element
from xclaw.policy.command_paths import command_outside_paths, describe, runs_from_program_location
from xclaw.policy.commands import classify_command
from xclaw.policy.launchers import normalize_program
from xclaw.policy.paths import is_secret_path, resolve_inside_root
from xclaw.policy.reach import needs_network, publishes

_RISK_ORDER = list(Risk)  # read < write < execute < sensitive < destructive < external
_ACTION_ORDER = {"allow": 0, "ask": 1, "deny": 2}
# Files that configure the agent: a model writing them could change how its own next run
# behaves, so they always need a human.
_AGENT_CONFIG = frozenset({"xclaw.yaml", ".mcp.json"})  # writes ask: they configure xclaw
_ASKING_RISKS = frozenset({Risk.SENSITIVE, Risk.DESTRUCTIVE, Risk.EXTERNAL})


class PolicyEngine:
    """Implements ``core.tooling.Policy`` for one run's workspace."""

    def __init__(self, workspace: WorkspaceView) -> None:
        self.workspace = workspace

    def grant(self, grant: Grant) -> None:
        """Remember an *allow for task* answer for the rest of the run."""
        if grant.kind == "path":
            path = Path(grant.value)
            if not path.is_absolute():
                raise ValueError(f"a path grant needs an absolute path, not {grant.value!r}")
            grant = Grant("path", os.path.realpath(path))
        self.workspace.grants.add(grant)

    def refusal(self, decision: Decision, *, by_user: bool) -> ToolResult:
        return approval_denied_result(decision) if by_user else policy_denied_result(decision)

    def evaluate(self, prepared: PreparedCall) -> Decision:
        decisions = list(self._judge(prepared))
        if not decisions:
            return Decision("allow", prepared.spec.risk)
        return _most_severe(decisions)

    def _judge(self, prepared: PreparedCall) -> Iterator[Decision]:
        spec, access = prepared.spec, prepared.access
        rule = f"tool:{spec.name}"
        if spec.risk in _ASKING_RISKS and Grant("command", rule) not in self.workspace.grants:
            yield Decision(
                "ask",
                spec.risk,
                f"{spec.name} is marked {spec.risk}",
                code="TOOL_NEEDS_APPROVAL",
                grant=Grant("command", rule),
            )
        for raw in access.reads:
            yield from self._judge_path(raw, write=False)
        for raw in access.writes:
            yield from self._judge_path(raw, write=True)
        if access.command is not None:
            yield from self._judge_command(access.command)
        yield from self._judge_web(access)

    def _judge_web(self, access: Access) -> Iterator[Decision]:
        """Browser calls: ``file:`` addresses are paths; the rest is ``policy.browsing``."""
        for address in access.opens:
            path = file_url_path(address.url)
            if path is not None:
                yield from self._judge_path(path, write=False)
                continue
            verdict = judge_address(address)
            if verdict is not None and verdict.grant not in self.workspace.grants:
                yield verdict
        if access.element is not None:
            verdict = judge_element(access.element)
            if verdict is not None:
                yield verdict

    def _judge_path(self, raw: str, *, write: bool) -> Iterator[Decision]:
        ws = self.workspace
        try:
            resolved = resolve_inside_root(raw, ws.root, extra_roots=ws.extra_roots(), write=write)
        except PolicyDenied as err:
            yield self._refusal(err, "writes" if write else "reads")
            return
        exact = Grant("path", str(resolved.path))
        if exact in ws.grants:
            return
        if resolved.nlink > 1:
            # Another name shares this file's content, maybe outside the root: reading or
            # writing it here would reach that file without any path saying so.
            why = f"is a hard link: {resolved.nlink} names share its content"
            code = "PATH_HARDLINK"
        elif not write and (is_secret_path(resolved.rel) or is_secret_path(raw)):
            why, code = "looks like a credential file", "PATH_SECRET"
        elif write and resolved.inside_root and ".git" in resolved.rel.split("/"):
            why, code = "is inside .git, whose hooks and config run code", "PATH_GIT_INTERNAL"
        elif write and resolved.inside_root and resolved.rel in _AGENT_CONFIG:
            why, code = "configures xclaw itself", "PATH_AGENT_CONFIG"
        else:
            return
        yield _ask_for_path(str(resolved.path), f"{raw!r} {why}", code)

    def _refusal(
        self, err: PolicyDenied, verb: str, *, is_dir: bool = False, how: str = ""
    ) -> Decision:
        """PATH_OUTSIDE_ROOT becomes a question; every other path refusal is final."""
        target = err.data.get("path")
        if err.code != "PATH_OUTSIDE_ROOT" or not isinstance(target, str):
            return Decision("deny", Risk.SENSITIVE, err.message, code=err.code)
        return Decision(
            "ask",
            Risk.SENSITIVE,
            f"{verb} {target}, outside the project{how}",
            code="PATH_OUTSIDE_ROOT",
            grant=narrow_path_grant(Path(target), self.workspace.root, is_dir=is_dir),
            targets=(target,),
        )

    def _judge_command(self, command: Command) -> Iterator[Decision]:
        ws = self.workspace
        cwd_path, about_cwd = self._judge_cwd(command.cwd or ".")
        if about_cwd is not None:
            yield about_cwd
        if cwd_path is None:
            return
        line = shlex.join([command.program, *command.argv])
        confined = ws.sandbox_mode != "host"
        verdict = classify_command(command.program, command.argv)
        yield from self._judge_reach(command, line, named=verdict.risk is Risk.EXTERNAL)
        # Inside a sandbox, code a command runs is contained; what it would destroy in the
        # project, or send away, is not — those forms still ask (defence in depth).
        contained = confined and verdict.runs_code
        if verdict.action == "ask" and not contained and not self._granted(verdict.rule):
            yield _ask(
                verdict.risk, f"{verdict.reason}: {line}", "COMMAND_NEEDS_APPROVAL", verdict.rule
            )
        # The allow-list names programs, not a model's file of the same name in the project.
        safe = known_safe(command.program, command.argv) and runs_from_program_location(
            command.program, cwd_path, ws.root
        )
        program = f"program {normalize_program(command.program)}"
        granted = self._granted(program) or bool(verdict.rule and self._granted(verdict.rule))
        if not confined and not safe and not granted:
            yield _ask(
                Risk.EXECUTE,
                f"not a known read-only command, and no sandbox contains it: {line}",
                "COMMAND_NOT_ALLOWLISTED",
                program,
            )
        yield from self._judge_arguments(command, cwd_path, confined=confined, safe=safe)

    def _judge_cwd(self, raw: str) -> tuple[Path | None, Decision | None]:
        """(the resolved working directory, None when refused; the question or refusal).

        A symlink out of the project is, for a command, the outside folder it leads to: the
        command would run there, so that folder is what the question names."""
        ws = self.workspace
        try:
            return resolve_inside_root(raw, ws.root, extra_roots=ws.extra_roots()).path, None
        except PolicyDenied as err:
            how = ""
            if err.code == "PATH_SYMLINK_ESCAPE":
                target = os.path.realpath(os.path.join(os.path.realpath(ws.root), raw))
                err = PolicyDenied(err.message, code="PATH_OUTSIDE_ROOT", hint=err.hint)
                err.data["path"] = target
                how = " through a symbolic link"
            decision = self._refusal(err, "runs in", is_dir=True, how=how)
            where = None if decision.action == "deny" else Path(str(err.data["path"]))
            return where, decision

    def _granted(self, rule: str) -> bool:
        return Grant("command", rule) in self.workspace.grants

    def _judge_reach(self, command: Command, line: str, *, named: bool) -> Iterator[Decision]:
        """Publishing and the network beyond loopback: what no sandbox contains. ``named``:
        the deny-list already asks for this command as external."""
        pushed = None if named else publishes(command.program, command.argv)
        rule = f"publish {normalize_program(command.program)}"
        if pushed and not self._granted(rule):
            yield _ask(Risk.EXTERNAL, f"{pushed}: {line}", "COMMAND_PUBLISHES", rule)
        net = needs_network(command.program, command.argv)
        if net is None:
            return
        rule = f"network {normalize_program(command.program)}"
        if self._granted(rule):
            yield Decision("allow", Risk.SENSITIVE, network=True)
        else:
            reason = f"{net}; the sandbox allows loopback only: {line}"
            yield replace(_ask(Risk.SENSITIVE, reason, "COMMAND_NEEDS_NETWORK", rule), network=True)

    def _judge_arguments(
        self, command: Command, cwd: Path, *, confined: bool, safe: bool
    ) -> Iterator[Decision]:
        ws = self.workspace
        if not safe:
            for arg, rel in protected_arguments(command.argv, ws.root, cwd):
                exact = str(ws.root / rel)
                if Grant("path", exact) not in ws.grants:
                    yield _ask_for_path(
                        exact,
                        f"{arg!r} names {rel}, which configures git or xclaw",
                        "COMMAND_PROTECTED_PATH",
                    )
        # Also in a sandbox: approving opens that folder to the command (a narrow grant).
        try:
            outside = command_outside_paths(command, ws.root, cwd, extra_roots=ws.extra_roots())
        except PolicyDenied as err:  # a path changed while it was looked at: fail closed
            yield Decision("deny", Risk.SENSITIVE, err.message, code=err.code)
            return
        if outside:
            yield Decision(
                "ask",
                Risk.SENSITIVE,
                describe(outside),
                code="COMMAND_OUTSIDE_ROOT",
                grant=narrow_path_grant(outside[0].path, ws.root),
                targets=tuple(dict.fromkeys(str(o.path) for o in outside)),
            )
        if confined:
            return  # a hard link into the sandboxed project cannot be made from outside it
        for arg in linked_arguments(command.argv, ws.root, cwd):
            exact = os.path.realpath(os.path.join(cwd, arg))
            if Grant("path", exact) not in ws.grants:
                yield _ask_for_path(
                    exact,
                    f"{arg!r} is a hard link: its other names may be outside the project",
                    "PATH_HARDLINK",
                )


def _ask_for_path(exact: str, reason: str, code: str) -> Decision:
    """Ask about one file; *allow for task* grants exactly that file."""
    return Decision(
        "ask", Risk.SENSITIVE, reason, code=code, grant=Grant("path", exact), targets=(exact,)
    )


def _ask(risk: Risk, reason: str, code: str, rule: str) -> Decision:
    return Decision("ask", risk, reason, code=code, grant=Grant("command", rule))


def narrow_path_grant(target: Path, root: Path, *, is_dir: bool | None = None) -> Grant | None:
    """The folder an *allow for task* answer opens: the target's folder, never a wide one.

    A directory target is granted itself, a file its parent folder. When that folder would be
    too wide (``/``, a top-level folder, the home folder or an ancestor of the project), only
    the target itself is offered; when even that is too wide, no task grant is offered.
    """
    directory = target.is_dir() if is_dir is None else is_dir
    for candidate in (target if directory else target.parent, target):
        if not _too_broad(candidate, root):
            return Grant("path", str(candidate))
    return None


def _too_broad(path: Path, root: Path) -> bool:
    if len(path.parts) <= 2 or path == root or path in root.parents:
        return True
    try:
        home = Path(os.path.realpath(Path.home()))
    except RuntimeError:  # no home directory known
        return False
    return path == home or path in home.parents


def _most_severe(decisions: list[Decision]) -> Decision:
    """deny > ask > allow, then by risk. An ask lists every reason and target at once,
    because *allow once* approves the whole call."""
    best = max(decisions, key=lambda d: (_ACTION_ORDER[d.action], _RISK_ORDER.index(d.risk)))
    if any(d.network for d in decisions) and best.action != "deny":
        best = replace(best, network=True)
    if best.action != "ask":
        return best
    asks = [d for d in decisions if d.action == "ask"]
    reasons = list(dict.fromkeys(d.reason for d in asks if d.reason))
    reasons.sort(key=lambda r: r != best.reason)
    targets = tuple(dict.fromkeys(t for d in asks for t in d.targets))
    return replace(best, reason="; ".join(reasons), targets=targets)
