"""The shipped dataset is sane: every case fails untouched and passes with its reference
solution, on its file and command assertions (no agent: fixture + assertions only)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from xclaw.evals import EvalOptions, load_dataset, run_static_checks
from xclaw.evals.checks import overlay

DATASET = Path(__file__).resolve().parents[2] / "evals" / "coding" / "dataset.yaml"
LOADED = load_dataset(DATASET)


def test_dataset_has_enough_cases_and_each_checks_something() -> None:
    assert 10 <= len(LOADED.cases) <= 15
    for case in LOADED.cases:
        a = case.assertions
        assert a.commands, f"{case.id}: no command assertion runs the project's checks"
        assert case.solution is not None, f"{case.id}: no reference solution"
        assert case.model is None, f"{case.id}: a shipped case must not pin a scripted model"


@pytest.mark.parametrize("case", LOADED.cases, ids=lambda c: c.id)
async def test_case_fails_untouched_and_passes_solved(case, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = [p for p in case.requires if shutil.which(p) is None]
    assert not missing, f"{case.id} needs {missing}: `make deps` installs them"
    options = EvalOptions()
    fixture = LOADED.resolve(case.fixture, what="fixture", folder=True)
    untouched, solved = tmp_path / "untouched" / "project", tmp_path / "solved" / "project"
    shutil.copytree(fixture, untouched, symlinks=True)
    shutil.copytree(fixture, solved, symlinks=True)
    assert case.solution is not None
    overlay(LOADED.resolve(case.solution, what="solution", folder=True), solved)
    # Both at once: the time goes to starting interpreters, not to the CPU.
    before, after = await asyncio.gather(
        run_static_checks(LOADED, case, untouched, options),
        run_static_checks(LOADED, case, solved, options),
    )
    assert before, f"{case.id} passes without any work: its assertions check nothing"
    assert after == [], f"{case.id}: the reference solution fails: {after}"


async def test_a_shipped_case_is_solved_through_the_agent_with_a_scripted_model(
    tmp_path: Path,
) -> None:
    """The dataset, the runner and the coding agent together (the model is the only fake)."""
    from xclaw.evals import run_case

    script = Path(__file__).parent / "data" / "solve_pagination.yaml"
    case = next(c for c in LOADED.cases if c.id == "fix-pagination")
    options = EvalOptions(model=f"scripted:{script}", work_root=tmp_path)
    result = await run_case(LOADED, case, options)
    assert result.status == "passed", result.failures
    assert result.tools_called == ["fs.read", "fs.edit", "terminal.exec"]
