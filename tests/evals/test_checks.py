"""File checks and the overlay of hidden checks on a project a model had in its hands."""

from __future__ import annotations

from pathlib import Path

import pytest

from xclaw.core.errors import PolicyDenied
from xclaw.evals.checks import overlay


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "checks"
    (src / "tests").mkdir(parents=True, exist_ok=True)
    (src / "tests" / "test_hidden.py").write_text("hidden\n")
    (src / "a.txt").write_text("from checks\n")
    return src


def test_overlay_adds_and_replaces_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("old\n")
    overlay(_source(tmp_path), project)
    assert (project / "a.txt").read_text() == "from checks\n"
    assert (project / "tests" / "test_hidden.py").read_text() == "hidden\n"


def test_overlay_never_writes_through_a_planted_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep me\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PolicyDenied, match="symbolic link"):  # a file link out: refused
        overlay(_source(tmp_path), project)
    (project / "a.txt").unlink()
    (project / "tests").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PolicyDenied, match="symbolic link"):  # a folder link out: refused
        overlay(_source(tmp_path), project)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "keep me\n"


def test_overlay_replaces_a_link_inside_the_project_instead_of_writing_through_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "real.txt").write_text("real\n")
    (project / "a.txt").symlink_to(project / "real.txt")
    overlay(_source(tmp_path), project)
    assert (project / "real.txt").read_text() == "real\n"
    assert not (project / "a.txt").is_symlink()
    assert (project / "a.txt").read_text() == "from checks\n"
