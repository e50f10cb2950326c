"""A session's first user message: the task, under a line naming the project root.

The coding agent writes it (``task_message``); whoever reads a transcript back — the gateway's
history, a multi-agent tree comparing what it last asked a worker — takes the task out of it
(``task_from_message``). Paths are relative only: the project root is shown as ``.``, never
as its absolute path, since a model told ``/home/me/proj`` writes ``proj/hello.py`` (seen
with small models).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ROOT_LINE", "task_from_message", "task_message"]

# Not a bare "." either: the 0.5B Qwen then wrote to the path "." (a recorded run). No example
# file name: it copied `src/app.py` from here and then repeated it until the token cap.
ROOT_LINE = "Project root: `.` (give each file path relative to it; a file at the root is its name)"


def task_message(task: str, root: Path | None = None) -> str:
    """The first user message. ``root`` is deliberately not shown (see the module docstring);
    the parameter stays for callers that pass it."""
    return f"{ROOT_LINE}\n\nTask:\n{task}"


def task_from_message(text: str) -> str:
    """The task a ``task_message`` wraps (any other text as it is): what the user typed."""
    head, sep, task = text.partition("\n\nTask:\n")
    return task if sep and head.startswith("Project root: ") and "\n" not in head else text
