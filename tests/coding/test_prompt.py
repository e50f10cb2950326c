"""The coding agent never shows the model the absolute project root: paths stay relative."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xclaw import Agent, FunctionModel, ModelTurn
from xclaw.coding.prompt import ROOT_LINE, SYSTEM_PROMPT, task_from_message, task_message
from xclaw.core.messages import Message
from xclaw.core.model import ModelRequest


async def test_no_message_names_the_absolute_root(tmp_path: Path) -> None:
    root = tmp_path / "shop-site-7"
    root.mkdir()
    seen: list[Message] = []

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        seen.extend(messages)
        return ModelTurn(text="Nothing to do.")

    agent = Agent(FunctionModel(answer), root, evidence_gate_enabled=False)
    result = await agent.run("look at the project")
    assert result.ok
    assert all(str(root) not in m.text for m in seen)
    assert all(root.name not in m.text for m in seen)  # not even the folder's name
    task = next(m for m in seen if m.role == "user")
    assert task.text.startswith(ROOT_LINE) and "`.`" in SYSTEM_PROMPT


def test_the_task_is_read_back_from_its_message() -> None:
    assert (
        task_from_message(task_message("fix the bug\nin two lines")) == "fix the bug\nin two lines"
    )
    assert task_from_message("just text") == "just text"
