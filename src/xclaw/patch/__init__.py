"""The patch face (seed 001, SpotPatch): change jobs in an isolated git worktree.

A job runs the one loop with six tools (list_files, search_text, read_file, replace_text,
apply_patch, run_check), validates the resulting diff, runs the user's checks, and waits for
review; apply and revert write the user's working tree only after hash checks.
"""

from xclaw.patch.engine import PatchJob
from xclaw.patch.job import JobRecord, JobSpec, JobStore, PatchLimits, Target
from xclaw.worktree.gitio import PatchError

__all__ = ["JobRecord", "JobSpec", "JobStore", "PatchError", "PatchJob", "PatchLimits", "Target"]
