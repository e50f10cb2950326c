"""What the web model is sent never holds the absolute project root (issue 23, item 4).

A scripted run calls the tools whose output names the root on its own (a traceback, ``pwd``,
a started process's ``cwd``, ``project.status``) and a call that names it itself. Every text
the model receives is checked: through the XML protocol as the ChatGPT page gets it (what
``ChatGPTWebTransport.send`` would type), and as a native model's requests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xclaw import Agent, FunctionModel, ModelTurn
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import ModelRequest
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol_render import render_reply
from xclaw.models.text.transport import ScriptedTransport

APP = "import os\nprint('cwd', os.getcwd())\nraise SystemExit(open('missing.txt').read())\n"


def _calls(root: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("fs.write", {"path": "app.py", "content": APP}),
        ("terminal.exec", {"program": "python3", "argv": ["app.py"]}),  # traceback, cwd
        ("terminal.exec", {"program": "pwd"}),
        ("process.start", {"program": "python3", "argv": ["-c", "print(1)"]}),  # exits: cwd
        ("process.list", {}),
        ("project.status", {}),
        ("fs.read", {"path": str(root / "app.py")}),  # the model names the root itself
    ]


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "shop-site-9"
    root.mkdir()
    return root


def _hidden(root: Path, texts: Sequence[str]) -> None:
    for text in texts:
        assert str(root) not in text
        assert root.name not in text  # not even the folder's name
    joined = "\n".join(texts).replace('\\"', '"')  # JSON-escaped quotes read as quotes
    assert 'File "app.py", line 3' in joined  # the traceback is still there, relative
    assert "cwd ." in joined and '"cwd":"."' in joined.replace(" ", "")


async def test_the_web_page_is_never_sent_the_absolute_root(tmp_path: Path) -> None:
    root = _project(tmp_path)
    replies = [render_reply(False, "next", name, args) for name, args in _calls(root)]
    transport = ScriptedTransport([*replies, render_reply(True, "Done.")])
    agent = Agent(TextProtocolModel(transport), root, approval="allow", evidence_gate_enabled=False)
    result = await agent.run("inspect the project")
    assert result.ok and transport.position == len(transport.replies)
    _hidden(root, transport.sent)
    assert (root / "app.py").read_text() == APP


async def test_a_native_model_is_never_sent_the_absolute_root(tmp_path: Path) -> None:
    root = _project(tmp_path)
    script = _calls(root)
    requests: list[list[Message]] = []

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        requests.append(list(messages))
        step = len(requests) - 1
        if step == len(script):
            return ModelTurn(text="Done.")
        name, args = script[step]
        return ModelTurn(tool_calls=(ToolCallPart(f"c{step}", name, args),))

    agent = Agent(FunctionModel(answer), root, approval="allow", evidence_gate_enabled=False)
    result = await agent.run("inspect the project")
    assert result.ok and len(requests) == len(script) + 1
    _hidden(root, [_as_text(m) for m in requests[-1]])
    # The run's own record keeps the real paths; only what the model is sent changed.
    assert any(str(root) in _as_text(m) for m in result.messages)


def _as_text(message: Message) -> str:
    parts = [message.text]
    parts += [json.dumps(c.arguments) for c in message.tool_calls]
    parts += [json.dumps(r.result.to_dict()) for r in message.tool_results]
    return "\n".join(parts)
