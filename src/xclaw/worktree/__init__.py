"""Isolated git trees, an ability below the faces: git run the safe way through the host
launcher (``gitio``) and the baseline commit an isolated tree's diff is taken against
(``baseline``). The patch face's job worktree (``xclaw.patch.worktree``) and the multi-agent
face's isolated workspaces (``xclaw.agents.workspace``) are both built on it.
"""
