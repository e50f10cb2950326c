"""Cost by model: prices come from the presets of the model an agent runs."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from xclaw.core.events import Event
from xclaw.models.presets import Preset, get_preset
from xclaw.models.scripted import ScriptedModel
from xclaw.obs.metrics import RunMetrics
from xclaw.obs.tracing import Tracing


def _turn(model: str) -> list[Event]:
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000, "first_event_ms": 12.5}
    return [
        Event("run.started", "s1", 0, {"task": "t", "model": model}, timestamp=100.0),
        Event("model.message_sent", "s1", 1, {"messages": 1}, timestamp=100.5),
        Event("model.message_complete", "s1", 1, usage, timestamp=102.0),
        Event("run.completed", "s1", 1, {"reply": "", "metrics": {}}, timestamp=102.1),
    ]


class PricedModel(ScriptedModel):
    """A fake with a provider preset, priced as the wire models are (from presets' data)."""

    def __init__(self, preset: Preset, model: str) -> None:
        super().__init__([], name=f"{preset.name}:{model}")
        self.preset, self.model = preset, model


def test_a_priced_model_has_a_cost() -> None:
    preset = get_preset("openai")
    assert preset is not None
    model = PricedModel(preset, "gpt-4o-mini")  # presets: $0.15 in, $0.60 out per million

    metrics = RunMetrics()
    metrics.prices.learn(model)
    spans = InMemorySpanExporter()
    tracing = Tracing()
    tracing.provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.prices.learn(model)
    for ev in _turn(model.name):
        metrics(ev)
        tracing.builder(ev)

    value = metrics.registry.get_sample_value("xclaw_llm_cost_usd_total", {"model": model.name})
    assert value == pytest.approx(0.75)
    seconds = metrics.registry.get_sample_value(
        "xclaw_llm_call_duration_seconds_sum", {"model": model.name}
    )
    assert seconds == pytest.approx(1.5)
    (llm,) = [s for s in spans.get_finished_spans() if s.name == "llm.call"]
    assert llm.attributes is not None
    assert llm.attributes["xclaw.llm.cost_usd"] == pytest.approx(0.75)
    assert llm.attributes["xclaw.llm.time_to_first_token_ms"] == 12.5
    assert (llm.start_time, llm.end_time) == (100_500_000_000, 102_000_000_000)
