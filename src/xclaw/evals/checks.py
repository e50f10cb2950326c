"""Assertions of a case, judged on the final project, the reply and the tools called.

Each check returns ``Failure`` items (a stable code and a sentence); no failure means pass.
File paths are resolved inside the case copy as the file tools resolve them: a symlink out of
the copy is a failure, never a read of the outside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from xclaw.core.errors import PolicyDenied
from xclaw.evals.dataset import Case, FileAssertion, LoadedDataset, ReplyAssertion
from xclaw.policy.paths import resolve_inside_root
from xclaw.tools.atomic import atomic_write_bytes


@dataclass(frozen=True, slots=True)
class Failure:
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def check_tools(case: Case, called: Iterable[str]) -> list[Failure]:
    """``expected_tools`` each matched by a call, ``forbidden_tools`` matched by none."""
    names = list(dict.fromkeys(called))
    out: list[Failure] = []
    for pattern in case.expected_tools:
        if not any(fnmatchcase(n, pattern) for n in names):
            out.append(Failure("EXPECTED_TOOL_NOT_CALLED", f"no call of {pattern}"))
    for pattern in case.forbidden_tools:
        hits = [n for n in names if fnmatchcase(n, pattern)]
        if hits:
            out.append(
                Failure("FORBIDDEN_TOOL_CALLED", f"{', '.join(hits)} was called ({pattern})")
            )
    return out


def check_reply(spec: ReplyAssertion, reply: str) -> list[Failure]:
    out = [
        Failure("REPLY_LACKS_TEXT", f"the reply does not contain {needle!r}")
        for needle in spec.contains
        if needle not in reply
    ]
    out += [
        Failure("REPLY_REGEX_NO_MATCH", f"the reply does not match /{p}/")
        for p in spec.regex
        if re.search(p, reply, re.MULTILINE) is None
    ]
    return out


def check_files(loaded: LoadedDataset, case: Case, project: Path, fixture: Path) -> list[Failure]:
    out: list[Failure] = []
    for spec in case.assertions.files:
        out += _check_file(loaded, spec, project, fixture)
    return out


def _check_file(
    loaded: LoadedDataset, spec: FileAssertion, project: Path, fixture: Path
) -> list[Failure]:
    try:
        target = resolve_inside_root(spec.path, project).path
        original = resolve_inside_root(spec.path, fixture).path  # the dataset's copy, if any
    except PolicyDenied as err:
        return [Failure("FILE_OUTSIDE_PROJECT", f"{spec.path}: {err.message}")]
    exists = target.exists()
    if spec.exists is False:
        return [Failure("FILE_PRESENT", f"{spec.path} exists and must not")] if exists else []
    if not exists:
        if spec.unchanged and not original.exists():
            return []  # absent before and after: unchanged
        return [Failure("FILE_MISSING", f"{spec.path} does not exist")]
    if not target.is_file():
        return [Failure("FILE_NOT_REGULAR", f"{spec.path} is not a regular file")]
    data = target.read_bytes()
    return _content_failures(loaded, spec, data, original)


def _content_failures(
    loaded: LoadedDataset, spec: FileAssertion, data: bytes, original: Path
) -> list[Failure]:
    text = data.decode("utf-8", errors="replace")
    out = [
        Failure("FILE_LACKS_TEXT", f"{spec.path} does not contain {s!r}")
        for s in spec.contains
        if s not in text
    ]
    out += [
        Failure("FILE_HAS_TEXT", f"{spec.path} contains {s!r}")
        for s in spec.not_contains
        if s in text
    ]
    out += [
        Failure("FILE_REGEX_NO_MATCH", f"{spec.path} does not match /{p}/")
        for p in spec.regex
        if re.search(p, text, re.MULTILINE) is None
    ]
    if spec.equals is not None:
        expected = loaded.resolve(spec.equals, what="expected file", folder=False)
        if expected.read_bytes() != data:
            out.append(Failure("FILE_DIFFERS", f"{spec.path} differs from {spec.equals}"))
    if spec.unchanged:
        if not original.is_file() or original.read_bytes() != data:
            out.append(Failure("FILE_CHANGED", f"{spec.path} was changed and must not be"))
    return out


def overlay(source: Path, project: Path) -> None:
    """Copy ``source``'s files over ``project`` (hidden checks, a reference solution).

    The project was in a model's hands: a symlink it planted out of the copy, file or folder,
    refuses the overlay (``PolicyDenied``); a link inside the copy is replaced, not written
    through (the atomic write renames over the link).
    """
    for src in sorted(source.rglob("*")):
        rel = src.relative_to(source).as_posix()
        if src.is_symlink():
            continue  # a dataset's own links are not copied over the result
        target = resolve_inside_root(rel, project).path
        if src.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif src.is_file():
            folder = resolve_inside_root(os.path.dirname(rel) or ".", project).path
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(folder / src.name, src.read_bytes(), durable=False)


def failures_to_dicts(failures: Iterable[Failure]) -> list[dict[str, Any]]:
    return [f.to_dict() for f in failures]
