"""The multi-agent tree's agents come from the composition root: ``CodingAgents`` makes coding
``Agent``s whose new session carries its place in the tree (parent, caller, ``agents`` meta)
in its first row, and gives the coding tools workers pick theirs from."""

from __future__ import annotations

import asyncio
from pathlib import Path

from xclaw.agents.factory import AgentFactory, AgentSettings
from xclaw.coding.agent import Agent
from xclaw.coding.toolset import coding_registry
from xclaw.compose.agents import CodingAgents
from xclaw.core.events import EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.models.scripted import ScriptedModel
from xclaw.policy.approval import ModeApprover
from xclaw.store.sqlite import open_store
from xclaw.tools.registry import ToolRegistry


def test_a_tree_agent_is_a_coding_agent_linked_in_its_first_row(root: Path) -> None:
    factory: AgentFactory = CodingAgents()
    assert factory.tools().names() == coding_registry().names()
    with open_store() as store:
        settings = AgentSettings(
            ScriptedModel(["done"]),
            root,
            ToolRegistry([]),
            ModeApprover("deny"),
            Limits(),
            Hooks(),
            EventBus(),
            store,
            "You are a worker.",
            parent_session_id="parent-1",
            caller="agent",
            meta={"agents": {"worker": "coder", "call": "c1|delegate|0"}},
        )
        agent = factory.agent(settings)
        assert isinstance(agent, Agent)
        assert not agent.hooks.completion_gate  # judged by its caller, not the evidence gate
        result = asyncio.run(agent.run("task", session_id="parent-1.coder-x"))
        assert result.status == "completed"
        child = store.get_session("parent-1.coder-x")
        assert child is not None
        assert (child.parent_session_id, child.caller) == ("parent-1", "agent")
        assert child.meta["agents"] == {"worker": "coder", "call": "c1|delegate|0"}
        assert child.meta["system_prompt"] == "You are a worker."

        plain = asyncio.run(Agent(ScriptedModel(["done"]), root, store=store).run("task"))
        session = store.get_session(plain.session_id)
        assert session is not None
        assert (session.parent_session_id, session.caller) == (None, None)
        assert "agents" not in session.meta
