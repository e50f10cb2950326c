"""A throwaway dataset folder: a tiny fixture project, scripts and a dataset file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from eval_support import BUGGY, TESTS, MakeDataset


@pytest.fixture
def make_dataset(tmp_path: Path) -> MakeDataset:
    """``make_dataset(cases, scripts={name: turns})`` -> the dataset file's path."""
    folder = tmp_path / "ds"
    proj = folder / "proj"
    proj.mkdir(parents=True)
    (proj / "calc.py").write_text(BUGGY)
    (proj / "test_calc.py").write_text(TESTS)

    def make(cases: list[dict[str, Any]], scripts: dict[str, list[Any]] | None = None) -> Path:
        for name, turns in (scripts or {}).items():
            (folder / name).write_text(yaml.safe_dump({"turns": turns}))
        path = folder / "dataset.yaml"
        path.write_text(yaml.safe_dump({"name": "t", "cases": cases}, sort_keys=False))
        return path

    return make
