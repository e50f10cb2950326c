"""``xclaw eval``: measure a model on a dataset of coding tasks (seed 003 ch. 12).

load_dataset(path) -> LoadedDataset      the YAML file, validated (evals.dataset)
run_dataset(loaded, EvalOptions) -> EvalReport   cases in parallel, isolated (evals.runner)
write_results / print_report             JSON (atomic, redacted) and a table (evals.results)
"""

from xclaw.evals.dataset import Case, Dataset, LoadedDataset, load_dataset
from xclaw.evals.results import CaseResult, EvalReport, print_report, write_results
from xclaw.evals.runner import EvalOptions, run_case, run_dataset, run_static_checks

__all__ = [
    "Case",
    "CaseResult",
    "Dataset",
    "EvalOptions",
    "EvalReport",
    "LoadedDataset",
    "load_dataset",
    "print_report",
    "run_case",
    "run_dataset",
    "run_static_checks",
    "write_results",
]
