"""The composition root: one builder per face, used by every surface.

    config = resolve_config(directory)                       # once per command
    runtime = build_coding(config, directory, Overrides(max_turns=7))
    async with runtime:                                      # plugin services, memory
        result = await runtime.run("task")                   # MCP servers for the run

``xclaw run``, ``xclaw serve`` (each gateway session), ``xclaw chronos``, ``xclaw eval``,
``xclaw agents``, ``xclaw patch``, ``xclaw page`` and the Python API (``xclaw.build_agent``)
assemble their agents here, from the resolved configuration and the command's overrides:
config → model → limits → approver → sandbox → plugins, skills and memory → store. Surfaces
parse flags and render; they never assemble. Layer: between the surfaces (cli, gateway,
chronos) and the faces (coding, agents, ...): it imports faces and abilities, only surfaces
and ``xclaw`` import it.

Modules: ``settings`` (overrides, the resolved configuration), ``sandbox`` (one plan per
command), ``coding`` (the coding agent and the Python API), ``patch`` (change jobs),
``page`` (the page agent), ``assistant`` (the gateway's sessions), ``agents`` (the
orchestrator, and the coding agents of its tree), ``routing`` (a gateway session's agent
that routes each message to its team).
"""

from __future__ import annotations

from xclaw.compose.settings import Overrides, resolve_config

__all__ = ["Overrides", "resolve_config"]
