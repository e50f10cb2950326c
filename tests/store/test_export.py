"""Session exports read back by strict readers written from each format's documentation.

The readers below are the check: pydantic models with ``extra="forbid"`` and strict types for
every shape the format defines (Codex ``RolloutLine`` / ``SessionMeta`` / ``ResponseItem``;
Claude Code transcript entries and Anthropic content blocks), plus the cross-line rules
(call ids answered after they are made, a linear ``parentUuid`` chain, one ``sessionId``).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from xclaw.core.errors import ConfigError
from xclaw.core.messages import (
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.export import FORMATS, export_session
from xclaw.store.transcript import message_to_items

# --------------------------------------------------------------------------- strict readers

_ISO_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def _iso_time(value: str) -> str:
    assert _ISO_MS.fullmatch(value), f"not ISO-8601 UTC with milliseconds: {value!r}"
    assert datetime.fromisoformat(value).tzinfo is not None
    return value


def _uuid(value: str) -> str:
    assert str(uuid.UUID(value)) == value, f"not a canonical UUID: {value!r}"
    return value


IsoTime = Annotated[str, AfterValidator(_iso_time)]
Uuid = Annotated[str, AfterValidator(_uuid)]
WireName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
ToolUseId = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]+$")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# Codex: codex-rs/protocol/src/protocol.rs and models.rs (openai/codex).
class CodexSessionMeta(Strict):
    id: Uuid
    forked_from_id: Uuid | None = None
    timestamp: IsoTime
    cwd: str
    originator: str
    cli_version: str
    instructions: str | None = None  # older rollouts
    source: Literal["cli", "vscode", "exec", "mcp", "unknown"] | dict[str, Any] = "vscode"
    agent_nickname: str | None = None
    agent_role: str | None = None
    agent_path: str | None = None
    model_provider: str | None = None
    base_instructions: dict[str, Any] | None = None
    dynamic_tools: list[Any] | None = None
    memory_mode: str | None = None
    git: dict[str, str] | None = None


class InputText(Strict):
    type: Literal["input_text"]
    text: str


class OutputText(Strict):
    type: Literal["output_text"]
    text: str


class InputImage(Strict):
    type: Literal["input_image"]
    image_url: str
    detail: str | None = None


CodexContent = Annotated[InputText | OutputText | InputImage, Field(discriminator="type")]


class CodexMessage(Strict):
    type: Literal["message"]
    role: Literal["user", "assistant", "developer", "system"]
    content: list[CodexContent]
    end_turn: bool | None = None
    phase: str | None = None


class CodexFunctionCall(Strict):
    type: Literal["function_call"]
    name: WireName
    arguments: str  # a JSON object, as text
    call_id: str


class CodexFunctionCallOutput(Strict):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[Annotated[InputText | InputImage, Field(discriminator="type")]]


CodexItem = Annotated[
    CodexMessage | CodexFunctionCall | CodexFunctionCallOutput, Field(discriminator="type")
]


class CodexLine(Strict):
    timestamp: IsoTime
    type: Literal["session_meta", "response_item", "compacted", "turn_context", "event_msg"]
    payload: dict[str, Any]


# EventMsg (protocol.rs, serde tag "type", snake_case): UserMessageEvent, AgentMessageEvent.
class CodexUserMessage(Strict):
    type: Literal["user_message"]
    message: str
    images: list[str] | None = None
    local_images: list[str] = []
    text_elements: list[Any] = []


class CodexAgentMessage(Strict):
    type: Literal["agent_message"]
    message: str
    phase: str | None = None


CodexEvent = Annotated[CodexUserMessage | CodexAgentMessage, Field(discriminator="type")]


def codex_events(lines: list[str]) -> list[CodexUserMessage | CodexAgentMessage]:
    parsed = [CodexLine.model_validate_json(line) for line in lines]
    return [
        TypeAdapter(CodexEvent).validate_python(line.payload)
        for line in parsed
        if line.type == "event_msg"
    ]


def codex_picker_lists(lines: list[str]) -> tuple[bool, str | None]:
    """Whether ``codex resume``'s picker lists the rollout, and the first user message it
    shows: codex-rs/rollout/src/list.rs ``read_head_summary`` + ``build_thread_item``. Lines
    are read from the top (10, or up to 200 more once a meta is seen without a user event);
    one that is not a valid ``RolloutLine`` is skipped; it is listed when a session meta and
    an ``EventMsg::UserMessage`` were both seen."""
    saw_meta, saw_user, first_user = False, False, None
    scanned = 0
    rest = iter(lines)
    while scanned < 10 or (saw_meta and not saw_user and scanned < 210):
        line = next(rest, None)
        if line is None:
            break
        if not line.strip():
            continue
        scanned += 1
        try:
            parsed = CodexLine.model_validate_json(line)
            if parsed.type == "session_meta":
                CodexSessionMeta.model_validate(parsed.payload)
                saw_meta = True
            elif parsed.type == "event_msg" and parsed.payload.get("type") == "user_message":
                event = CodexUserMessage.model_validate(parsed.payload)
                saw_user = True
                first_user = first_user or event.message.strip() or None
        except ValueError:  # serde: not a RolloutLine, skipped
            continue
        if saw_meta and saw_user:
            break
    return saw_meta and saw_user, first_user


def read_codex(lines: list[str]) -> tuple[CodexSessionMeta, list[CodexItem]]:
    parsed = [CodexLine.model_validate_json(line) for line in lines]
    assert parsed and parsed[0].type == "session_meta"
    meta = CodexSessionMeta.model_validate(parsed[0].payload)
    items: list[CodexItem] = []
    called: set[str] = set()
    for line in parsed[1:]:
        if line.type == "event_msg":
            event = TypeAdapter(CodexEvent).validate_python(line.payload)
            # Codex writes an event beside its message: the same text, the matching role.
            before = items[-1] if items else None
            if isinstance(before, CodexMessage) and before.role == (
                "user" if event.type == "user_message" else "assistant"
            ):
                assert event.message == "".join(
                    p.text for p in before.content if not isinstance(p, InputImage)
                )
            else:  # only the task standing in for a transcript with no user text
                assert event.type == "user_message" and line is parsed[1]
            continue
        assert line.type == "response_item"
        item = TypeAdapter(CodexItem).validate_python(line.payload)
        if isinstance(item, CodexMessage):
            want = "output_text" if item.role == "assistant" else "input_text"
            assert all(part.type in (want, "input_image") for part in item.content)
        elif isinstance(item, CodexFunctionCall):
            assert isinstance(json.loads(item.arguments), dict)
            called.add(item.call_id)
        else:
            assert item.call_id in called, f"output for unknown call {item.call_id}"
        items.append(item)
    return meta, items


# Claude Code: ~/.claude/projects/<dir>/<session>.jsonl, Anthropic Messages content blocks.
class TextBlock(Strict):
    type: Literal["text"]
    text: str


class ToolUseBlock(Strict):
    type: Literal["tool_use"]
    id: ToolUseId
    name: WireName
    input: dict[str, Any]


class ToolResultBlock(Strict):
    type: Literal["tool_result"]
    tool_use_id: ToolUseId
    content: str | list[TextBlock]
    is_error: bool | None = None


class Usage(Strict):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    service_tier: str | None = None


class AssistantMessage(Strict):
    id: Annotated[str, StringConstraints(pattern=r"^msg_[A-Za-z0-9]+$")]
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[Annotated[TextBlock | ToolUseBlock, Field(discriminator="type")]]
    stop_reason: Literal["end_turn", "tool_use", "max_tokens", "stop_sequence"] | None
    stop_sequence: str | None
    usage: Usage


class UserMessage(Strict):
    role: Literal["user"]
    content: str | list[Annotated[TextBlock | ToolResultBlock, Field(discriminator="type")]]


class EntryBase(Strict):
    parentUuid: Uuid | None  # noqa: N815 - the format's own names
    isSidechain: bool  # noqa: N815
    userType: Literal["external"]  # noqa: N815
    cwd: str
    sessionId: Uuid  # noqa: N815
    version: str
    uuid: Uuid
    timestamp: IsoTime
    gitBranch: str | None = None  # noqa: N815


class UserEntry(EntryBase):
    type: Literal["user"]
    message: UserMessage
    toolUseResult: str | dict[str, Any] | list[Any] | None = None  # noqa: N815


class AssistantEntry(EntryBase):
    type: Literal["assistant"]
    message: AssistantMessage
    requestId: str | None = None  # noqa: N815


ClaudeEntry = Annotated[UserEntry | AssistantEntry, Field(discriminator="type")]


def read_claude_code(lines: list[str]) -> list[UserEntry | AssistantEntry]:
    entries = [TypeAdapter(ClaudeEntry).validate_json(line) for line in lines]
    assert entries
    assert len({e.sessionId for e in entries}) == 1
    assert len({e.uuid for e in entries}) == len(entries)
    parent: str | None = None
    tool_uses: set[str] = set()
    for entry in entries:
        assert entry.parentUuid == parent, "the uuid chain must be linear and complete"
        parent = entry.uuid
        if isinstance(entry, AssistantEntry):
            for block in entry.message.content:
                if isinstance(block, ToolUseBlock):
                    assert block.id not in tool_uses, f"tool_use id {block.id} reused"
                    tool_uses.add(block.id)
        elif isinstance(entry.message.content, list):
            for user_block in entry.message.content:
                if isinstance(user_block, ToolResultBlock):
                    assert user_block.tool_use_id in tool_uses
    return entries


# --------------------------------------------------------------------------- sessions

SYSTEM_PROMPT = "You are xclaw-SYSTEM-PROMPT-MARKER, a careful coding agent."
TOOL_DESCRIPTION = "Read a file TOOL-CATALOGUE-MARKER"
T0 = 1735787045.123


def make_session(task: str, *, sid: str = "20250102-030405-a1b2c3") -> SessionRecord:
    return SessionRecord(
        id=sid,
        root="/home/dev/calc",
        task=task,
        model="openai:gpt-5",
        state="success",
        created_at=T0,
        updated_at=T0 + 60,
        meta={
            "system_prompt": SYSTEM_PROMPT,
            "tools": [{"name": "fs.read", "description": TOOL_DESCRIPTION}],
            "settings": {"mode": "auto"},
        },
    )


def to_items(messages: list[Message]) -> list[TranscriptItem]:
    items: list[TranscriptItem] = []
    for turn, msg in enumerate(messages):
        for payload in message_to_items(msg):
            seq = len(items) + 1
            items.append(TranscriptItem(seq, f"s{turn + 1:04d}", turn, payload, T0 + seq))
    return items


def assistant(*parts: Part) -> Message:
    return Message("assistant", parts)


def results(*parts: ToolResultPart) -> Message:
    return Message("tool", parts)


TASK = "The test for add() fails in calc.py; fix it."


def realistic_messages(task: str = TASK) -> list[Message]:
    return [
        Message.user(task),
        assistant(
            ReasoningPart("Read calc.py first.", provider="anthropic", signature="SIG-OPAQUE-42"),
            TextPart("Let me look at the code and run the tests."),
            ToolCallPart("call_1", "fs.read", {"path": "calc.py"}),
            ToolCallPart("call_2", "terminal.exec", {"argv": ["pytest", "-q"]}),
        ),
        results(
            ToolResultPart(
                "call_1", "fs.read", ToolResult.success("def add(a, b):\n    return a - b\n")
            ),
            ToolResultPart(
                "call_2",
                "terminal.exec",
                ToolResult.failure("EXIT_NONZERO", "pytest exited with 1.", hint="Read it."),
            ),
        ),
        assistant(
            ToolCallPart("call_3", "fs.edit", {"path": "calc.py", "old": "a - b", "new": "a + b"})
        ),
        results(ToolResultPart("call_3", "fs.edit", ToolResult.success("Edited calc.py."))),
        assistant(TextPart("Fixed: add() now returns a + b; the test passes.")),
    ]


# --------------------------------------------------------------------------- tests


def test_codex_export_is_a_rollout_codex_can_read() -> None:
    lines = export_session("codex", make_session(TASK), to_items(realistic_messages()))
    meta, items = read_codex(lines)

    assert (meta.originator, meta.cwd, meta.model_provider) == ("xclaw", "/home/dev/calc", "openai")
    assert meta.timestamp == "2025-01-02T03:04:05.123Z"
    assert meta.base_instructions is None and meta.instructions is None
    kinds = [item.type for item in items]
    assert kinds == [
        "message",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "function_call",
        "function_call_output",
        "message",
    ]
    calls = [item for item in items if isinstance(item, CodexFunctionCall)]
    assert [c.name for c in calls] == ["fs_read", "terminal_exec", "fs_edit"]
    assert json.loads(calls[0].arguments) == {"path": "calc.py"}
    outputs = [item for item in items if isinstance(item, CodexFunctionCallOutput)]
    assert isinstance(outputs[1].output, str)
    assert json.loads(outputs[1].output)["error_code"] == "EXIT_NONZERO"
    first = items[0]
    assert isinstance(first, CodexMessage) and first.content[0].type == "input_text"
    assert "SIG-OPAQUE-42" not in "\n".join(lines) and '"reasoning"' not in "\n".join(lines)
    events = codex_events(lines)
    assert [(e.type, e.message) for e in events] == [
        ("user_message", TASK),
        ("agent_message", "Let me look at the code and run the tests."),
        ("agent_message", "Fixed: add() now returns a + b; the test passes."),
    ]
    # The line right after the meta is the task message, then its user event.
    assert [json.loads(line)["type"] for line in lines[:3]] == [
        "session_meta",
        "response_item",
        "event_msg",
    ]


def test_codex_resume_picker_lists_the_exported_rollout() -> None:
    lines = export_session("codex", make_session(TASK), to_items(realistic_messages()))
    assert codex_picker_lists(lines) == (True, TASK)
    # The rule can fail: the same rollout without its user events is not listed.
    without = [line for line in lines if '"user_message"' not in line]
    assert codex_picker_lists(without) == (False, None)
    # Nor is one whose meta Codex cannot read.
    meta = json.loads(lines[0])
    del meta["payload"]["cwd"]
    assert codex_picker_lists([json.dumps(meta), *lines[1:]]) == (False, TASK)


def codex_filename_parts(name: str) -> tuple[datetime, str] | None:
    """codex-rs/rollout/src/list.rs ``parse_timestamp_uuid_from_filename``: ``rollout-`` +
    ``YYYY-MM-DDThh-mm-ss`` + ``-`` + a UUID + ``.jsonl``; None when it does not parse (the
    picker skips the file)."""
    if not (name.startswith("rollout-") and name.endswith(".jsonl")):
        return None
    core = name.removeprefix("rollout-").removesuffix(".jsonl")
    for i in range(len(core) - 1, -1, -1):
        if core[i] != "-":
            continue
        try:
            found = str(uuid.UUID(core[i + 1 :]))
        except ValueError:
            continue
        try:
            return datetime.strptime(core[:i], "%Y-%m-%dT%H-%M-%S"), found
        except ValueError:
            return None
    return None


def test_the_rollout_path_is_where_codex_looks() -> None:
    from xclaw.store.export import rollout_path

    session = make_session(TASK)
    path = rollout_path(session)
    assert path.parts[:3] == ("2025", "01", "02")  # sessions/YYYY/MM/DD
    parts = codex_filename_parts(path.name)
    assert parts is not None
    when, found = parts
    assert when == datetime(2025, 1, 2, 3, 4, 5)
    meta, _ = read_codex(export_session("codex", session, to_items(realistic_messages())))
    assert found == meta.id  # `codex resume <id>` finds the file by this suffix
    assert codex_filename_parts("rollout-2025-01-02-nope.jsonl") is None


def test_codex_rollout_with_no_user_text_up_front_is_still_listed() -> None:
    """The first user message was only protocol text and many calls follow: the task stands
    in as the user event right after the meta, so the picker still lists the session."""
    calls = []
    for n in range(8):
        calls.append(assistant(ToolCallPart(f"c{n}", "fs.read", {"path": f"f{n}.py"})))
        calls.append(results(ToolResultPart(f"c{n}", "fs.read", ToolResult.success("x"))))
    messages = [
        Message.user("<agent_protocol>\nCall tools as <call name='x'/>.\n</agent_protocol>"),
        *calls,
        Message.user("Also rename bar."),
    ]
    session = make_session(f"Rename foo. key {OPENAI_KEY}")
    lines = export_session("codex", session, to_items(messages))
    read_codex(lines)
    listed, first = codex_picker_lists(lines)
    assert listed and first == "Rename foo. key [REDACTED]"
    assert OPENAI_KEY not in "\n".join(lines)
    assert [e.message for e in codex_events(lines) if e.type == "user_message"] == [
        "Rename foo. key [REDACTED]",
        "Also rename bar.",
    ]


def test_claude_code_export_is_a_transcript_claude_code_can_read() -> None:
    lines = export_session("claude-code", make_session(TASK), to_items(realistic_messages()))
    entries = read_claude_code(lines)

    shape = []
    for entry in entries:
        content = entry.message.content
        assert isinstance(content, list)
        shape.append((entry.type, [block.type for block in content]))
    assert shape == [
        ("user", ["text"]),
        ("assistant", ["text", "tool_use", "tool_use"]),
        ("user", ["tool_result"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    first_reply = entries[1]
    assert isinstance(first_reply, AssistantEntry)
    assert first_reply.message.model == "gpt-5"
    assert first_reply.message.stop_reason == "tool_use"
    tool_names = [b.name for b in first_reply.message.content if isinstance(b, ToolUseBlock)]
    assert tool_names == ["fs_read", "terminal_exec"]
    failed = entries[3].message.content[0]
    assert isinstance(failed, ToolResultBlock) and failed.is_error is True
    assert entries[2].message.content[0].is_error is False  # type: ignore[union-attr]
    last = entries[-1]
    assert isinstance(last, AssistantEntry) and last.message.stop_reason == "end_turn"
    assert entries[0].timestamp == "2025-01-02T03:04:06.123Z"
    assert "SIG-OPAQUE-42" not in "\n".join(lines)


def test_jsonl_export_keeps_every_item_and_the_public_record() -> None:
    items = to_items(realistic_messages())
    lines = export_session("jsonl", make_session(TASK), items)

    header = json.loads(lines[0])
    assert (header["type"], header["format"], header["version"]) == ("session", "xclaw.session", 1)
    assert header["session"]["task"] == TASK
    assert header["session"]["meta"] == {"settings": {"mode": "auto"}}
    body = [json.loads(line) for line in lines[1:]]
    assert len(body) == len(items)
    for line, item in zip(body, items, strict=True):
        assert set(line) == {"session_id", "seq", "step_id", "turn", "created_at", "item"}
        assert (line["seq"], line["step_id"], line["turn"]) == (item.seq, item.step_id, item.turn)
        assert line["item"]["type"] == item.payload["type"]
    reasoning = next(line["item"] for line in body if line["item"]["type"] == "reasoning")
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Read calc.py first."}]
    assert "signature" not in reasoning and "encrypted_content" not in reasoning


OPENAI_KEY = "sk-proj-" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1"
GITHUB_KEY = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
AWS_KEY = "AKIA" + "J7K8L9M0N1P2Q3R4"
ENV_VALUE = "hunter2-plaintext-value"
NAMED_VALUE = "plainvalue123"
SECRETS = (OPENAI_KEY, GITHUB_KEY, AWS_KEY, ENV_VALUE, NAMED_VALUE)


def leaky_messages() -> list[Message]:
    task = f"Deploy with OPENAI_API_KEY={ENV_VALUE} and key {OPENAI_KEY}."
    env_file = f"OPENAI_API_KEY={ENV_VALUE}\nAWS_ACCESS_KEY_ID={AWS_KEY}\n"
    return [
        Message.user(task),
        assistant(
            TextPart(f"I will push with {GITHUB_KEY}."),
            ToolCallPart("c1", "fs.read", {"path": ".env", "note": OPENAI_KEY}),
            ToolCallPart(
                "c2",
                "terminal.exec",
                {"argv": ["deploy", f"--key={AWS_KEY}"], "env": {"DEPLOY_TOKEN": NAMED_VALUE}},
            ),
        ),
        results(
            ToolResultPart("c1", "fs.read", ToolResult.success(env_file)),
            ToolResultPart(
                "c2",
                "terminal.exec",
                ToolResult.failure("EXIT_NONZERO", f"auth failed for {GITHUB_KEY}"),
            ),
        ),
        assistant(TextPart(f"Deployment failed; {AWS_KEY} was rejected.")),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_secret_leaves_in_any_format(fmt: Any) -> None:
    task = leaky_messages()[0].text
    lines = export_session(fmt, make_session(task), to_items(leaky_messages()))
    text = "\n".join(lines)
    for secret in SECRETS:
        assert secret not in text, f"{fmt} export leaked {secret[:8]}…"
    assert "[REDACTED]" in text
    if fmt == "codex":
        read_codex(lines)
    elif fmt == "claude-code":
        read_claude_code(lines)


def protocol_messages() -> list[Message]:
    return [
        Message.user("<system_reminder>You have 3 turns left.</system_reminder>\nRename foo."),
        Message.user("<agent_protocol>\nCall tools as <call name='x'/>.\n</agent_protocol>"),
        assistant(
            TextPart("<agent_protocol version='1'>ack</agent_protocol>Renaming foo now."),
            ToolCallPart("c1", "fs.read", {"path": "foo.py"}),
        ),
        results(
            ToolResultPart(
                "c1", "fs.read", ToolResult.success("def foo(): ...\n<system-reminder>x</system")
            )
        ),
        assistant(TextPart("Done. <agent_protocol>cut off mid-reply")),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_protocol_text_and_system_prompt_never_appear(fmt: Any) -> None:
    lines = export_session(fmt, make_session("Rename foo."), to_items(protocol_messages()))
    text = "\n".join(lines)
    for marker in ("agent_protocol", "system_reminder", "system-reminder", "3 turns left"):
        assert marker not in text
    for private in ("SYSTEM-PROMPT-MARKER", "TOOL-CATALOGUE-MARKER", "system_prompt"):
        assert private not in text
    assert "Renaming foo now." in text and "Rename foo." in text and "Done." in text


def test_a_message_that_was_only_protocol_text_is_left_out() -> None:
    session, items = make_session("Rename foo."), to_items(protocol_messages())
    _, codex_items = read_codex(export_session("codex", session, items))
    user_texts = [
        part.text
        for item in codex_items
        if isinstance(item, CodexMessage) and item.role == "user"
        for part in item.content
        if isinstance(part, InputText)
    ]
    assert user_texts == ["Rename foo."]
    entries = read_claude_code(export_session("claude-code", session, items))
    assert sum(1 for e in entries if e.type == "user" and e.toolUseResult is None) == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_are_reproducible_single_lines(fmt: Any) -> None:
    session, items = make_session(TASK), to_items(realistic_messages())
    lines = export_session(fmt, session, items)
    assert lines == export_session(fmt, session, items)
    assert all("\n" not in line and line.strip() == line for line in lines)


def test_claude_code_tool_ids_stay_unique_when_call_ids_repeat_or_are_malformed() -> None:
    messages = [
        Message.user("Look twice."),
        assistant(ToolCallPart("call 1/x", "fs.read", {"path": "a.py"})),
        results(ToolResultPart("call 1/x", "fs.read", ToolResult.success("first"))),
        assistant(ToolCallPart("call 1/x", "fs.read", {"path": "b.py"})),
        results(ToolResultPart("call 1/x", "fs.read", ToolResult.success("second"))),
        assistant(ToolCallPart("c1", "fs.list", {})),
        results(ToolResultPart("c1", "fs.list", ToolResult.success("third"))),
        assistant(ToolCallPart("c1", "fs.list", {})),
        results(ToolResultPart("c1", "fs.list", ToolResult.success("fourth"))),
    ]
    entries = read_claude_code(export_session("claude-code", make_session("x"), to_items(messages)))

    uses = [b for e in entries if isinstance(e, AssistantEntry) for b in e.message.content]
    answers = [
        b
        for e in entries
        if isinstance(e, UserEntry) and isinstance(e.message.content, list)
        for b in e.message.content
        if isinstance(b, ToolResultBlock)
    ]
    assert len(uses) == len(answers) == 4
    for use, answer in zip(uses, answers, strict=True):
        assert isinstance(use, ToolUseBlock) and isinstance(answer, ToolResultBlock)
        assert answer.tool_use_id == use.id  # each result answers the call just before it
    assert uses[2].id == "c1"  # type: ignore[union-attr]  # well-formed ids are kept


@pytest.mark.parametrize("fmt", ["codex", "claude-code"])
def test_an_output_whose_call_is_missing_is_left_out(fmt: Any) -> None:
    messages = [
        Message.user("Go on."),
        results(ToolResultPart("gone", "fs.read", ToolResult.success("orphan-output"))),
        assistant(TextPart("Continuing.")),
    ]
    lines = export_session(fmt, make_session("Go on."), to_items(messages))
    assert "orphan-output" not in "\n".join(lines)
    read_codex(lines) if fmt == "codex" else read_claude_code(lines)


def test_a_uuid_session_id_is_kept_and_others_map_to_a_stable_uuid() -> None:
    sid = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    items = to_items(realistic_messages())
    meta, _ = read_codex(export_session("codex", make_session(TASK, sid=sid), items))
    assert meta.id == sid
    entries = read_claude_code(export_session("claude-code", make_session(TASK), items))
    again = read_claude_code(export_session("claude-code", make_session(TASK), items))
    assert entries[0].sessionId == again[0].sessionId != sid


def test_an_unknown_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        export_session("html", make_session(TASK), [])  # type: ignore[arg-type]
    assert info.value.code == "EXPORT_FORMAT_UNKNOWN"
