"""Which project files a model may change only with a human's approval: the rule, shared by
the policy (arguments naming them, ``fs.*`` writes) and the sandbox (``sandbox.protect``
seals them inside bwrap and moves aside what a command created).

``xclaw.yaml``, ``.mcp.json`` and ``.gitmodules`` configure xclaw or git; inside any
``.git``, every entry but what git writes in ordinary work (``GIT_WRITABLE``, lock files,
temporary files) and the alternates files: git runs programs they name.
"""

from __future__ import annotations

AGENT_CONFIG = "xclaw.yaml"
GIT_MODULES = ".gitmodules"
# What git writes at a .git top level in ordinary work (add, commit, merge, rebase, gc...).
GIT_WRITABLE = frozenset(
    {
        "objects", "refs", "logs", "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD",
        "MERGE_MSG", "MERGE_MODE", "MERGE_AUTOSTASH", "CHERRY_PICK_HEAD", "REVERT_HEAD",
        "REBASE_HEAD", "AUTO_MERGE", "COMMIT_EDITMSG", "TAG_EDITMSG", "SQUASH_MSG",
        "NOTES_EDITMSG", "EDIT_DESCRIPTION", "BRANCH_DESCRIPTION", "packed-refs",
        "rebase-merge", "rebase-apply", "sequencer", "shallow", "gc.pid", "gc.log",
        "rr-cache", "lost-found", "filter-repo", "FETCH_HEAD.tmp",
    }
)  # fmt: skip
_WRITABLE_PREFIXES = ("BISECT_", "next-index-", "sharedindex.", "index.stash.", "tmp_")
ALTERNATES = ("objects/info/alternates", "objects/info/http-alternates")


def is_git_writable(name: str) -> bool:
    """Whether git may create or change the ``.git`` top-level entry ``name`` in a sandbox."""
    return name in GIT_WRITABLE or name.endswith(".lock") or name.startswith(_WRITABLE_PREFIXES)


def is_protected_rel(rel: str) -> bool:
    """True for a project-relative path the model may only write with a human's approval."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if parts in ([AGENT_CONFIG], [".mcp.json"]) or (parts and parts[-1] == GIT_MODULES):
        return True
    for i, part in enumerate(parts):
        if part != ".git":
            continue
        rest = parts[i + 1 :]
        if not rest or not is_git_writable(rest[0]) or "/".join(rest) in ALTERNATES:
            return True
    return False
