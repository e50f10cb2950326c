"""Helpers for multi-agent tests: scripted workers, a real store, real git projects."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from xclaw.agents.registry import BUILTIN_WORKERS, WorkerRegistry, WorkerSpec
from xclaw.agents.team import Orchestrator
from xclaw.compose.agents import CodingAgents
from xclaw.core.model import Model
from xclaw.models.scripted import ScriptedModel
from xclaw.store.sqlite import SqliteStore, open_store


class Scripts:
    """Per worker, the scripts of its successive runs (each run takes the next one)."""

    def __init__(self, scripts: dict[str, list[list[Any]]]) -> None:
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.models: list[tuple[str, ScriptedModel]] = []

    def __call__(self, spec: WorkerSpec) -> Model:
        queue = self.scripts.get(spec.name)
        if not queue:
            raise AssertionError(f"no script left for worker {spec.name}")
        model = ScriptedModel(queue.pop(0), name=f"scripted-{spec.name}")
        self.models.append((spec.name, model))
        return model

    def assert_all_used(self) -> None:
        left = {k: len(v) for k, v in self.scripts.items() if v}
        assert not left, f"unused worker scripts: {left}"
        for _, model in self.models:
            model.assert_complete()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def deliver(summary: str, data: dict[str, Any] | None = None, **pointers: str) -> dict[str, Any]:
    args: dict[str, Any] = {"summary": summary}
    if data is not None:
        args["summary_data"] = data
    if pointers:
        args["artifact_pointers"] = pointers
    return call("deliver", **args)


def exec_call(program: str, *argv: str, stdin: str | None = None) -> dict[str, Any]:
    """A scripted turn calling ``terminal.exec``."""
    extra = {} if stdin is None else {"stdin": stdin}
    return call("terminal.exec", program=program, argv=list(argv), **extra)


def tree(
    model: Model, root: Path, store: SqliteStore, registry: WorkerRegistry, **settings: Any
) -> Orchestrator:
    """An orchestrator on ``root`` whose workers are coding agents (as compose builds them)."""
    return Orchestrator(
        model, root, store=store, registry=registry, agent_factory=CodingAgents(), **settings
    )


def script_file(path: Path, turns: list[object]) -> str:
    """Write a scripted model's turns to ``path``; the ``--model`` spec that plays them."""
    path.write_text(yaml.safe_dump(turns))
    return f"scripted:{path}"


def wait_for(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.fixture
def store() -> Iterator[SqliteStore]:
    s = open_store()
    yield s
    s.close()


@pytest.fixture
def registry() -> WorkerRegistry:
    return WorkerRegistry(BUILTIN_WORKERS)


def git_project(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    ident = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "init"], cwd=path, check=True)
    return path.resolve()
