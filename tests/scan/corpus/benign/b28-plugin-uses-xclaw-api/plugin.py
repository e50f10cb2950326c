from dataclasses import dataclass

import xclaw
from xclaw.core.messages import ToolResult
from xclaw.tools.base import tool


@dataclass
class Note:
    text: str
    tags: tuple[str, ...] = ()


class NoteResult(ToolResult):
    pass


def register(api):
    store = []

    @tool("notes.add")
    def add(text: str) -> ToolResult:
        """Add a note.

        Args:
            text: The note.
        """
        note = Note(text)
        note.tags = ("inbox",)
        store.append(note)
        version = getattr(xclaw, "__version__", "?")
        return ToolResult.success(f"{len(store)} notes (xclaw {version})")

    add.category = "notes"
    api.register_tool(add)
