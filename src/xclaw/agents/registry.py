"""Worker roles: the built-in ones, merged with ``agents.workers`` from xclaw.yaml.

A worker is a role prompt, a tool allowlist, a model spec, turn and time limits, a workspace
(``project``: the project itself; ``isolated``: a private worktree or copy, see
``workspace.py``) and an approval mode that may only narrow the parent's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from xclaw.agents.config import NAME_PATTERN, AgentsConfig, ApprovalMode, WorkspaceMode
from xclaw.core.errors import ConfigError

DELIVER_TOOL = "deliver"

READ_TOOLS = ("fs.list", "fs.read", "fs.search", "project.status")
WRITE_TOOLS = (*READ_TOOLS, "fs.write", "fs.edit")
EXEC_TOOLS = (*WRITE_TOOLS, "terminal.exec")

# The order of permissiveness: a child may keep or lower its parent's mode, never raise it.
APPROVAL_RANK: dict[str, int] = {"deny": 0, "ask": 1, "allow": 2}

_DELIVER_RULES = """

## Finishing
You are a worker: another agent gave you this task and reads only what you deliver.
End your work with exactly one call to the `deliver` tool:
- summary: a few sentences — what you did or found, and what the caller should do next;
- summary_data: small structured facts (flags, scores, file names, issues found), never
  whole files or long text;
- artifact_pointers: {"name": "path"} for files you wrote that the caller may want to read
  (paths inside your workspace), never their content;
- status: "error" when you could not do the task (the summary says why).
The task must be self-contained; do not ask questions back, state your assumptions instead."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    name: str
    prompt: str
    tools: tuple[str, ...]
    model: str | None = None
    max_turns: int = 10
    time_limit_s: float = 600.0
    workspace: WorkspaceMode = "project"
    approval: ApprovalMode | None = None  # None: the parent's mode

    @property
    def system_prompt(self) -> str:
        return self.prompt.rstrip() + _DELIVER_RULES


BUILTIN_WORKERS: tuple[WorkerSpec, ...] = (
    WorkerSpec(
        "coder",
        "You are a careful software engineer. Implement or fix exactly what the task asks, "
        "in small verified steps: read the relevant files first, change them with the file "
        "tools, and run the project's tests or a quick check when one exists.",
        EXEC_TOOLS,
        max_turns=12,
    ),
    WorkerSpec(
        "reviewer",
        "You are a strict code reviewer. Read the files named in the task and report real "
        "defects (bugs, unsafe input handling, missing edge cases), each with file, line and a "
        "concrete fix. Do not edit files. Put the issues in summary_data.issues.",
        READ_TOOLS,
    ),
    WorkerSpec(
        "writer",
        "You are a technical writer. Write clear, accurate documentation for what the task "
        "names, in files of your own workspace; read the code you document first.",
        WRITE_TOOLS,
        workspace="isolated",
    ),
    WorkerSpec(
        "optimizer",
        "You are a performance engineer. Measure before and after, change one thing at a "
        "time, and report the figures you observed in summary_data.",
        EXEC_TOOLS,
        workspace="isolated",
    ),
    WorkerSpec(
        "skeptic",
        "You are a skeptic. Look for what could go wrong: risks, unstated assumptions, "
        "security problems, cheaper alternatives. Argue from evidence in the task and files.",
        READ_TOOLS,
    ),
    WorkerSpec(
        "judge",
        "You are the judge of a debate. Weigh the answers given to the question, say where "
        "they agree and disagree, and give one reasoned decision. Put the decision in "
        "summary_data.decision and the reasons in summary_data.reasons.",
        READ_TOOLS,
        max_turns=6,
    ),
)


class WorkerRegistry:
    """Worker specs by name; an instance per orchestrator (never a module global)."""

    def __init__(self, workers: Iterable[WorkerSpec] = ()) -> None:
        self._workers: dict[str, WorkerSpec] = {}
        for w in workers:
            self.add(w)

    def add(self, spec: WorkerSpec) -> None:
        if not re.fullmatch(NAME_PATTERN, spec.name):
            raise ConfigError(
                f"Worker name {spec.name!r} is not allowed.",
                hint="Use up to 32 lowercase letters, digits, '-' or '_', starting with a letter.",
            )
        self._workers[spec.name] = spec

    def get(self, name: str) -> WorkerSpec | None:
        return self._workers.get(name)

    def names(self) -> list[str]:
        return list(self._workers)

    def __iter__(self) -> Iterator[WorkerSpec]:
        return iter(self._workers.values())

    def __contains__(self, name: object) -> bool:
        return name in self._workers

    def only(self, names: Iterable[str]) -> WorkerRegistry:
        """A team: the named workers (each must exist)."""
        chosen = []
        for n in names:
            spec = self.get(n)
            if spec is None:
                raise ConfigError(f"Team member {n!r} is not a worker.", hint=self._hint())
            chosen.append(spec)
        return WorkerRegistry(chosen)

    def _hint(self) -> str:
        return "Workers: " + ", ".join(self.names())


def build_registry(
    config: AgentsConfig | None,
    *,
    known_tools: Iterable[str],
    parent_approval: ApprovalMode,
) -> WorkerRegistry:
    """Built-in roles with the configured overrides and additions, checked: every tool must
    exist, and no worker may ask for a wider approval mode than the parent run has."""
    registry = WorkerRegistry(BUILTIN_WORKERS)
    tools = set(known_tools)
    for name, cfg in (config.workers if config else {}).items():
        base = registry.get(name)
        if base is None:
            if cfg.prompt is None:
                raise ConfigError(
                    f"Worker {name!r} is not a built-in role and has no prompt.",
                    hint="Give it a prompt (and tools), or use a built-in role name.",
                )
            base = WorkerSpec(name, cfg.prompt, READ_TOOLS)
        changes = {k: v for k, v in cfg.model_dump().items() if v is not None}
        if "tools" in changes:
            changes["tools"] = tuple(changes["tools"])
        registry.add(replace(base, **changes))
    for spec in registry:
        unknown = [t for t in spec.tools if t not in tools and t != DELIVER_TOOL]
        if unknown:
            raise ConfigError(
                f"Worker {spec.name!r} lists unknown tools: {', '.join(unknown)}.",
                hint="Known tools: " + ", ".join(sorted(tools)),
            )
        check_narrowing(spec, parent_approval)
    return registry


def check_narrowing(spec: WorkerSpec, parent: ApprovalMode) -> None:
    if spec.approval is not None and APPROVAL_RANK[spec.approval] > APPROVAL_RANK[parent]:
        raise ConfigError(
            f"Worker {spec.name!r} asks for approval {spec.approval!r}, more than the parent "
            f"run's {parent!r}.",
            code="AGENTS_APPROVAL_WIDENS",
            hint="A worker's approval mode may only narrow its parent's: use deny or ask, "
            "or run the parent with a wider --approval.",
        )
