"""What the loop needs to know about tools, policy and approval — as interfaces only.

``core`` never imports a concrete tool, policy or approver; the coding face wires them in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol

from xclaw.core.messages import ToolCallPart, ToolResult


class Risk(StrEnum):
    """Seed 000 §8.1 risk table."""

    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    SENSITIVE = "sensitive"
    DESTRUCTIVE = "destructive"
    EXTERNAL = "external"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    risk: Risk


_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def wire_tool_name(name: str) -> str:
    """A tool name every provider accepts (``^[A-Za-z0-9_-]{1,64}$``): ``fs.read`` → ``fs_read``.

    Adapters keep a per-request map back to the real name and reject collisions.
    """
    return _WIRE_UNSAFE.sub("_", name)[:64]


@dataclass(frozen=True, slots=True)
class Grant:
    """A narrow rule an *allow for task* answer adds: one directory, or one program+subcommand."""

    kind: Literal["path", "command", "site"]
    value: str

    def describe(self) -> str:
        what = {"path": "files under", "command": "the command", "site": "pages on"}[self.kind]
        return f"{what} {self.value}"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["allow", "ask", "deny"]
    risk: Risk
    reason: str = ""
    code: str = ""
    grant: Grant | None = None
    targets: tuple[str, ...] = ()
    network: bool = False  # the call needs the network beyond loopback (once approved)


ALLOW_READ = Decision("allow", Risk.READ)


@dataclass(frozen=True, slots=True)
class Command:
    program: str
    argv: tuple[str, ...]
    cwd: str
    stdin: str | None = None  # text for standard input: file names, for xargs and the like


@dataclass(frozen=True, slots=True)
class WebAddress:
    """A web address a call would open, and what its host resolved to just before."""

    url: str
    resolved: tuple[str, ...] = ()  # IP addresses; empty when not a name or not resolvable


@dataclass(frozen=True, slots=True)
class PageElement:
    """The page element a call would act on, as the page showed it just before the call."""

    action: str  # "click", "key:Enter", ...
    tag: str
    text: str = ""  # visible text, value of a button-like input
    label: str = ""  # aria-label, title, alt
    role: str = ""
    href: str = ""
    submits_form: bool = False  # activating it submits its form
    form_fields: tuple[str, ...] = ()  # name/id/autocomplete/type hints of that form's fields
    page_url: str = ""


@dataclass(frozen=True, slots=True)
class Access:
    """What a call would touch, raw from the model: the policy resolves and judges it."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    command: Command | None = None
    opens: tuple[WebAddress, ...] = ()
    element: PageElement | None = None


NO_ACCESS = Access()


@dataclass(slots=True)
class PreparedCall:
    """A call whose arguments passed validation. Nothing has run yet."""

    call: ToolCallPart
    spec: ToolSpec
    args: Any
    key: str  # normalised name+arguments, for identical-call detection and idempotency
    access: Access = NO_ACCESS
    decision: Decision = ALLOW_READ
    extra: dict[str, Any] = field(default_factory=dict)


Answer = Literal["once", "task", "deny"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    tool: str
    summary: str
    decision: Decision


OutputSink = Callable[[str, str], None]
"""(stream, text) -> None: live stdout/stderr of a running tool."""


class Toolbox(Protocol):
    def specs(self) -> Sequence[ToolSpec]: ...

    def prepare(self, call: ToolCallPart) -> PreparedCall | ToolResult: ...

    async def inspect(self, prepared: PreparedCall) -> ToolResult | None:
        """Look at what the call would act on (a page element, a host) and complete
        ``prepared.access`` before the policy decides; a result refuses the call unrun."""
        ...

    async def execute(self, prepared: PreparedCall, output: OutputSink) -> ToolResult: ...


class Policy(Protocol):
    def evaluate(self, prepared: PreparedCall) -> Decision: ...

    def grant(self, grant: Grant) -> None: ...

    def refusal(self, decision: Decision, *, by_user: bool) -> ToolResult:
        """The coded result a model reads when policy (or the user) refused a call."""
        ...


class WorkspaceView(Protocol):
    """What the policy reads of a run's workspace (``xclaw.tools.base.Workspace``): the root,
    the task's grants (an *allow for task* answer adds one), the folders they open, and the
    sandbox mode (a command is judged by what its sandbox contains)."""

    @property
    def root(self) -> Path: ...

    @property
    def grants(self) -> set[Grant]: ...

    @property
    def sandbox_mode(self) -> str: ...

    def extra_roots(self) -> tuple[Path, ...]: ...


class Approver(Protocol):
    async def approve(self, request: ApprovalRequest) -> Answer: ...
