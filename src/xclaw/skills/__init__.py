"""Skills: ``SKILL.md`` folders (Claude Code / OpenClaw format) that teach the model a job.

Only names and descriptions sit in the system prompt; a skill's body loads when the user's
message matches it (two description keywords, or ``/name``) or the model calls ``skills.load``.
"""

from xclaw.skills.catalog import SkillCatalog, SkillStatus
from xclaw.skills.skill import Skill

__all__ = ["Skill", "SkillCatalog", "SkillStatus"]
