"""``{baseDir}`` and a skill's scripts/, references/, assets/ resolve inside the skill only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xclaw.core.errors import PolicyDenied
from xclaw.skills.catalog import SkillCatalog, resolve_resource, resource_listing
from xclaw.skills.skill import Skill


@pytest.fixture
def sysinfo(project_skills: Path) -> Skill:
    skill = SkillCatalog.discover([("claude", project_skills)]).get("sysinfo")
    assert skill is not None
    return skill


def test_base_dir_becomes_the_skill_folder(sysinfo: Skill, project_skills: Path) -> None:
    body = sysinfo.body()
    assert "{baseDir}" not in body
    assert f"python3 {project_skills / 'sysinfo'}/scripts/sysinfo.py all" in body
    assert resource_listing(sysinfo) == ["scripts/sysinfo.py", "references/proc-fields.md"]


def test_resources_resolve_inside_the_skill(sysinfo: Skill) -> None:
    ref = resolve_resource(sysinfo, "references/proc-fields.md")
    assert ref == sysinfo.folder / "references" / "proc-fields.md"
    assert resolve_resource(sysinfo, "{baseDir}/scripts/sysinfo.py").is_file()


@pytest.mark.parametrize(
    "path", ["../github/SKILL.md", "/etc/passwd", "references/../../x", "notes/secret.md"]
)
def test_paths_outside_the_resource_dirs_are_refused(sysinfo: Skill, path: str) -> None:
    with pytest.raises(PolicyDenied) as err:
        resolve_resource(sysinfo, path)
    assert err.value.code == "PATH_OUTSIDE_SKILL"


def test_a_link_out_of_the_skill_is_refused_and_not_listed(sysinfo: Skill, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    os.symlink(secret, sysinfo.folder / "references" / "leak.md")
    with pytest.raises(PolicyDenied, match="through a link"):
        resolve_resource(sysinfo, "references/leak.md")
    assert "references/leak.md" not in resource_listing(sysinfo)
