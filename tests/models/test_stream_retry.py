"""A reply stream that drops after text began: the partial turn is discarded, the turn is
asked again (once, `limits.stream_retries`), and the live view says so. Real HTTP: the
WireServer cuts the connection mid-body, as a dying proxy or server does."""

from __future__ import annotations

from pathlib import Path

from chat_sse import chat_text
from rich.console import Console
from wire_server import WireServer

from xclaw import Agent, Limits
from xclaw.cli.render import LiveView
from xclaw.core.events import Event, EventBus
from xclaw.models.resolve import resolve_model


def _model(wire: WireServer, root: Path) -> object:
    return resolve_model(
        "openai-compatible:m", base_url=wire.url, env={"XCLAW_API_KEY": "k"}, project=root
    )


async def _run(wire: WireServer, root: Path, limits: Limits | None = None) -> tuple:
    model = _model(wire, root)
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    console = Console(record=True, width=200)
    bus.subscribe(LiveView(console))
    try:
        agent = Agent(model, root, bus=bus, limits=limits, evidence_gate_enabled=False)  # type: ignore[arg-type]
        result = await agent.run("say hello")
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    return result, events, console.export_text()


async def test_a_stream_cut_after_text_is_discarded_and_asked_again(
    wire: WireServer, root: Path
) -> None:
    wire.add_sse(chat_text("Hel", "lo from the first try"), cut_after=1)  # "Hel", then gone
    wire.add_sse(chat_text("Hello", " again"))
    result, events, shown = await _run(wire, root)
    assert result.ok, result.reason
    assert result.reply == "Hello again"  # nothing of the partial reply is kept
    assistant = [m for m in result.messages if m.role == "assistant"]
    assert [m.text for m in assistant] == ["Hello again"]
    retry = [e for e in events if e.type == "model.retry"]
    assert len(retry) == 1 and retry[0].payload["partial"] is True
    assert retry[0].payload["discarded_chars"] == 3 and retry[0].payload["attempt"] == 1
    streamed = "".join(str(e.payload["delta"]) for e in events if e.type == "model.streaming")
    assert streamed == "HelHello again"  # the live view saw both, and was told
    assert "stream dropped after 3 characters" in shown and "discarded" in shown
    assert len(wire.requests) == 2 and wire.requests[0].body == wire.requests[1].body
    assert result.metrics.rounds == 1


async def test_a_second_drop_fails_the_run_with_the_stream_error(
    wire: WireServer, root: Path
) -> None:
    wire.add_sse(chat_text("Hel", "lo"), cut_after=1)
    wire.add_sse(chat_text("He", "llo"), cut_after=1)
    wire.add_sse(chat_text("unused"))
    result, events, _ = await _run(wire, root)
    assert result.status == "failed" and "MODEL_" in result.reason
    assert len([e for e in events if e.type == "model.retry"]) == 1
    assert wire.pending == 1


async def test_stream_retries_follow_the_limit(wire: WireServer, root: Path) -> None:
    wire.add_sse(chat_text("Hel", "lo"), cut_after=1)
    wire.add_sse(chat_text("unused"))
    result, events, _ = await _run(wire, root, Limits(stream_retries=0))
    assert result.status == "failed"
    assert not [e for e in events if e.type == "model.retry"] and wire.pending == 1
