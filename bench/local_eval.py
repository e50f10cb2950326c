"""xclaw against a peer harness on the same local model server, the same cases, the same checks.

    .venv/bin/python bench/local_eval.py [--model qwen2.5-coder-1.5b] [--case ID ...]

One llama.cpp server (``local:MODEL``, started through xclaw's ``ServerPool``) serves both:

* xclaw: ``xclaw eval evals/coding --model local:MODEL`` run in this process (the eval's
  models take the pool's server, so nothing is loaded twice);
* smolagents' ``ToolCallingAgent`` with its ``OpenAIServerModel`` pointed at the same server,
  given each case's task and three tools equivalent to xclaw's fs.read / fs.write /
  terminal.exec, in its own copy of the fixture, with the same step budget.

Both are judged by the dataset's own file and command assertions and hidden ``checks/``
(``run_static_checks``, what ``xclaw eval`` runs after the agent). Printed side by side per
case: passed, input and output tokens, seconds; then pass rate and totals. Cases run one after
the other, xclaw then the peer, each result also on stderr as a JSON line as soon as it is
known. ``--case`` picks a subset (on 2 cores a case takes minutes), ``--max-turns`` caps both
harnesses' steps; ``--out`` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "evals" / "coding" / "dataset.yaml"


@dataclass
class Row:
    case: str
    harness: str
    passed: bool
    input_tokens: int | None
    output_tokens: int | None
    seconds: float
    note: str = ""


def xclaw_row(model: str, case_id: str, max_turns: int | None) -> Row:
    """One case through ``xclaw eval`` (its runner, in this process)."""
    from xclaw.evals import run_dataset
    from xclaw.evals.runner import EvalOptions

    loaded = selected([case_id], max_turns)
    report = asyncio.run(run_dataset(loaded, EvalOptions(model=f"local:{model}")))
    r = report.cases[0]
    return Row(
        r.id,
        "xclaw",
        r.status == "passed",
        r.input_tokens,
        r.output_tokens,
        r.duration_s,
        _failure_note(r.failures),
    )


def selected(cases: list[str], max_turns: int | None) -> Any:
    """The dataset with only ``cases`` (all when empty), each with ``max_turns`` if given."""
    from xclaw.evals.dataset import load_dataset

    loaded = load_dataset(DATASET)
    chosen = [c for c in loaded.cases if not cases or c.id in cases]
    if max_turns is not None:
        chosen = [c.model_copy(update={"max_turns": max_turns}) for c in chosen]
    loaded.dataset = loaded.dataset.model_copy(update={"cases": chosen})
    return loaded


def smolagents_row(base_url: str, model: str, case_id: str, max_turns: int | None) -> Row:
    loaded = selected([case_id], max_turns)
    case = loaded.cases[0]
    return _smolagents_case(loaded, case, base_url, model, case.max_turns)


def _smolagents_case(loaded: Any, case: Any, base_url: str, model: str, steps: int) -> Row:
    from smolagents import OpenAIServerModel, ToolCallingAgent

    from xclaw.evals.runner import EvalOptions, run_static_checks

    fixture = loaded.resolve(case.fixture, what="fixture", folder=True)
    base = Path(tempfile.mkdtemp(prefix=f"smol-{case.id}-"))
    project = base / "project"
    shutil.copytree(fixture, project, symlinks=True)
    llm = OpenAIServerModel(model_id=model, api_base=f"{base_url}/v1", api_key="unused")
    agent = ToolCallingAgent(
        tools=project_tools(project), model=llm, max_steps=steps, verbosity_level=0
    )
    started = time.monotonic()
    note = ""
    try:
        agent.run(case.task)
    except Exception as err:  # noqa: BLE001 - a peer's crash is that case's failure
        note = f"{type(err).__name__}: {err}"[:80]
    seconds = time.monotonic() - started
    usage = agent.monitor.get_total_token_counts()
    failures = asyncio.run(run_static_checks(loaded, case, project, EvalOptions()))
    shutil.rmtree(base, ignore_errors=True)
    return Row(
        case.id,
        "smolagents",
        not failures,
        usage.input_tokens,
        usage.output_tokens,
        seconds,
        note or _failure_note(failures),
    )


def _failure_note(failures: list[Any]) -> str:
    return "; ".join(f"{f.code}: {f.message}" for f in failures)[:160]


def project_tools(project: Path) -> list[Any]:
    """read / write / run inside ``project``, like xclaw's fs.read, fs.write, terminal.exec."""
    from smolagents import tool

    def inside(path: str) -> Path:
        target = (project / path).resolve()
        if not target.is_relative_to(project.resolve()):
            raise ValueError(f"{path} is outside the project")
        return target

    @tool
    def read_file(path: str) -> str:
        """Read a text file of the project.

        Args:
            path: File path relative to the project root.
        """
        return inside(path).read_text(encoding="utf-8")

    @tool
    def write_file(path: str, content: str) -> str:
        """Create a file or replace its whole content.

        Args:
            path: File path relative to the project root.
            content: The complete new content of the file.
        """
        target = inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"

    @tool
    def run_command(program: str, args: list[str]) -> str:
        """Run a program with arguments (no shell) in the project root and return its output.

        Args:
            program: Program name, e.g. python3.
            args: Its arguments, one item each.
        """
        done = subprocess.run(  # noqa: S603 - the peer's tool, in a throwaway copy
            [program, *args], cwd=project, capture_output=True, text=True, timeout=120
        )
        return f"exit code {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"

    return [read_file, write_file, run_command]


