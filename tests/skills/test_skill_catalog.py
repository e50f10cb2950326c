"""Skills load from their published format, report what this machine lacks, and match the
tasks they are for (two description keywords, or ``/name``) and not the others."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.skills.conftest import ALL_SKILLS, DATA

from xclaw.skills.catalog import SkillCatalog, skill_dirs
from xclaw.skills.match import keyword_hits, matches


@pytest.fixture
def catalog(only_bins: Path) -> SkillCatalog:
    return SkillCatalog.discover([("claude", DATA)])


def test_every_skill_loads_with_its_metadata(catalog: SkillCatalog) -> None:
    assert len(ALL_SKILLS) >= 10
    assert sorted(s.name for s in catalog.statuses) == ALL_SKILLS
    assert all(s.skill is not None for s in catalog.statuses)  # none is invalid
    github = catalog.status("github")
    assert github is not None and github.skill is not None
    assert github.skill.emoji == "🐙" and github.skill.requires_bins == ("gh",)
    assert github.problem == (
        "requires bin:gh (Install GitHub CLI (brew); Install GitHub CLI (apt))"
    )
    feishu = catalog.status("feishu-messaging")
    assert feishu is not None and feishu.skill is not None
    assert feishu.problem == "requires env:FEISHU_APP_ID, env:FEISHU_APP_SECRET"
    assert feishu.skill.user_invocable is False
    docker = catalog.status("docker-cleanup")
    assert docker is not None and docker.problem.startswith("requires bin:docker")
    csv = catalog.get("csv-summary")
    assert csv is not None and csv.requires_any_bins == ("python3", "python")
    tmux = catalog.get("tmux")
    assert tmux is not None and tmux.platforms == ("darwin", "linux")
    pdf = catalog.get("pdf")
    assert pdf is not None and pdf.extra["license"] == "Apache-2.0"
    assert {s.name for s in catalog.available()} == set(ALL_SKILLS) - {
        "github",
        "feishu-messaging",
        "docker-cleanup",
    }


def test_env_and_bins_make_a_skill_available(
    only_bins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEISHU_APP_ID", "cli_a")
    monkeypatch.setenv("FEISHU_APP_SECRET", "s")
    (only_bins / "gh").write_text("#!/bin/sh\n")
    (only_bins / "gh").chmod(0o755)
    catalog = SkillCatalog.discover([("claude", DATA)])
    assert catalog.get("feishu-messaging") is not None and catalog.get("github") is not None


@pytest.mark.parametrize(
    ("task", "skill"),
    [
        ("How much memory and disk space is free on this machine?", "sysinfo"),
        ("What's the weather forecast for London tomorrow?", "weather"),
        ("Merge these two PDF documents into one", "pdf"),
        ("Please commit my staged changes with a good commit message", "git-commit"),
        ("Summarize data.csv: columns and numeric statistics", "csv-summary"),
        ("Update the CHANGELOG for the 1.2 release", "changelog"),
        ("帮我根据本周的提交记录写一份周报", "weekly-report"),
        ("Pretty-print this JSON API response and select the id fields", "json-tools"),
        ("Drive an interactive python session in tmux and capture the pane output", "tmux"),
        ("please /changelog", "changelog"),
        ("/PDF merge a.pdf and b.pdf", "pdf"),
    ],
)
def test_tasks_match_their_skill_first(catalog: SkillCatalog, task: str, skill: str) -> None:
    assert [s.name for s in catalog.match(task)][:1] == [skill]


@pytest.mark.parametrize(
    "task",
    [
        "帮我优化内存占用",  # sysinfo says memory, in English: one topic, no shared keyword
        "Fix the failing unit test in parser.py",
        "This code has issues",  # one GitHub word is not enough
        "rename the variable x to count in main.py",
        "Send the weekly numbers by email",  # feishu-messaging: not user-invocable
        "/feishu-messaging hello",  # nor by /name
        "cat /tmp/weather.txt",  # a path is not an invocation
        "Check open pull requests on GitHub",  # github: gh is missing, so not offered
    ],
)
def test_tasks_that_should_not_match_do_not(catalog: SkillCatalog, task: str) -> None:
    assert catalog.match(task) == []


def test_keywords_are_distinct_stop_word_free_and_chinese_aware() -> None:
    desc = "Query CPU load, memory usage, disk space and running processes."
    assert keyword_hits("the memory of the process", desc) == {"memory", "process"}
    assert not matches("what is the memory", desc)  # one keyword: noise
    assert keyword_hits("浏览器截图", "用浏览器打开网页并截图") == {"浏览器", "截图"}
    assert keyword_hits("浏览器", "用浏览器打开网页") == {"浏览器"}  # one word, one hit
    assert matches("abc", "abc only")  # one keyword ("only" is a stop word): one hit is all
    assert not matches("the only one", "only the one")  # stop words alone never match


def test_invalid_and_shadowed_skills_are_listed_with_the_reason(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for base in (first, second):
        (base / "pdf").mkdir(parents=True)
        (base / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: PDFs.\n---\nx\n")
    (first / "broken").mkdir()
    (first / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    (first / "bad-yaml").mkdir()
    (first / "bad-yaml" / "SKILL.md").write_text("---\nname: [unclosed\n---\n")
    catalog = SkillCatalog.discover([("project", first), ("user", second)])
    problems = {(s.name, s.source): s.problem for s in catalog.statuses}
    assert problems[("pdf", "project")] == ""
    assert problems[("pdf", "user")].startswith("shadowed by project skill")
    assert "has no description" in problems[("broken", "project")]
    assert "not valid YAML" in problems[("bad-yaml", "project")]
    assert [s.name for s in catalog.available()] == ["pdf"]


def test_skill_folders_in_priority_order(root: Path) -> None:
    dirs = skill_dirs(root)
    assert [source for source, _ in dirs] == ["project", "claude", "user"]
    assert dirs[0][1] == root / ".xclaw" / "skills"
    assert dirs[1][1] == root / ".claude" / "skills"
