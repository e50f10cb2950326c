"""The multi-agent face (seed 003 ch. 09): an orchestrator delegating to workers.

Workers are ordinary runs of the one loop (coding ``Agent``s the composition root makes through
the tree's ``AgentFactory``) with their own prompt, tools, model, limits and workspace,
recorded as child sessions (``parent_session_id``, ``caller``).
The orchestrator's tools — ``agents.delegate``, ``agents.debate``, ``agents.pipeline``,
``agents.open_artifact`` — return what a worker ``deliver``-ed (summary, summary_data,
artifact_pointers), never its transcript. Routing (rules, intent router) picks a team or a
worker before the orchestrator runs. One budget and one cancellation cover the whole tree.
"""

from xclaw.agents.config import AgentsConfig, load_agents_config
from xclaw.agents.registry import BUILTIN_WORKERS, WorkerRegistry, WorkerSpec, build_registry
from xclaw.agents.routing import Route, Router
from xclaw.agents.team import Orchestrator, TeamSettings, run_routed

__all__ = [
    "BUILTIN_WORKERS",
    "AgentsConfig",
    "Orchestrator",
    "Route",
    "Router",
    "TeamSettings",
    "WorkerRegistry",
    "WorkerSpec",
    "build_registry",
    "load_agents_config",
    "run_routed",
]
