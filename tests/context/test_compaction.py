"""Compaction: removed turns become one bounded checkpoint note; failures say so."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from xclaw import FunctionModel, ModelTurn
from xclaw.context.compaction import (
    NOTE_PREFIX,
    SUMMARY_INSTRUCTION,
    ContextNote,
    compact,
    parse_checkpoint,
    render_transcript,
    truncation_note,
)
from xclaw.context.tokens import EstimateCounter, TiktokenCounter
from xclaw.core.errors import ModelUnavailable
from xclaw.core.messages import Message, TextPart, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import ModelRequest

CHECKPOINT = """\
GOAL: Make the blog build pass.
FILES MODIFIED:
- src/index.html: added the post list
- `src/app.js`: fixed the router
VERIFICATION:
- npm test: 3 passed
- npm run build: failed with exit code 1
OPEN ITEMS:
- fix the build error in vite.config.js
NOTES:
- none
"""


def turns(n: int, size: int = 3_000) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        call = ToolCallPart(f"c{i}", "fs.read", {"path": f"src/f{i}.js"})
        out.append(Message("assistant", (TextPart(f"Reading file {i}."), call)))
        result = ToolResult.success(f"read src/f{i}.js", text=f"// file {i}\n" + "x = 1;\n" * size)
        out.append(Message("tool", (ToolResultPart(f"c{i}", "fs.read", result),)))
    return out


def summariser(text: str, seen: list[ModelRequest]) -> FunctionModel:
    def reply(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        seen.append(request)
        return ModelTurn(text=text, input_tokens=1200, output_tokens=80)

    return FunctionModel(reply, name="summariser")


def test_note_round_trips() -> None:
    note = ContextNote(12, "GOAL: x\nOPEN ITEMS:\n- y", "status line")
    msg = note.to_message()
    assert msg.role == "user" and msg.text.startswith(NOTE_PREFIX)
    assert "12 earlier turns were removed" in msg.text
    parsed = ContextNote.parse(msg)
    assert parsed is not None
    assert (parsed.removed_turns, parsed.summary) == (12, "GOAL: x\nOPEN ITEMS:\n- y")
    one = ContextNote(1).to_message()
    assert "1 earlier turn was removed" in one.text
    assert ContextNote.parse(one) == ContextNote(1)


def test_parse_ignores_other_messages() -> None:
    assert ContextNote.parse(Message.user("Fix the bug")) is None
    assert (
        ContextNote.parse(Message("assistant", (TextPart(ContextNote(3).to_message().text),)))
        is None
    )


def test_truncation_note_keeps_an_earlier_summary() -> None:
    previous = ContextNote(4, "GOAL: old")
    note = truncation_note(turns(3), previous)
    assert note.removed_turns == 7 and note.summary == "GOAL: old"
    assert "covers only the earliest" in note.to_message().text
    assert truncation_note(turns(2)) == ContextNote(2)


def test_parse_checkpoint_sections() -> None:
    cp = parse_checkpoint(CHECKPOINT)
    assert cp["goal"] == "Make the blog build pass."
    assert cp["modified_files"] == ["src/index.html", "src/app.js"]
    assert cp["verification"] == [
        {"check": "npm test", "outcome": "3 passed"},
        {"check": "npm run build", "outcome": "failed with exit code 1"},
    ]
    assert cp["open_items"] == ["fix the build error in vite.config.js"]
    assert cp["notes"] == []
    md = parse_checkpoint("**GOAL:** ship it\n## OPEN ITEMS\n* tests\n")
    assert md["goal"] == "ship it" and md["open_items"] == ["tests"]
    assert parse_checkpoint("no headings at all")["goal"] == ""


def test_transcript_is_bounded_and_keeps_both_ends() -> None:
    counter = TiktokenCounter()
    msgs = turns(40, size=400)
    text = render_transcript(msgs, counter, 1_500)
    assert counter.count_text(text) <= 1_500
    assert "CALL fs.read" in text and "RESULT fs.read (ok)" in text
    assert "Reading file 0." in text and "Reading file 39." in text
    assert "the middle of the excerpt is omitted" in text
    small = render_transcript(turns(1, size=10), counter, 1_500)
    assert "omitted" not in small and '{"path":"src/f0.js"}' in small


async def test_compact_replaces_turns_with_a_checkpoint_summary() -> None:
    seen: list[ModelRequest] = []
    counter = TiktokenCounter()
    previous = ContextNote(5, "GOAL: earlier checkpoint text")
    replacement, record = await compact(
        turns(3),
        summariser(CHECKPOINT, seen),
        counter,
        previous=previous,
        task="Build the blog",
        known_files=["src/app.js", "README.md"],
        turn=9,
    )
    assert len(replacement) == 1
    note = ContextNote.parse(replacement[0])
    assert note is not None and note.removed_turns == 8
    assert note.summary == CHECKPOINT.strip()
    assert record["ok"] is True and record["turn"] == 9 and record["removed_turns"] == 8
    assert record["goal"] == "Make the blog build pass."
    assert record["modified_files"] == ["src/app.js", "README.md", "src/index.html"]
    assert record["open_items"] == ["fix the build error in vite.config.js"]
    assert (record["input_tokens"], record["output_tokens"]) == (1200, 80)
    (request,) = seen
    assert request.tools == ()
    system, prompt = request.messages
    assert system.role == "system" and system.text.startswith(SUMMARY_INSTRUCTION[:40])
    assert "Build the blog" in prompt.text and "earlier checkpoint text" in prompt.text
    assert "CALL fs.read" in prompt.text and "src/app.js, README.md" in prompt.text


async def test_summary_is_bounded() -> None:
    counter = EstimateCounter()
    rambling = "GOAL: everything\nNOTES:\n" + "- a very long note about nothing\n" * 2_000
    replacement, record = await compact(
        turns(2), summariser(rambling, []), counter, max_summary_tokens=200, task="t"
    )
    assert record["ok"] is True
    assert counter.count_text(record["summary"]) <= 200
    assert record["summary"].endswith("[summary cut]")
    assert counter.count_message(replacement[0]) < 200 + 100


async def test_prompt_input_is_bounded() -> None:
    seen: list[ModelRequest] = []
    counter = EstimateCounter()
    await compact(turns(60), summariser(CHECKPOINT, seen), counter, max_input_tokens=2_000)
    assert counter.count_text(seen[0].messages[1].text) <= 2_100


def failing(err: Exception) -> FunctionModel:
    def reply(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        raise err

    return FunctionModel(reply, name="broken")


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (failing(ModelUnavailable("the provider is down")), "the provider is down"),
        (failing(RuntimeError("boom")), "RuntimeError: boom"),
        (summariser("   ", []), "empty summary"),
    ],
)
async def test_failed_summary_falls_back_to_truncation_and_says_so(
    model: FunctionModel, reason: str
) -> None:
    previous = ContextNote(2, "GOAL: kept from before")
    replacement, record = await compact(turns(3), model, EstimateCounter(), previous=previous)
    assert record["ok"] is False and reason in record["error"]
    assert "goal" not in record  # no checkpoint comes from a failed summary
    (msg,) = replacement
    note = ContextNote.parse(msg)
    assert note is not None and note.removed_turns == 5
    assert note.summary == "GOAL: kept from before"
    assert "could not be made" in msg.text and reason in msg.text


async def test_slow_summariser_times_out() -> None:
    async def slow(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        await asyncio.sleep(5)
        return ModelTurn(text=CHECKPOINT)

    replacement, record = await compact(
        turns(1), FunctionModel(slow), EstimateCounter(), timeout_s=0.05
    )
    assert record["ok"] is False and "did not answer in time" in record["error"]
    assert "could not be made" in replacement[0].text
