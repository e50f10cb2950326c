"""How skills reach the model: names and descriptions in the system prompt; a skill's body only
once it is used — matched or ``/name``-invoked by the user (a ``request_view`` hook adds it to
what the model is sent, never to the transcript), or loaded by the model (``skills.load``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xclaw.core.errors import ConfigError, ToolError
from xclaw.core.messages import Message, TextPart, ToolResult
from xclaw.skills.catalog import SkillCatalog, resolve_resource, resource_listing
from xclaw.skills.skill import Skill
from xclaw.tools.base import Tool, tool

if TYPE_CHECKING:
    from xclaw.core.state import RunState

LOAD_TOOL = "skills.load"
READ_TOOL = "skills.read"
MAX_RESOURCE_BYTES = 200_000
_TASK_MARK = "\n\nTask:\n"


def prompt_section(catalog: SkillCatalog) -> str:
    """The index the system prompt carries: one line per usable skill."""
    skills = catalog.available()
    if not skills:
        return ""
    lines = [
        "## Skills",
        "Skills are instructions for particular jobs; only their names and descriptions are "
        f"listed here. When a task fits one, call `{LOAD_TOOL}` with its name and follow its "
        "instructions. Skills the user invoked (/name) or whose description matches the task "
        "are loaded for you at the end of this prompt. Run a skill's scripts with the terminal "
        f"tool; read its references/ and assets/ with `{READ_TOOL}`.",
        "",
    ]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    return "\n".join(lines)


def render_body(skill: Skill) -> str:
    """The skill's instructions as the model gets them; ``ConfigError`` when its SKILL.md
    can no longer be read (changed or removed since the catalog was built)."""
    files = resource_listing(skill)
    listing = ("\nFiles: " + ", ".join(files)) if files else ""
    return f"### Skill: {skill.name}\nFolder: {skill.folder}{listing}\n\n{skill.body().strip()}"


def _render_or_note(skill: Skill) -> str:
    try:
        return render_body(skill)
    except ConfigError as err:  # the run goes on; the model is told, not misled
        return f"### Skill: {skill.name}\n(unavailable: {err.message})"


def _user_inputs(messages: Sequence[Message]) -> list[str]:
    """What the user typed: user messages without tool results, the task wrapper removed."""
    texts = []
    for m in messages:
        if m.role == "user" and not m.tool_results and m.text:
            head, sep, task = m.text.partition(_TASK_MARK)
            texts.append(task if sep and head.startswith("Project root: ") else m.text)
    return texts


def _loaded_by_tool(messages: Sequence[Message]) -> set[str]:
    return {
        str(call.arguments.get("name", "")).lower()
        for m in messages
        for call in m.tool_calls
        if call.name == LOAD_TOOL and isinstance(call.arguments, dict)
    }


class SkillView:
    """A ``request_view`` hook: the bodies of the skills the user's messages call for are
    appended to the system message the model is sent this turn."""

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog
        self._matched: dict[str, list[Skill]] = {}  # per user text: matching is not free

    def skills_for(self, messages: Sequence[Message]) -> list[Skill]:
        chosen: dict[str, Skill] = {}
        for text in _user_inputs(messages):
            if text not in self._matched:
                self._matched[text] = self.catalog.match(text)
            for skill in self._matched[text]:
                chosen.setdefault(skill.name, skill)
        already = _loaded_by_tool(messages)
        return [s for s in chosen.values() if s.name.lower() not in already]

    def __call__(self, state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        skills = self.skills_for(messages)
        if not skills:
            return messages
        section = "\n\n## Skills in use\n\n" + "\n\n---\n\n".join(
            _render_or_note(s) for s in skills
        )
        if messages and messages[0].role == "system":
            first = messages[0]
            return [Message("system", (*first.parts, TextPart(section))), *messages[1:]]
        return [Message.system(section.strip()), *messages]


def skill_tools(catalog: SkillCatalog) -> list[Tool]:
    """``skills.load`` and ``skills.read`` over this catalog."""

    def find(name: str) -> Skill:
        skill = catalog.get(name)
        if skill is None:
            status = catalog.status(name)
            why = f" ({status.problem})" if status is not None and status.problem else ""
            raise ToolError(
                f"There is no usable skill named {name!r}{why}.",
                code="SKILL_NOT_FOUND",
                hint="Use one of: " + (", ".join(s.name for s in catalog.available()) or "none"),
            )
        return skill

    @tool(LOAD_TOOL)
    def load_skill(name: str) -> ToolResult:
        """Load a skill's instructions (its SKILL.md body) by name, before doing its job.

        Args:
            name: The skill's name as listed in the Skills section.
        """
        skill = find(name)
        try:
            body = render_body(skill)
        except ConfigError as err:
            raise ToolError(
                err.message, code="SKILL_UNREADABLE", hint="Ask the user to check the skill."
            ) from None
        files = resource_listing(skill)
        return ToolResult.success(body, skill=skill.name, folder=str(skill.folder), files=files)

    @tool(READ_TOOL)
    def read_skill_file(name: str, path: str) -> ToolResult:
        """Read one file of a skill: references/..., assets/... or scripts/... (text).

        Args:
            name: The skill's name.
            path: The file's path inside the skill folder, e.g. references/api.md.
        """
        skill = find(name)
        real = resolve_resource(skill, path)
        if not real.is_file():
            raise ToolError(
                f"Skill {skill.name} has no file {path!r}.",
                code="SKILL_FILE_NOT_FOUND",
                hint="Files: " + (", ".join(resource_listing(skill)) or "none"),
            )
        data = real.read_bytes()
        text = data[:MAX_RESOURCE_BYTES].decode("utf-8", errors="replace")
        return ToolResult.success(
            text, truncated=len(data) > MAX_RESOURCE_BYTES, skill=skill.name, path=path
        )

    return [load_skill, read_skill_file]
