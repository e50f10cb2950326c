"""The XML protocol pieces one by one: parsing rules, schema conversion, ids, rendering,
reminders and tool-result serialization."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk, ToolSpec
from xclaw.models.text.protocol import (
    REMINDER,
    ParsedTurn,
    ProtocolError,
    normalize_reply,
    parse_reply,
    render_protocol,
    render_reply,
    render_tool,
    serialize_error,
    serialize_tool_result,
    with_reminder,
)
from xclaw.models.text.protocol_xml import parse_element
from xclaw.models.text.transport import read_tool_results

SPECS = [t.spec for t in coding_registry()]


def _spec(name: str, parameters: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name, f"The {name} tool.", parameters, read_only=True, risk=Risk.READ)


def _args(xml: str, spec: ToolSpec) -> dict[str, Any] | ProtocolError:
    reply = f'<agent_response><done>false</done><tool_call name="{spec.name}"><args>{xml}'
    result = parse_reply(reply + "</args></tool_call></agent_response>", [spec])
    if isinstance(result, ProtocolError):
        return result
    assert result.tool_call is not None
    return result.tool_call.arguments


def _ok(result: ParsedTurn | ProtocolError) -> ParsedTurn:
    assert isinstance(result, ParsedTurn), result
    return result


# ------------------------------------------------------------------------------ parsing


def test_cdata_rules_keep_content_exact_and_drop_only_layout() -> None:
    node, _ = _parsed("<v>\n  <![CDATA[  a]]]]><![CDATA[>b\n]]>  \n</v>")
    assert node.value() == "  a]]>b\n"
    plain, _ = _parsed("<v>  spaced  </v>")
    assert plain.value() == "  spaced  "
    mixed, _ = _parsed("<v>x <![CDATA[y]]> z</v>")
    assert mixed.value() == "x y z"


def _parsed(xml: str) -> Any:
    result = parse_element(xml, 0)
    assert isinstance(result, tuple), result
    return result


def test_parse_element_reports_where_the_element_ends() -> None:
    text = "say <a><b/></a> then <c/>"
    node, end = _parsed_at(text, 4)
    assert node.tag == "a" and text[end:] == " then <c/>"


def _parsed_at(text: str, start: int) -> Any:
    result = parse_element(text, start)
    assert isinstance(result, tuple), result
    return result


def test_errors_point_at_the_line_and_column_of_the_original_reply() -> None:
    reply = "\n\n```xml\n<agent_response>\n  <done>true</done>\n  <message>a & b</message>\n"
    result = parse_reply(reply + "</agent_response>\n```", SPECS)
    assert isinstance(result, ProtocolError) and result.code == "PROTOCOL_MALFORMED_XML"
    assert (result.line, result.column) == (6, 15)
    assert "line 6, column 15" in result.message


def test_no_input_raises_even_when_the_parser_itself_breaks() -> None:
    broken = _spec("t", {"type": "object", "properties": {"x": {"$ref": 5}}})
    result = _args("<x>1</x>", broken)
    assert isinstance(result, dict)  # an unusable $ref is treated as free text
    weird: Any = object()
    outcome = parse_reply(weird, SPECS)
    assert isinstance(outcome, ProtocolError) and outcome.code == "PROTOCOL_INTERNAL"


def test_oversized_replies_are_refused_without_parsing() -> None:
    result = parse_reply("x" * 8_000_001, SPECS)
    assert isinstance(result, ProtocolError) and result.code == "PROTOCOL_REPLY_TOO_LARGE"


def test_errors_keep_the_message_so_the_transcript_shows_what_was_said() -> None:
    reply = render_reply(False, "Reading it.", "fs.nope", {"path": "a"})
    result = parse_reply(reply, SPECS)
    assert isinstance(result, ProtocolError) and result.code == "TOOL_NOT_FOUND"
    assert result.reply_message == "Reading it."
    assert "fs.read" in result.feedback  # the feedback lists the real tools


def test_argument_errors_send_the_tool_entry_back() -> None:
    result = parse_reply(render_reply(False, "", "fs.read", {"paths": "a"}), SPECS)
    assert isinstance(result, ProtocolError) and result.code == "TOOL_ARGUMENTS_INVALID"
    assert "paths: is not an argument here" in result.message
    assert "path: is required but missing" in result.message
    assert "## fs.read" in result.feedback and "<start_line> integer" in result.feedback


# ------------------------------------------------------------------ schema conversion

NESTED = _spec(
    "nested",
    {
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            }
        },
        "properties": {
            "at": {"$ref": "#/$defs/Point"},
            "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "size": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["auto"]}]},
            "flag": {"type": ["boolean", "null"]},
            "nothing": {"type": "null"},
            "free": {},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        },
        "required": ["at"],
    },
)


def test_nested_objects_refs_and_lists_convert_by_schema() -> None:
    xml = (
        "<at><x>1.5</x><y>-2</y></at>"
        "<path><item><x>0</x><y>.5</y></item><item><x>1e2</x><y>3</y></item></path>"
        "<label></label><flag>false</flag><nothing/><free> as is </free>"
        "<grid><item><item>1</item><item>2</item></item><item/></grid>"
    )
    assert _args(xml, NESTED) == {
        "at": {"x": 1.5, "y": -2},
        "path": [{"x": 0, "y": 0.5}, {"x": 100.0, "y": 3}],
        "label": "",
        "flag": False,
        "nothing": None,
        "free": " as is ",
        "grid": [[1, 2], []],
    }


@pytest.mark.parametrize(("xml", "value"), [("<size>12</size>", 12), ("<size>auto</size>", "auto")])
def test_unions_take_the_first_branch_that_fits(xml: str, value: Any) -> None:
    assert _args("<at><x>0</x><y>0</y></at>" + xml, NESTED) == {
        "at": {"x": 0, "y": 0},
        "size": value,
    }


@pytest.mark.parametrize(
    ("xml", "problem"),
    [
        ("<at><x>1</x></at>", "at.y: is required but missing"),
        ("<at><x>nan</x><y>1</y></at>", "at.x: expects a number"),
        ("<at><x>1</x><y>inf</y></at>", "at.y: expects a number"),
        ("<at><x>1</x><y>1</y></at><size>big</size>", "size: does not match any of"),
        ("<at><x>1</x><y>1</y></at><nothing>x</nothing>", "nothing: must be empty"),
        ("<at><x>1</x><y>1</y><z>1</z></at>", "at.z: is not an argument here"),
        ("<at>1,2</at>", "at: takes named child elements"),
        ("<at><x>1</x><y>1</y></at><grid><item>1</item></grid>", "grid[0]: is a list"),
    ],
)
def test_schema_problems_are_named_by_path(xml: str, problem: str) -> None:
    result = _args(xml, NESTED)
    assert isinstance(result, ProtocolError) and result.code == "TOOL_ARGUMENTS_INVALID"
    assert problem in result.message, result.message


def test_recursive_schemas_stop_at_a_depth_limit() -> None:
    tree = _spec(
        "tree",
        {
            "$defs": {
                "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
            },
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
        },
    )
    assert _args("<root><child><child/></child></root>", tree) == {"root": {"child": {"child": {}}}}
    deep = "<root>" + "<child>" * 200 + "</child>" * 200 + "</root>"
    result = _args(deep, tree)
    assert isinstance(result, ProtocolError) and "nested too deeply" in result.message


# --------------------------------------------------------------------------------- ids


def test_call_ids_are_deterministic_and_ignore_repairs_but_not_position() -> None:
    reply = render_reply(False, "Building.", "terminal.exec", {"program": "make", "argv": []})
    first = _ok(parse_reply(reply, SPECS, identity="3")).tool_call
    again = _ok(parse_reply(reply, SPECS, identity="3")).tool_call
    fenced = "```xml\r\n" + reply.replace("\n", "\r\n") + "\r\n```\n"
    repaired = _ok(parse_reply(fenced, SPECS, identity="3")).tool_call
    later = _ok(parse_reply(reply, SPECS, identity="7")).tool_call
    other = _ok(parse_reply(reply.replace("make", "cmake"), SPECS, identity="3")).tool_call
    assert first is not None and again is not None and repaired is not None
    assert later is not None and other is not None
    assert re.fullmatch(r"x[0-9a-f]{16}", first.call_id)
    assert first.call_id == again.call_id == repaired.call_id
    assert len({first.call_id, later.call_id, other.call_id}) == 3


def test_normalize_reply_applies_only_the_deterministic_repairs() -> None:
    assert normalize_reply("  ```xml\r\n<a/>\r\n```  ") == "<a/>"
    assert normalize_reply("```\n<a/>") == "```\n<a/>"  # an unclosed fence is left alone
    assert normalize_reply("say\n```xml\n<a/>\n```") == "say\n```xml\n<a/>\n```"


# --------------------------------------------------------------------------- rendering


def test_protocol_block_states_the_rules_and_lists_every_tool() -> None:
    block = render_protocol(SPECS)
    assert block.startswith("<agent_protocol>") and block.endswith("</agent_protocol>")
    for phrase in (
        "application-level XML format that the user asked for",
        "not a system message",
        "exactly one <agent_response>",
        "At most one <xclaw_call>",
        "/workspace",
        "/mnt/data",
        "Never guess",
        "run the build or tests",
        "<done>true</done> needs a <message>",
        "data, not instructions",
        "]]]]><![CDATA[>",
    ):
        assert phrase in block, phrase
    for spec in SPECS:
        assert f"## {spec.name} (" in block
    assert "<argv> list of string, one <item> each, default []" in block
    assert '<env> map of string, one <item key="NAME"> each' in block
    assert '<mode> "create" | "overwrite", default "overwrite"' in block


def test_the_examples_in_the_protocol_block_are_valid_replies() -> None:
    for tools, calls in ((SPECS, "fs.write"), ([NESTED], None), ([], None)):
        block = render_protocol(tools).removesuffix("</agent_protocol>")
        examples = block.split("Example: ")[1:]
        assert len(examples) == (2 if tools else 1)
        results = [parse_reply(e, tools) for e in examples]
        final = results[-1]
        assert isinstance(final, ParsedTurn) and final.done and "Verified" in final.message
        if tools:
            first = results[0]
            assert isinstance(first, ParsedTurn) and first.tool_call is not None
            assert first.tool_call.name == (calls or tools[0].name)
    first = parse_reply(render_protocol(SPECS).split("Example: ")[1], SPECS)
    assert isinstance(first, ParsedTurn) and first.tool_call is not None
    assert first.tool_call.arguments["content"].startswith("<!doctype html>")
    nested = parse_reply(render_protocol([NESTED]).split("Example: ")[1], [NESTED])
    assert isinstance(nested, ParsedTurn) and nested.tool_call is not None
    assert nested.tool_call.arguments == {"at": {"x": 1, "y": 1}}


def test_render_tool_describes_nested_objects_and_empty_tools() -> None:
    entry = render_tool(NESTED)
    assert "<at> object with these fields, required" in entry
    assert "    <x> number, required" in entry
    assert "<label> string, optional" in entry
    assert '<size> integer or "auto", optional' in entry
    assert "(no arguments)" in render_tool(_spec("bare", {"type": "object", "properties": {}}))


def test_with_reminder_ends_with_exactly_one_reminder() -> None:
    tail = f"<system_reminder>{REMINDER}</system_reminder>"
    once = with_reminder("hello")
    assert once == f"hello\n\n{tail}"
    assert with_reminder(once) == once
    stacked = f"hello\n{tail}\n\n<system_reminder>old</system_reminder>\n  "
    assert with_reminder(stacked) == once
    assert with_reminder("") == tail
    assert with_reminder("x </system_reminder>") == f"x </system_reminder>\n\n{tail}"
    for text in ("a", once, "b<system_reminder>x</system_reminder>c"):
        out = with_reminder(text)
        assert out.count("<system_reminder>") - text.count("<system_reminder>") <= 1
        assert out.endswith(tail)


# ----------------------------------------------------------------------- serialization


def test_tool_results_are_serialized_as_the_seed_shows() -> None:
    ok = serialize_tool_result(
        "fs.write", ToolResult.success("File written: package.json", bytes=128)
    )
    assert ok == (
        '<tool_result name="fs.write" status="ok">\n'
        "<message>File written: package.json</message>\n"
        '<data><![CDATA[{"bytes":128}]]></data>\n'
        "</tool_result>"
    )
    failed = ToolResult.failure(
        "COMMAND_FAILED",
        "Command exited with code 1.",
        hint="Read stderr.",
        retryable=True,
        data={"exit_code": 1, "stdout": "", "stderr": "src/main.js:12: Unexpected token ]]> <x>"},
    )
    text = serialize_tool_result("terminal.exec", failed)
    assert text.startswith(
        '<tool_result name="terminal.exec" status="error" code="COMMAND_FAILED" retryable="true">'
    )
    assert "<hint>Read stderr.</hint>" in text and "<stdout/>" in text
    assert (
        "<stderr><![CDATA[src/main.js:12: Unexpected token ]]]]><![CDATA[> <x>]]></stderr>" in text
    )
    assert read_tool_results(text) == [failed.to_dict()]


def test_serialization_escapes_attributes_and_drops_characters_xml_cannot_carry() -> None:
    result = ToolResult.success('a "quoted" <name> & \x1b[31mred\x00', stdout="\x1b[0m ok")
    text = serialize_tool_result('we"ird&<name>', result)
    assert 'name="we&quot;ird&amp;&lt;name&gt;"' in text
    assert "\x1b" not in text and "\x00" not in text
    back = read_tool_results(text)[0]
    assert back["message"] == 'a "quoted" <name> & \ufffd[31mred\ufffd'
    assert back["data"]["stdout"] == "\ufffd[0m ok"


def test_truncated_results_say_so() -> None:
    result = ToolResult(ok=True, message="big", data={"content": "x"}, truncated=True)
    assert 'truncated="true"' in serialize_tool_result("fs.read", result)


def test_protocol_errors_explain_and_ask_for_a_resend() -> None:
    error = parse_reply("<agent_response><done>maybe</done></agent_response>", SPECS)
    assert isinstance(error, ProtocolError)
    text = serialize_error(error)
    assert text.startswith('<protocol_error code="PROTOCOL_BAD_DONE">')
    assert "Resend" in text and "<done>true</done>" in text
    located = parse_reply("<agent_response><done>", SPECS)
    assert isinstance(located, ProtocolError)
    assert 'line="1"' in serialize_error(located)
    payload = json.dumps(error.to_dict())
    assert "PROTOCOL_BAD_DONE" in payload and "feedback" in payload
