"""A tool is a typed function; its strict JSON schema and validator are derived from its types.

The first parameter, when annotated ``ToolContext``, is detected and hidden from the model.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from xclaw.core.messages import ToolResult
from xclaw.core.sandbox import Sandbox, SandboxSource, sandbox_from
from xclaw.core.state import RunControl
from xclaw.core.tooling import NO_ACCESS, Access, Grant, OutputSink, Risk, ToolSpec
from xclaw.policy.paths import ResolvedPath, resolve_inside_root
from xclaw.sandbox import protect

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class Workspace:
    """Per-run tool state: the root, task grants, files read, processes, verification."""

    root: Path
    grants: set[Grant] = field(default_factory=set)
    read_stamps: dict[str, tuple[int, int]] = field(default_factory=dict)
    output_dir: Path | None = None
    processes: Any = None  # xclaw.tools.process.ProcessManager, set by the toolbox
    last_verification: dict[str, Any] | None = None
    changed_files: list[str] = field(default_factory=list)
    sandbox: Sandbox | None = None  # chosen on first use unless set
    sandbox_warning: str = ""
    # Where the first use takes it from when it is not set: the caller's sandbox or factory
    # (made only then: a run that starts no program makes none), else the user's config.
    sandbox_source: SandboxSource = None

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve(strict=True)

    def get_sandbox(self) -> Sandbox:
        """The session's sandbox: the one set by the caller, or made from its
        ``sandbox_source`` now (entry points pass the one of the resolved configuration),
        else ``session_sandbox`` of the user's configuration. Not the project file's: this
        runs inside policy checks, where a broken project file must not fail a call, and a
        project file may not widen the sandbox anyway."""
        if self.sandbox is None and self.sandbox_source is not None:
            self.sandbox = sandbox_from(self.sandbox_source)
        if self.sandbox is None:
            from xclaw.config import load_config
            from xclaw.sandbox.resolve import session_sandbox

            choice = session_sandbox(load_config())
            self.sandbox, self.sandbox_warning = choice.sandbox, choice.warning
        return self.sandbox

    @property
    def sandbox_mode(self) -> str:
        return str(self.get_sandbox().mode)

    async def close(self) -> None:
        """Stop what the session started: processes, then the sandbox (its network)."""
        if self.processes is not None:
            await self.processes.stop_all()
            for note in protect.guard(self.root):  # what a background process wrote last
                _log.warning("sandbox: %s", note)
        if self.sandbox is not None:
            await self.sandbox.close()

    def extra_roots(self) -> tuple[Path, ...]:
        return tuple(Path(g.value) for g in self.grants if g.kind == "path")

    def note_change(self, rel: str) -> None:
        if rel not in self.changed_files:
            self.changed_files.append(rel)


@dataclass(slots=True)
class ToolContext:
    """What a tool may use while it runs. Built per call by the registry."""

    workspace: Workspace
    output: OutputSink
    call_id: str = ""
    once_roots: tuple[Path, ...] = ()
    network: bool = False  # a human approved network access beyond loopback for this call
    session_id: str = ""  # the session of the run making the call ("" outside a run)
    control: RunControl | None = None  # that run's control (stop, pause), for tools that run runs

    @property
    def root(self) -> Path:
        return self.workspace.root

    def resolve(self, raw: str, *, write: bool = False, must_exist: bool = False) -> ResolvedPath:
        """Resolve a model-supplied path; raises PolicyDenied outside the root and grants."""
        return resolve_inside_root(
            raw,
            self.workspace.root,
            extra_roots=self.workspace.extra_roots() + self.once_roots,
            write=write,
            must_exist=must_exist,
        )


ToolFn = Callable[..., ToolResult | Awaitable[ToolResult]]


class _StrictArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(slots=True)
class Tool:
    name: str
    description: str
    fn: ToolFn
    args_model: type[BaseModel]
    risk: Risk
    read_only: bool
    timeout_s: float
    output_cap: int
    wants_context: bool
    access: Callable[[BaseModel], Access]
    # Looks at the world (a live page, DNS) before the policy decides: the full Access.
    inspect: Callable[[Any], Awaitable[Access]] | None = None
    spec: ToolSpec = field(init=False)

    def __post_init__(self) -> None:
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        schema["additionalProperties"] = False
        self.spec = ToolSpec(self.name, self.description, schema, self.read_only, self.risk)


_ARG_DOC = re.compile(r"^(\s+)(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Google-style docstring -> (summary, {arg: description}); continuation lines join."""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    indent = 0
    current = ""
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Arguments:"):
            in_args = True
            continue
        if in_args:
            width = len(line) - len(line.lstrip())
            m = _ARG_DOC.match(line)
            if m and (not current or width <= indent):
                indent, current = len(m.group(1)), m.group(2)
                args[current] = m.group(3).strip()
            elif current and line.strip() and width > indent:
                args[current] = f"{args[current]} {line.strip()}".strip()
            elif line.strip():
                in_args = False
        elif not args:
            summary_lines.append(line.strip())
    return " ".join(x for x in summary_lines if x).strip(), args


def _args_model(name: str, fn: ToolFn) -> tuple[type[BaseModel], bool]:
    sig = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)  # keep Annotated[..., Field(...)] limits
    params = list(sig.parameters.values())
    wants_context = bool(params) and hints.get(params[0].name) is ToolContext
    if wants_context:
        params = params[1:]
    _, arg_docs = _split_docstring(inspect.getdoc(fn) or "")
    fields: dict[str, Any] = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs cannot be described to a model")
        if p.name not in hints:
            raise TypeError(f"tool {name}: parameter {p.name!r} needs a type annotation")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    model_name = "".join(part.title() for part in re.split(r"[._]", name)) + "Args"
    return create_model(model_name, __base__=_StrictArgs, **fields), wants_context


def _default_access(path_args: tuple[str, ...], writes: bool) -> Callable[[BaseModel], Access]:
    if not path_args:
        return lambda _args: NO_ACCESS

    def access(args: BaseModel) -> Access:
        paths = tuple(str(getattr(args, a)) for a in path_args if getattr(args, a) is not None)
        return Access(writes=paths) if writes else Access(reads=paths)

    return access


def tool(
    name: str,
    *,
    risk: Risk = Risk.READ,
    read_only: bool | None = None,
    timeout_s: float = 60.0,
    output_cap: int = 32_000,
    path_args: tuple[str, ...] = (),
    access: Callable[[Any], Access] | None = None,
    inspector: Callable[[Any], Awaitable[Access]] | None = None,
) -> Callable[[ToolFn], Tool]:
    """Turn a typed function into a ``Tool``. Its docstring becomes the description.

    ``access`` declares what a call touches from its arguments alone; ``inspector`` (async)
    replaces it when that needs a look at the world first, e.g. the page element a click hits.
    """

    def wrap(fn: ToolFn) -> Tool:
        model, wants_context = _args_model(name, fn)
        summary, _ = _split_docstring(inspect.getdoc(fn) or "")
        ro = risk is Risk.READ if read_only is None else read_only
        return Tool(
            name=name,
            description=summary or name,
            fn=fn,
            args_model=model,
            risk=risk,
            read_only=ro,
            timeout_s=timeout_s,
            output_cap=output_cap,
            wants_context=wants_context,
            access=access or _default_access(path_args, writes=not ro),
            inspect=inspector,
        )

    return wrap
