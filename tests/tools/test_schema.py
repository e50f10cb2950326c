"""The schemas derived for the file, search and project tools, and the validation they drive."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall, Risk
from xclaw.tools.base import Tool, ToolContext, Workspace
from xclaw.tools.fs import fs_tools
from xclaw.tools.project import project_tools
from xclaw.tools.registry import ToolRegistry

TOOLS = fs_tools() + project_tools()

REQUIRED = {
    "fs.list": [],
    "fs.read": ["path"],
    "fs.write": ["path", "content"],
    "fs.edit": ["path", "old_text", "new_text"],
    "fs.search": ["pattern"],
    "project.status": [],
}

RISK = {
    "fs.list": Risk.READ,
    "fs.read": Risk.READ,
    "fs.write": Risk.WRITE,
    "fs.edit": Risk.WRITE,
    "fs.search": Risk.READ,
    "project.status": Risk.READ,
}


def test_the_tool_set() -> None:
    assert [t.name for t in TOOLS] == list(REQUIRED)
    assert {t.name: t.risk for t in TOOLS} == RISK
    assert {t.name for t in TOOLS if t.read_only} == {
        "fs.list",
        "fs.read",
        "fs.search",
        "project.status",
    }


@pytest.mark.parametrize("t", TOOLS, ids=lambda t: t.name)
def test_schema_is_strict_and_documented(t: Tool) -> None:
    schema = t.spec.parameters
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    params = list(inspect.signature(t.fn).parameters.values())
    assert params[0].annotation in (ToolContext, "ToolContext") and t.wants_context
    visible = params[1:]
    without_default = [p.name for p in visible if p.default is inspect.Parameter.empty]
    assert schema.get("required", []) == without_default == REQUIRED[t.name]
    assert list(schema.get("properties", {})) == [p.name for p in visible]
    assert "ctx" not in schema.get("properties", {})
    for name, prop in schema.get("properties", {}).items():
        assert prop.get("description"), f"{t.name}.{name} has no description"
    assert t.description and not t.description.startswith(t.name)


def test_limits_are_in_the_schema() -> None:
    props = {t.name: t.spec.parameters.get("properties", {}) for t in TOOLS}
    assert (props["fs.list"]["depth"]["minimum"], props["fs.list"]["depth"]["maximum"]) == (1, 10)
    assert props["fs.list"]["max_entries"]["maximum"] == 5000
    assert props["fs.read"]["start_line"]["minimum"] == 1
    assert props["fs.write"]["mode"]["enum"] == ["create", "overwrite"]
    assert props["fs.edit"]["old_text"]["minLength"] == 1
    assert props["fs.search"]["max_results"]["maximum"] == 1000


BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("fs.list", {"path": ".", "recursive": True}),
    ("fs.list", {"depth": 0}),
    ("fs.list", {"depth": 11}),
    ("fs.list", {"max_entries": 5001}),
    ("fs.list", {"depth": "2"}),
    ("fs.read", {}),
    ("fs.read", {"path": 7}),
    ("fs.read", {"path": "f.txt", "start_line": 0}),
    ("fs.read", {"path": "f.txt", "max_lines": 2.5}),
    ("fs.read", {"path": "f.txt", "offset": 3}),
    ("fs.write", {"path": "new.txt"}),
    ("fs.write", {"content": "x"}),
    ("fs.write", {"path": "new.txt", "content": ["x"]}),
    ("fs.write", {"path": "new.txt", "content": "x", "mode": "append"}),
    ("fs.write", {"path": "new.txt", "content": "x", "overwrite": True}),
    ("fs.write", {"path": None, "content": "x"}),
    ("fs.edit", {"path": "f.txt", "old_text": "a"}),
    ("fs.edit", {"path": "f.txt", "old_text": "", "new_text": "b"}),
    ("fs.edit", {"path": "f.txt", "old_text": "a", "new_text": 1}),
    ("fs.edit", {"path": "f.txt", "old": "a", "new": "b"}),
    ("fs.search", {}),
    ("fs.search", {"pattern": "x", "regex": "yes"}),
    ("fs.search", {"pattern": "x", "max_results": 0}),
    ("fs.search", {"pattern": "x", "glob": 3}),
    ("project.status", {"verbose": True}),
]


@pytest.mark.parametrize(("name", "args"), BAD_CALLS)
async def test_bad_arguments_are_refused_before_anything_runs(
    root: Path, name: str, args: dict[str, Any]
) -> None:
    (root / "f.txt").write_text("a\n")
    before = snapshot(root)
    box = ToolRegistry(TOOLS).bind(Workspace(root))
    result = box.prepare(ToolCallPart("call_1", name, args))
    assert isinstance(result, ToolResult)
    assert (result.ok, result.error_code, result.retryable) == (
        False,
        "TOOL_ARGUMENTS_INVALID",
        True,
    )
    t = box.registry.get(name)
    assert t is not None
    # The refusal names each bad field, not the whole schema: a field the tool takes comes
    # with its expected type (and allowed values), an unknown one with the fields it takes.
    fields = result.data["fields"]
    assert fields and "schema" not in result.data
    properties = t.spec.parameters["properties"]
    for entry in fields:
        top = entry["field"].split(".")[0]
        assert top in result.message
        if top in properties:
            assert isinstance(entry["expected"], str) and entry["expected"] in result.hint
            if "enum" in properties[top]:
                assert entry["allowed"] == properties[top]["enum"]
        else:
            assert entry["expected"] is None
            assert result.data["accepted"] == list(properties)
    assert snapshot(root) == before
    assert box.workspace.read_stamps == {} and box.workspace.changed_files == []


async def test_good_arguments_prepare_and_run(root: Path) -> None:
    """The control case: the same registry accepts well-formed calls and they take effect."""
    box = ToolRegistry(TOOLS).bind(Workspace(root))
    prepared = box.prepare(
        ToolCallPart("call_1", "fs.write", {"path": "new.txt", "content": "x", "mode": "create"})
    )
    assert isinstance(prepared, PreparedCall)
    assert prepared.access.writes == ("new.txt",) and prepared.access.reads == ()
    assert (await box.execute(prepared, lambda _s, _t: None)).ok
    assert (root / "new.txt").read_text() == "x"
    read = box.prepare(ToolCallPart("call_2", "fs.read", {"path": "new.txt"}))
    assert isinstance(read, PreparedCall) and read.access.reads == ("new.txt",)


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        p.relative_to(root).as_posix(): (
            p.stat().st_mtime_ns,
            p.read_bytes() if p.is_file() else b"",
        )
        for p in sorted(root.rglob("*"))
    }
