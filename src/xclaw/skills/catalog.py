"""The skills a run can use: discovered from the project's and the user's skill folders (and
plugins'), checked against this machine, matched against messages.

Order decides a name used twice: ``<project>/.xclaw/skills``, ``<project>/.claude/skills``,
``<config dir>/skills``, then plugin skill folders; a later one is listed as shadowed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.errors import ConfigError, PolicyDenied
from xclaw.dirs import config_dir
from xclaw.skills.match import invoked_names, keyword_hits, matches
from xclaw.skills.skill import RESOURCE_DIRS, SKILL_FILE, Skill, read_skill


def user_skill_dir() -> Path:
    return config_dir() / "skills"


def skill_dirs(root: Path | None) -> list[tuple[str, Path]]:
    """(source, folder) pairs in priority order; folders need not exist."""
    dirs: list[tuple[str, Path]] = []
    if root is not None:
        dirs += [("project", root / ".xclaw" / "skills"), ("claude", root / ".claude" / "skills")]
    dirs.append(("user", user_skill_dir()))
    return dirs


@dataclass(frozen=True, slots=True)
class SkillStatus:
    """A skill as listed: usable, or why not (missing bins/env, invalid, shadowed)."""

    name: str
    folder: Path
    source: str
    skill: Skill | None
    problem: str = ""

    @property
    def available(self) -> bool:
        return self.skill is not None and not self.problem


class SkillCatalog:
    def __init__(self, statuses: Iterable[SkillStatus] = ()) -> None:
        self.statuses = list(statuses)
        self._by_name = {s.name: s.skill for s in self.statuses if s.available and s.skill}

    @classmethod
    def discover(cls, folders: Iterable[tuple[str, Path]]) -> SkillCatalog:
        statuses: list[SkillStatus] = []
        seen: dict[str, str] = {}
        for source, base in folders:
            for folder in _skill_folders(base):
                statuses.append(_status(folder, source, seen))
        return cls(statuses)

    def __len__(self) -> int:
        return len(self._by_name)

    def available(self) -> list[Skill]:
        return list(self._by_name.values())

    def get(self, name: str) -> Skill | None:
        skill = self._by_name.get(name)
        if skill is None:  # names are matched case-insensitively, as `/Name` is typed
            skill = next((s for n, s in self._by_name.items() if n.lower() == name.lower()), None)
        return skill

    def status(self, name: str) -> SkillStatus | None:
        return next((s for s in self.statuses if s.name.lower() == name.lower()), None)

    def invoked(self, message: str) -> list[Skill]:
        """Skills the user called by ``/name`` (user-invocable ones only)."""
        out = []
        for name in invoked_names(message):
            skill = self.get(name)
            if skill is not None and skill.user_invocable:
                out.append(skill)
        return out

    def match(self, message: str, *, minimum: int = 2) -> list[Skill]:
        """``/name`` invocations first, then keyword matches, best first; no duplicates."""
        chosen = {s.name: s for s in self.invoked(message)}
        scored = [
            (len(keyword_hits(message, s.description)), s)
            for s in self._by_name.values()
            if s.user_invocable and s.name not in chosen and matches(message, s.description)
        ]
        for _, skill in sorted(scored, key=lambda pair: -pair[0]):
            chosen[skill.name] = skill
        return list(chosen.values())


def _skill_folders(base: Path) -> list[Path]:
    if not base.is_dir():
        return []
    if (base / SKILL_FILE).is_file():  # a single skill given as the folder itself
        return [base]
    return sorted(p for p in base.iterdir() if p.is_dir() and (p / SKILL_FILE).is_file())


def _status(folder: Path, source: str, seen: dict[str, str]) -> SkillStatus:
    try:
        skill, _ = read_skill(folder, source)
    except ConfigError as err:
        return SkillStatus(folder.name, folder, source, None, err.message)
    if skill.name in seen:
        return SkillStatus(skill.name, folder, source, skill, f"shadowed by {seen[skill.name]}")
    seen[skill.name] = f"{source} skill at {folder}"
    missing = skill.missing()
    if missing:
        hints = skill.install_hints()
        why = "requires " + ", ".join(missing) + (f" ({'; '.join(hints)})" if hints else "")
        return SkillStatus(skill.name, folder, source, skill, why)
    return SkillStatus(skill.name, folder, source, skill)


def resolve_resource(skill: Skill, relative: str) -> Path:
    """A file of the skill (``scripts/x.py``, ``references/api.md``, ``assets/t.html`` or
    ``SKILL.md``), resolved through symlinks, refused when it leaves the skill folder."""
    rel = Path(relative.replace("{baseDir}/", ""))
    if rel.is_absolute() or ".." in rel.parts:
        raise PolicyDenied(
            f"{relative!r} is not a path inside skill {skill.name}.",
            code="PATH_OUTSIDE_SKILL",
            hint="Use a relative path such as references/<file>.",
        )
    if rel.parts[:1] not in [(d,) for d in RESOURCE_DIRS] and rel.as_posix() != SKILL_FILE:
        raise PolicyDenied(
            f"{relative!r} is not in {', '.join(RESOURCE_DIRS)} of skill {skill.name}.",
            code="PATH_OUTSIDE_SKILL",
            hint="Skill files live under scripts/, references/ or assets/.",
        )
    real = Path(os.path.realpath(skill.folder / rel))
    if not real.is_relative_to(skill.folder):
        raise PolicyDenied(
            f"{relative!r} leads outside skill {skill.name} (through a link).",
            code="PATH_OUTSIDE_SKILL",
            hint="A skill may only use its own files.",
        )
    return real


def resource_listing(skill: Skill, limit: int = 100) -> list[str]:
    """The skill's own files under scripts/, references/ and assets/ (links that leave the
    folder are left out)."""
    out: list[str] = []
    for sub in RESOURCE_DIRS:
        base = skill.folder / sub
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if Path(os.path.realpath(path)).is_relative_to(skill.folder):
                    out.append(path.relative_to(skill.folder).as_posix())
                if len(out) >= limit:
                    return out
    return out
