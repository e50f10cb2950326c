"""A failover chain's context budget is its smallest known window: the budget fits the
conversation before the request goes out, and the failover happens inside the send, so a
request fitted to a large first model must still fit the backup that answers it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import xclaw.coding.agent as agent_module
from xclaw.coding.agent import Agent
from xclaw.context.budget import ContextBudget
from xclaw.core.model import Model
from xclaw.models.fallback import FallbackModel
from xclaw.models.info import model_info, window_info
from xclaw.models.resolve import resolve_model
from xclaw.models.scripted import ScriptedModel

ENV = {"MOONSHOT_API_KEY": "test-key"}


def chain(spec: str, root: Path) -> Model:
    return resolve_model(spec, env=ENV, project=root, model_settings={})


def test_the_smallest_window_of_the_chain_bounds_it(root: Path) -> None:
    big_first = chain("moonshot:moonshot-v1-128k,moonshot:moonshot-v1-8k", root)
    small_first = chain("moonshot:moonshot-v1-8k,moonshot:moonshot-v1-128k", root)
    for model in (big_first, small_first):
        info = window_info(model)
        assert info.profile is not None and info.profile.context_window == 8192
    # prices and the name a run reports stay the first model's
    assert model_info(big_first).profile.context_window == 131072  # type: ignore[union-attr]


def test_models_without_a_profile_do_not_count(root: Path) -> None:
    known = chain("moonshot:moonshot-v1-32k", root)
    mixed = FallbackModel([ScriptedModel([]), *getattr(known, "models", [known])])
    info = window_info(mixed)
    assert info.profile is not None and info.profile.context_window == 32768
    assert window_info(FallbackModel([ScriptedModel([])])).profile is None


def test_the_agent_budgets_a_chain_to_its_smallest_window(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[ContextBudget] = []

    def recording(*args: Any, **kwargs: Any) -> ContextBudget:
        made.append(ContextBudget(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(agent_module, "ContextBudget", recording)
    model = chain("moonshot:moonshot-v1-128k,moonshot:moonshot-v1-8k", root)
    agent = Agent(model, root)
    assert len(agent._context_hooks()) == 1
    assert made[0].window == 8192 and made[0].limit > 0
