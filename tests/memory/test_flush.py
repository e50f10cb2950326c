"""Before compaction drops old turns, their durable facts are flushed to memory."""

from __future__ import annotations

from collections.abc import Sequence

from tests.memory.conftest import StoreFactory

from xclaw.context.budget import ContextBudget, fit_messages
from xclaw.context.compaction import notify_dropped, on_drop
from xclaw.context.tokens import EstimateCounter
from xclaw.core.messages import Message, TextPart
from xclaw.core.model import ModelRequest
from xclaw.core.state import RunState
from xclaw.memory.base import Scope
from xclaw.memory.extract import Extractor
from xclaw.models.scripted import FunctionModel, ModelTurn

FACT = "The user deploys with ops/deploy.sh, never by hand."
ALICE = Scope("user", "alice")


def _conversation(turns: int) -> list[Message]:
    out = [Message.system("You are xclaw."), Message.user("Help me ship the shop.")]
    for i in range(turns):
        out.append(Message.user(f"Step {i}: remember I deploy with ops/deploy.sh. " + "x " * 400))
        out.append(Message("assistant", (TextPart(f"Done step {i}. " + "y " * 400),)))
    return out


def _model(seen: list[str]) -> FunctionModel:
    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        system = request.messages[0].text
        if "long-term memory" in system:
            seen.append("extract")
            return ModelTurn(text=f"- {FACT}")
        seen.append("summary")
        return ModelTurn(text="GOAL: ship the shop\nNOTES:\n- deploy script exists")

    return FunctionModel(answer)


async def test_dropped_turns_are_flushed(open_sqlite: StoreFactory) -> None:
    store = open_sqlite()
    seen: list[str] = []
    model = _model(seen)
    extractor = Extractor(store, model, ALICE)
    state = RunState("s1", "Help me ship the shop.", _conversation(8))
    await extractor.hooks().run_before_model_call(state)  # registers the drop listener
    budget = ContextBudget(3_000, reserve_output=200, counter=EstimateCounter())
    report = await fit_messages(state.messages, budget, model=model)
    assert report.removed_turns > 0
    await extractor.drain(30)
    assert seen.count("summary") == 1 and seen.count("extract") >= 1
    [item] = store.list(scopes=[ALICE])
    assert item.text == FACT
    assert item.metadata == {**item.metadata, "origin": "compaction", "session_id": "s1"}

    # A later run in the same task: its drops are its own, the finished run stays silent.
    state.status = "completed"
    store.delete([item.id], scopes=[ALICE])
    later = RunState("s2", "Help me ship the shop.", _conversation(8))
    await extractor.hooks().run_before_model_call(later)
    await fit_messages(later.messages, budget, model=model)
    await extractor.drain(30)
    [item] = store.list(scopes=[ALICE])
    assert item.metadata["session_id"] == "s2"
    assert [r["session_id"] for r in extractor.results] == ["s1", "s2"]


def test_drop_listeners_are_scoped_and_failures_contained() -> None:
    got: list[int] = []

    def broken(messages: Sequence[Message]) -> None:
        raise RuntimeError("listener bug")

    with on_drop(lambda messages: got.append(len(messages))), on_drop(broken):
        notify_dropped([Message.user("a"), Message.user("b")])
    notify_dropped([Message.user("c")])  # outside the block: nobody listens
    assert got == [2]