def print_table(rows: list[Row]) -> None:
    by_case: dict[str, dict[str, Row]] = {}
    for row in rows:
        by_case.setdefault(row.case, {})[row.harness] = row
    harnesses = ["xclaw", "smolagents"]
    print(f"{'case':22}" + "".join(f"{h:>36}" for h in harnesses))
    print(f"{'':22}" + f"{'pass   tokens in/out   s/case':>36}" * len(harnesses))
    for case, cells in by_case.items():
        line = f"{case:22}"
        for h in harnesses:
            r = cells.get(h)
            line += f"{'-':>36}" if r is None else f"{_cell(r):>36}"
        print(line)
    print()
    for h in harnesses:
        mine = [r for r in rows if r.harness == h]
        if not mine:
            continue
        passed = sum(r.passed for r in mine)
        tokens_in = sum(r.input_tokens or 0 for r in mine)
        tokens_out = sum(r.output_tokens or 0 for r in mine)
        per_case = sum(r.seconds for r in mine) / len(mine)
        print(
            f"{h:12} pass rate {passed}/{len(mine)} ({passed / len(mine):.0%})  tokens in "
            f"{tokens_in} out {tokens_out}  {per_case:.0f} s/case"
        )
    for r in rows:
        if r.note and not r.passed:
            print(f"  {r.harness} {r.case}: {r.note}")


def _emit(row: Row) -> None:
    """Each result on stderr as it comes: a full run takes hours on 2 cores."""
    print(json.dumps(asdict(row)), file=sys.stderr, flush=True)


def _cell(r: Row) -> str:
    ok = "yes" if r.passed else "no"
    return f"{ok:4} {r.input_tokens or 0:>7}/{r.output_tokens or 0:<6} {r.seconds:6.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--case", action="append", default=[], help="a case id (repeatable)")
    parser.add_argument("--max-turns", type=int, default=None, help="override every case's")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--skip-xclaw", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from xclaw.models.local.model import local_model
    from xclaw.models.local.server import default_pool

    probe = local_model(args.model)  # the settings every local:MODEL of this process uses
    pool = default_pool()
    server = asyncio.run(pool.acquire(probe.server_settings))  # shared by both harnesses
    url = server.base_url
    assert url is not None
    started = time.monotonic()
    try:
        rows = []
        for case_id in [c.id for c in selected(args.case, None).cases]:
            if not args.skip_xclaw:
                rows.append(xclaw_row(args.model, case_id, args.max_turns))
                _emit(rows[-1])
            if not args.skip_peer:
                rows.append(smolagents_row(url, args.model, case_id, args.max_turns))
                _emit(rows[-1])
    finally:
        pool.release(server)
        pool.stop_all()
    print(f"\nlocal model {args.model} on one server ({url}), {time.monotonic() - started:.0f}s")
    print(f"cases: {', '.join(args.case) or 'all of evals/coding'}\n")
    print_table(rows)
    if args.out is not None:
        args.out.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
