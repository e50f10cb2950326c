"""A refused tool call names the bad field and what it takes, never the whole schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.tools.argument_errors import explain
from xclaw.tools.base import Workspace
from xclaw.tools.exec import exec_tools
from xclaw.tools.fs import fs_tools
from xclaw.tools.registry import ToolRegistry


def refuse(tmp_path: Path, name: str, args: Any) -> ToolResult:
    box = ToolRegistry(fs_tools() + exec_tools()).bind(Workspace(tmp_path))
    result = box.prepare(ToolCallPart("c1", name, args))
    assert isinstance(result, ToolResult) and result.error_code == "TOOL_ARGUMENTS_INVALID"
    assert result.retryable and "nothing ran" in result.hint
    return result


def test_a_mistyped_field_names_its_expected_type(tmp_path: Path) -> None:
    result = refuse(tmp_path, "terminal.exec", {"program": "ls", "argv": "-la"})
    assert result.data == {"fields": [{"field": "argv", "expected": "array of strings"}]}
    assert "argv takes an array of strings" in result.hint


def test_a_bad_choice_lists_the_allowed_values(tmp_path: Path) -> None:
    result = refuse(tmp_path, "fs.write", {"path": "a", "content": "x", "mode": "append"})
    assert result.data == {
        "fields": [{"field": "mode", "expected": "string", "allowed": ["create", "overwrite"]}]
    }
    assert "mode takes a string, one of create, overwrite" in result.hint


def test_an_unknown_field_gets_the_fields_the_tool_takes(tmp_path: Path) -> None:
    result = refuse(tmp_path, "terminal.exec", {"program": "ls", "shell": True})
    assert result.data["fields"] == [{"field": "shell", "expected": None}]
    assert result.data["accepted"] == ["program", "argv", "cwd", "timeout_ms", "env", "stdin"]
    assert result.data["required"] == ["program"]
    assert "shell is not a field of this tool" in result.hint


def test_an_item_of_a_list_and_a_missing_field_are_named(tmp_path: Path) -> None:
    item = refuse(tmp_path, "terminal.exec", {"program": "echo", "argv": ["a", 3]})
    assert item.data["fields"] == [{"field": "argv.1", "expected": "string"}]
    missing = refuse(tmp_path, "fs.write", {})
    assert [f["field"] for f in missing.data["fields"]] == ["path", "content"]


def test_arguments_that_are_not_an_object(tmp_path: Path) -> None:
    result = refuse(tmp_path, "fs.read", [1])
    assert result.data == {
        "fields": [],
        "accepted": ["path", "start_line", "max_lines"],
        "required": ["path"],
    }


@pytest.mark.parametrize(
    "args", [{"program": "ls", "shell": True}, {"program": 3}, {"program": "ls", "argv": "x"}]
)
def test_the_refusal_is_compact(tmp_path: Path, args: dict[str, Any]) -> None:
    """The whole terminal.exec schema is 38 lines of JSON; a refusal is a few fields."""
    box = ToolRegistry(exec_tools()).bind(Workspace(tmp_path))
    tool = box.registry.get("terminal.exec")
    assert tool is not None
    result = refuse(tmp_path, "terminal.exec", args)
    whole = json.dumps(tool.spec.parameters, indent=1)
    assert len(whole.splitlines()) > 30
    compact = json.dumps(result.data, indent=1)
    assert len(compact) < len(whole) / 3
    assert "description" not in compact and "title" not in compact


def test_bounds_refs_and_optional_types() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 9},
            "who": {"$ref": "#/$defs/Who"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"Who": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}}},
    }
    data, takes = explain(schema, "n: Input should be less than or equal to 9")
    assert data == {"fields": [{"field": "n", "expected": "integer", "minimum": 1, "maximum": 9}]}
    assert takes == "n takes an integer (minimum 1, maximum 9)"
    data, _ = explain(schema, "who.kind: Input should be 'a' or 'b'; note: bad")
    assert data["fields"] == [
        {"field": "who.kind", "expected": "any value", "allowed": ["a", "b"]},
        {"field": "note", "expected": "string or null"},
    ]
