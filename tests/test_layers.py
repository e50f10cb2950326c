"""The layer contracts `make lint` checks (import-linter, `[tool.importlinter]` in pyproject):
they hold on the tree, and an upward import, a face importing a face or a package cycle
breaks them."""

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
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("xclaw/core/errors.py", "import xclaw.cli.app", "xclaw.core is not allowed to import"),
        ("xclaw/tools/fs.py", "import xclaw.coding.agent", "xclaw.tools is not allowed"),
        ("xclaw/page/__init__.py", "import xclaw.patch.engine", "xclaw.page is not allowed"),
        # the exceptions issue 24 removed, back: the tree's agents come from compose, the
        # isolated workspaces' git from the worktree ability
        ("xclaw/agents/children.py", "import xclaw.coding.agent", "xclaw.agents is not allowed"),
        ("xclaw/agents/workspace.py", "import xclaw.patch.worktree", "xclaw.agents is not"),
        ("xclaw/worktree/gitio.py", "import xclaw.patch.job", "xclaw.worktree is not allowed"),
        # the cycles issue 24 removed, back: the abilities' order refuses them
        ("xclaw/policy/engine.py", "import xclaw.tools.base", "xclaw.policy is not allowed"),
        ("xclaw/sandbox/host.py", "import xclaw.tools.exec", "xclaw.sandbox is not allowed"),
        ("xclaw/policy/arguments.py", "import xclaw.sandbox.protect", "xclaw.policy is not"),
        # a cycle inside one layer (tools use the browser): only the cycle contract sees it
        ("xclaw/browser/__init__.py", "import xclaw.tools.base", "No cycles are allowed in xclaw"),
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
