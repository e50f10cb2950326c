"""Wiring: what ``xclaw run`` / ``xclaw serve`` add to an Agent for long-term memory.

memory = open_memory(config, default_scopes(project_root), model=model)
agent = Agent(model, root, tools=[*coding_tools, *memory.tools()], hooks=memory.hooks())
result = await agent.run(task, session_id=session_id)
...show the reply...
await memory.drain()      # background extraction, bounded by its timeout
memory.close()

One runtime may serve many sessions (a gateway): its hooks bind each run's session, so
``memory.save scope=session`` and recall reach that run's session scope without a
``session_id`` in ``default_scopes``.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from xclaw.context.tokens import EstimateCounter, TokenCounter, counter_for_model
from xclaw.core.hooks import Hooks
from xclaw.core.model import Model
from xclaw.memory.base import MemoryScopes, MemoryStore, MemoryStoreError, Scope
from xclaw.memory.extract import Extractor
from xclaw.memory.recall import Recall, RecallLimits, recall_budget
from xclaw.memory.settings import MemoryConfig, RecallConfig, memory_config, open_memory_store
from xclaw.memory.tools import memory_tools
from xclaw.tools.base import Tool


def default_scopes(
    project_root: str | Path | None = None,
    session_id: str | None = None,
    user: str | None = None,
) -> MemoryScopes:
    """The local user (``XCLAW_USER`` or the login name), the project's real path, the
    session."""
    name = user or os.environ.get("XCLAW_USER") or getpass.getuser()
    project = _project_scope(Path(project_root)) if project_root else None
    return MemoryScopes(
        Scope("user", name), project, Scope("session", session_id) if session_id else None
    )


def _project_scope(root: Path) -> Scope:
    path = str(root.resolve())
    try:
        return Scope("project", path)
    except MemoryStoreError:  # a quote or a control character in the path
        return Scope("project", "sha256:" + hashlib.sha256(path.encode()).hexdigest()[:32])


def _window_and_counter(model: Model | None) -> tuple[int | None, TokenCounter]:
    if model is None:
        return None, EstimateCounter()
    from xclaw.models.info import window_info

    info = window_info(model)  # a failover chain's smallest window
    window = info.profile.context_window if info.profile is not None else None
    return window, counter_for_model(info.name)


def recall_limits(section: RecallConfig) -> RecallLimits:
    """Recall's limits from ``memory.recall`` (the floor is on the vector similarity)."""
    return RecallLimits(
        top_k=section.top_k,
        min_similarity=section.min_similarity,
        preferences=section.preferences,
        kb_passages=section.kb_passages,
        kb_chars=section.kb_chars,
    )


@dataclass(slots=True)
class MemoryRuntime:
    store: MemoryStore
    config: MemoryConfig
    scopes: MemoryScopes
    recall: Recall | None
    extractor: Extractor | None

    def hooks(self) -> Hooks:
        """Recall before each model call; extraction on completion and before compaction.
        Merge these after the Agent's own hooks (the Agent does: user hooks come last)."""
        hooks = Hooks()
        if self.recall is not None:
            hooks = hooks.merged(self.recall.hooks())
        return hooks.merged(self.extractor.hooks()) if self.extractor else hooks

    @property
    def reserve_tokens(self) -> int:
        """What recall may add to each request: the Agent keeps it free (``prompt_reserve``)."""
        return self.recall.max_tokens if self.recall is not None else 0

    def tools(self) -> list[Tool]:
        """memory.save/search/forget, and kb.search over the project's and the user's
        indexed documents (`xclaw kb add`)."""
        from xclaw.memory.kb import KnowledgeBase
        from xclaw.memory.kb_tools import kb_search_tool

        found = memory_tools(
            self.store, self.scopes, duplicate_similarity=self.config.extract.duplicate_similarity
        )
        kb = KnowledgeBase(self.store, self.scopes.project or self.scopes.user)
        return [*found, kb_search_tool(kb.also_search(self.scopes.user))]

    async def drain(self, timeout_s: float | None = None) -> None:
        if self.extractor is not None:
            await self.extractor.drain(timeout_s)

    def close(self) -> None:
        self.store.close()


def warm_up_in_background(store: MemoryStore) -> None:
    """Load the store's embedding model in a daemon thread, so the first recall does not
    wait for it (a search meanwhile simply waits on the model's lock)."""
    warm = getattr(getattr(store, "embedder", None), "warm_up", None)
    if callable(warm):
        threading.Thread(target=warm, name="xclaw-embedder-warm-up", daemon=True).start()


def open_memory(
    config: object | None,
    scopes: MemoryScopes,
    *,
    model: Model | None = None,
    store: MemoryStore | None = None,
    warm_up: bool = True,
) -> MemoryRuntime:
    """Memory for one run or session. ``config`` is an ``XclawConfig`` (its ``memory``
    section) or a ``MemoryConfig``; ``model`` sizes the recall budget from its window and
    writes the extracted facts (no model: no extraction)."""
    cfg = memory_config(config)
    store = store or open_memory_store(cfg)
    if warm_up:
        warm_up_in_background(store)
    recall = None
    if cfg.recall.enabled:
        window, counter = _window_and_counter(model)
        recall = Recall(
            store,
            scopes.visible,
            max_tokens=recall_budget(
                window, fraction=cfg.recall.window_fraction, cap=cfg.recall.max_tokens
            ),
            limits=recall_limits(cfg.recall),
            user=scopes.user,
            counter=counter,
        )
    extractor = None
    if cfg.extract.enabled and model is not None:
        extractor = Extractor(
            store,
            model,
            scopes.user,
            timeout_s=cfg.extract.timeout_s,
            max_facts=cfg.extract.max_facts,
            similarity=cfg.extract.duplicate_similarity,
        )
    return MemoryRuntime(store, cfg, scopes, recall, extractor)
