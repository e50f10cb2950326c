"""The dataset file of ``xclaw eval``: cases, their fixtures and assertions (YAML, validated).

Every path in a dataset is relative to the dataset file and must stay inside its folder; the
file is untrusted input, so unknown keys are errors (``extra="forbid"``), not silently ignored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from xclaw.core.errors import ConfigError
from xclaw.core.validation import validation_detail

_CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Argv = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _valid_patterns(patterns: list[str]) -> list[str]:
    for p in patterns:
        try:
            re.compile(p)
        except re.error as err:
            raise ValueError(f"invalid regex {p!r}: {err}") from None
    return patterns


class FileAssertion(_Strict):
    """What one file of the final project must (not) be. ``path`` is inside the case copy."""

    path: str = Field(min_length=1)
    exists: bool | None = None  # true: must exist; false: must be absent
    contains: list[str] = []
    not_contains: list[str] = []
    regex: list[str] = []  # each must match somewhere (re.search, MULTILINE)
    equals: str | None = None  # a file of the dataset folder the final file must equal
    unchanged: bool = False  # byte-equal to the same path in the fixture

    _check_regex = field_validator("regex")(_valid_patterns)


class CommandAssertion(_Strict):
    """A command that must exit 0 in the final project, run like ``terminal.exec`` runs one."""

    argv: Argv
    cwd: str = "."
    timeout_s: float = Field(default=120.0, gt=0, le=3600)


class ReplyAssertion(_Strict):
    contains: list[str] = []
    regex: list[str] = []

    _check_regex = field_validator("regex")(_valid_patterns)


class Assertions(_Strict):
    files: list[FileAssertion] = []
    commands: list[CommandAssertion] = []
    reply: ReplyAssertion = ReplyAssertion()


class Case(_Strict):
    id: str = Field(pattern=_CASE_ID)
    task: str = Field(min_length=1)
    fixture: str = Field(min_length=1)  # folder, relative to the dataset file
    setup: list[Argv] = []  # argv lists run in the copy before the agent starts
    checks: str | None = None  # folder copied over the result before command assertions
    solution: str | None = None  # reference solution folder (dataset sanity tests only)
    allow: list[str] = []  # approval rules granted to this case, e.g. "program python3"
    requires: list[str] = []  # programs that must be on PATH, else the case is skipped
    expected_tools: list[str] = []  # fnmatch patterns; each must match a called tool
    forbidden_tools: list[str] = []  # fnmatch patterns; none may match a called tool
    assertions: Assertions = Assertions()
    max_turns: int = Field(default=40, ge=1, le=1000)
    timeout_s: float = Field(default=600.0, gt=0, le=24 * 3600)
    tags: list[str] = []
    model: str | None = None  # only "scripted:PATH": a test double for the runner itself

    @field_validator("model")
    @classmethod
    def _scripted_only(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("scripted:"):
            raise ValueError(
                "a case may only pin a scripted model (scripted:PATH); real models come "
                "from --model"
            )
        return value


class Dataset(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    cases: list[Case] = Field(min_length=1)

    @field_validator("cases")
    @classmethod
    def _unique_ids(cls, cases: list[Case]) -> list[Case]:
        seen: set[str] = set()
        for c in cases:
            if c.id in seen:
                raise ValueError(f"case id {c.id!r} appears twice")
            seen.add(c.id)
        return cases


class LoadedDataset:
    """A validated dataset and the folder its relative paths start from."""

    def __init__(self, dataset: Dataset, path: Path) -> None:
        self.dataset = dataset
        self.path = path
        self.root = path.parent

    @property
    def cases(self) -> list[Case]:
        return self.dataset.cases

    def resolve(self, rel: str, *, what: str, folder: bool) -> Path:
        """``rel`` inside the dataset folder (symlinks resolved), or ``ConfigError``."""
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root):
            raise ConfigError(
                f"The {what} {rel!r} is outside the dataset folder {self.root}.",
                code="EVAL_DATASET_INVALID",
                hint="Keep fixtures, checks and scripts next to the dataset file.",
            )
        ok = target.is_dir() if folder else target.is_file()
        if not ok:
            kind = "folder" if folder else "file"
            raise ConfigError(
                f"The {what} {rel!r} is not an existing {kind} (looked at {target}).",
                code="EVAL_DATASET_INVALID",
                hint="Fix the path; it is relative to the dataset file.",
            )
        return target

    def check_paths(self) -> None:
        """Every folder and file a case names exists inside the dataset folder."""
        for case in self.cases:
            self.resolve(case.fixture, what=f"fixture of {case.id}", folder=True)
            for rel in (case.checks, case.solution):
                if rel is not None:
                    self.resolve(rel, what=f"folder of {case.id}", folder=True)
            for fa in case.assertions.files:
                if fa.equals is not None:
                    self.resolve(fa.equals, what=f"expected file of {case.id}", folder=False)
            if case.model is not None:
                self.resolve(case.model.removeprefix("scripted:"), what="script", folder=False)


def load_dataset(path: Path) -> LoadedDataset:
    """Read and validate a dataset file; every problem is a ``ConfigError`` with the place."""
    path = path.expanduser().resolve()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(
            f"Cannot read the dataset {path}: {err.strerror}.",
            code="EVAL_DATASET_INVALID",
            hint="Pass the path of a dataset YAML file.",
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(
            f"The dataset {path} is not valid YAML: {err}",
            code="EVAL_DATASET_INVALID",
            hint="Fix the YAML syntax.",
        ) from None
    try:
        dataset = Dataset.model_validate(raw)
    except ValidationError as err:
        problems = validation_detail(err, "(file)")
        raise ConfigError(
            f"The dataset {path} is invalid: {problems}",
            code="EVAL_DATASET_INVALID",
            hint="See the dataset format in the README (xclaw eval).",
        ) from None
    loaded = LoadedDataset(dataset, path)
    loaded.check_paths()
    return loaded


Status = Literal["passed", "failed", "skipped"]
