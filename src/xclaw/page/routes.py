"""Route skills (seed 002: Prompt + Tools + Route): per-route prompts and tools, switched
when the page's URL path changes.

A pattern is an exact path (``/tickets``) or a glob (``/tickets/*``); an exact match wins,
then the first matching glob in registration order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from xclaw.tools.base import Tool


@dataclass(frozen=True, slots=True)
class RouteSkill:
    prompt: str = ""
    tools: Sequence[Tool] = field(default_factory=tuple)


def url_path(url: str) -> str:
    """The path of a URL ("/" when it has none); file: URLs keep their full path."""
    path = urlsplit(url).path
    return path or "/"


class RouteSkills:
    """The registered skills and which one is active for the page's current path."""

    def __init__(self, skills: Mapping[str, RouteSkill] | None = None) -> None:
        self._skills: dict[str, RouteSkill] = dict(skills or {})
        self.active: str | None = None
        self.path: str | None = None

    def set(self, pattern: str, skill: RouteSkill) -> None:
        self._skills[pattern] = skill

    def remove(self, pattern: str) -> bool:
        if self.active == pattern:
            self.active = None
        return self._skills.pop(pattern, None) is not None

    def patterns(self) -> list[str]:
        return list(self._skills)

    def match(self, path: str) -> str | None:
        if path in self._skills:
            return path
        for pattern in self._skills:
            if any(c in pattern for c in "*?[") and fnmatchcase(path, pattern):
                return pattern
        return None

    def update(self, url: str) -> bool:
        """Follow the page to ``url``; True when the active skill changed."""
        path = url_path(url)
        if path == self.path and (self.active is None or self.active in self._skills):
            return False
        self.path = path
        chosen = self.match(path)
        changed = chosen != self.active
        self.active = chosen
        return changed

    def reset(self) -> None:
        self.active = self.path = None

    def current(self) -> tuple[str, RouteSkill] | None:
        if self.active is None or self.active not in self._skills:
            return None
        return self.active, self._skills[self.active]

    def tools(self) -> list[Tool]:
        current = self.current()
        return list(current[1].tools) if current else []

    def prompt(self) -> tuple[str, str] | None:
        current = self.current()
        return (current[0], current[1].prompt) if current and current[1].prompt else None
