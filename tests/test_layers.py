"""The layer contracts `make lint` checks (import-linter, `[tool.importlinter]` in pyproject):
they hold on the tree, and an upward import or a face importing a face breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the copy of ``src`` in ``tree``, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}  # before the editable install
    return subprocess.run(
        [str(LINT), "--no-cache", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("layers")
    shutil.copytree(REPO / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _add_import(tree: Path, module: str, line: str) -> str:
    path = tree / "src" / module
    before = path.read_text()
    path.write_text(before + f"\n{line}  # noqa\n")
    return before


def test_the_tree_keeps_its_contracts(tree: Path) -> None:
    done = lint(tree)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("xclaw/core/errors.py", "import xclaw.cli.app", "xclaw.core is not allowed to import"),
        ("xclaw/tools/fs.py", "import xclaw.coding.agent", "xclaw.tools is not allowed"),
        ("xclaw/page/__init__.py", "import xclaw.patch.engine", "xclaw.page is not allowed"),
    ],
)
def test_an_upward_or_sideways_import_breaks_the_lint(
    tree: Path, module: str, line: str, broken: str
) -> None:
    before = _add_import(tree, module, line)
    try:
        done = lint(tree)
    finally:
        (tree / "src" / module).write_text(before)
    assert done.returncode != 0, done.stdout[-3000:]
    assert broken in done.stdout, done.stdout[-3000:]
