"""Properties of the XML protocol, checked with hypothesis:

- no input makes ``parse_reply`` raise: arbitrary text, and near-valid XML built from
  protocol fragments with random damage;
- what ``render_reply`` writes parses back to exactly the same arguments and message;
- a ``<tool_result>`` reads back to the ``ToolResult`` it was written from.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import ToolResult
from xclaw.models.text.protocol import (
    ParsedTurn,
    ProtocolError,
    parse_reply,
    render_reply,
    serialize_tool_result,
)
from xclaw.models.text.transport import read_tool_results

SPECS = [t.spec for t in coding_registry()]
NAMES = [s.name for s in SPECS]
CHECK = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Characters XML 1.0 can carry (surrogates and most C0 controls cannot, even as references).
xml_chars = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters=[chr(c) for c in range(32) if chr(c) not in "\t\n\r"]
    + ["\ufffe", "\uffff"],
)
xml_text = st.text(xml_chars, max_size=40) | st.sampled_from(
    ["]]>", "]]]]><![CDATA[>", "</content>", "<![CDATA[", "&amp;", " lead", "trail ", "\r\n", ""]
)


def _assert_total(text: str) -> None:
    result = parse_reply(text, SPECS)
    assert isinstance(result, ParsedTurn | ProtocolError)
    if isinstance(result, ProtocolError):
        assert result.code and result.message and result.feedback


@CHECK
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    _assert_total(text)


@CHECK
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_text_never_raise(data: bytes) -> None:
    _assert_total(data.decode("latin-1"))
    _assert_total("<agent_response>" + data.decode("utf-8", "surrogateescape"))


FRAGMENTS = [
    "<agent_response>",
    "</agent_response>",
    "<agent_response/>",
    "<done>true</done>",
    "<done>false</done>",
    "<done>",
    "</done>",
    "<message>",
    "</message>",
    "<message>hi</message>",
    "<args>",
    "</args>",
    "<args/>",
    "</tool_call>",
    "<item>",
    "</item>",
    "<path>a.txt</path>",
    "<content>",
    "</content>",
    "<argv>",
    "</argv>",
    "<![CDATA[",
    "]]>",
    "]]]]><![CDATA[>",
    "<!DOCTYPE x>",
    '<!ENTITY e "x">',
    "&e;",
    "&amp;",
    "&#0;",
    "&#x10FFFF;",
    "<?pi?>",
    '<?xml version="1.0"?>',
    "<!-- c -->",
    "```xml\n",
    "\n```",
    "\r\n",
    " ",
    "<",
    ">",
    "&",
    '"',
    "<x:y>",
    'xmlns="urn:x"',
]


@st.composite
def near_valid(draw: st.DrawFn) -> str:
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            pieces.append(draw(st.sampled_from(FRAGMENTS)))
        elif kind == 1:
            name = draw(st.sampled_from([*NAMES, "nope", "", "fs.read\x00"]))
            pieces.append(f'<tool_call name="{name}">')
        elif kind == 2:
            pieces.append(draw(xml_text))
        else:
            tag = draw(st.sampled_from(["path", "argv", "env", "program", "mode", "item", "x"]))
            pieces.append(f"<{tag}>{draw(xml_text)}</{tag}>")
    return "".join(pieces)


@CHECK
@given(near_valid())
def test_near_valid_xml_never_raises(text: str) -> None:
    _assert_total(text)


@CHECK
@given(near_valid(), st.integers(0, 400))
def test_damaged_valid_replies_never_raise(noise: str, cut: int) -> None:
    reply = render_reply(False, "m", "terminal.exec", {"program": "p", "argv": ["a", "b"]})
    _assert_total(reply[:cut] + noise + reply[cut:])
    _assert_total(reply[:cut])


env_keys = st.text(xml_chars, min_size=1, max_size=12)
exec_args = st.fixed_dictionaries(
    {"program": xml_text},
    optional={
        "argv": st.lists(xml_text, max_size=5),
        "cwd": xml_text,
        "timeout_ms": st.integers(-(10**12), 10**12),
        "env": st.dictionaries(env_keys, xml_text, max_size=4),
        "stdin": xml_text,
    },
)
write_args = st.fixed_dictionaries(
    {"path": xml_text, "content": xml_text},
    optional={"mode": st.sampled_from(["create", "overwrite"])},
)
search_args = st.fixed_dictionaries(
    {"pattern": xml_text},
    optional={"regex": st.booleans(), "max_results": st.integers(1, 1000)},
)


@CHECK
@given(
    st.one_of(
        st.tuples(st.just("terminal.exec"), exec_args),
        st.tuples(st.just("fs.write"), write_args),
        st.tuples(st.just("fs.search"), search_args),
    ),
    xml_text,
    st.sampled_from(["", "```xml\n", "Sure:\n"]),
)
def test_rendered_replies_parse_back_exactly(
    call: tuple[str, dict[str, Any]], message: str, wrapper: str
) -> None:
    name, arguments = call
    text = render_reply(False, message, name, arguments)
    if wrapper == "```xml\n":
        text = f"{wrapper}{text}\n```"
    else:
        text = wrapper + text
    result = parse_reply(text, SPECS)
    assert isinstance(result, ParsedTurn), result
    assert result.tool_call is not None
    assert result.tool_call.name == name
    assert result.tool_call.arguments == arguments
    assert result.message == message.strip()


@CHECK
@given(
    st.booleans(),
    xml_text,
    st.dictionaries(
        st.text(xml_chars, min_size=1, max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | xml_text,
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(xml_chars, max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    ),
    st.one_of(st.none(), xml_text),
    xml_text,
)
def test_tool_results_read_back_to_what_was_written(
    ok: bool, message: str, data: dict[str, Any], stdout: str | None, hint: str
) -> None:
    if stdout is not None:
        data = {**data, "stdout": stdout}
    if ok:
        result = ToolResult(ok=True, message=message, data=data)
    else:
        result = ToolResult.failure("SOME_CODE", message, hint=hint, data=data, retryable=True)
    text = serialize_tool_result("fs.read", result)
    expected = result.to_dict()
    # Message and hint are exact (a carriage return is written &#13;); stdout is CDATA, where
    # any XML reader turns line ends into \n.
    if stdout is not None:
        expected["data"]["stdout"] = stdout.replace("\r\n", "\n").replace("\r", "\n")
    assert read_tool_results(text) == [expected]
