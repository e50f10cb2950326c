"""``xclaw eval DATASET.yaml --model M``: a model measured on a dataset of coding tasks.

Exit codes: 0 the pass rate meets ``--threshold``, 1 below it, 2 the dataset or an option is
invalid (nothing ran).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from xclaw.cli.common import ProtocolOption, console, err_console, fail
from xclaw.cli.options import SandboxOption
from xclaw.core.errors import ConfigError, XclawError

if TYPE_CHECKING:  # the eval modules load the agent: imported when the command runs
    from xclaw.evals import EvalOptions, EvalReport
    from xclaw.evals.dataset import LoadedDataset


def eval_(
    dataset: Annotated[Path, typer.Argument(help="The dataset YAML file.")],
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="provider:model (any --model spec)")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, max=64, help="Cases at once.")] = 1,
    approval: Annotated[
        Literal["deny", "allow"],
        typer.Option(
            "--approval",
            help="deny (default): every policy ask is refused except the case's `allow` "
            "rules; allow: every ask is approved once.",
        ),
    ] = "deny",
    threshold: Annotated[
        float, typer.Option("--threshold", min=0.0, max=1.0, help="Exit 1 below this pass rate.")
    ] = 0.8,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the results as JSON here.")
    ] = None,
    sandbox: SandboxOption = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", help="Run only this case id (repeatable).")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Run only cases with this tag (repeatable).")
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep each case's folder (copy, store) to inspect.")
    ] = False,
    work_dir: Annotated[
        Path | None,
        typer.Option("--work-dir", help="Make the case folders here (default: the temp dir)."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Override the provider's base URL.")
    ] = None,
    protocol: ProtocolOption = None,
) -> None:
    """Run a dataset's cases against a model in isolated copies; print and save the results."""
    from xclaw.evals import EvalOptions, load_dataset, print_report, write_results

    try:
        from xclaw.sandbox import requested_mode

        requested_mode(sandbox)  # an unknown --sandbox stops here, not in every case
        loaded = load_dataset(dataset)
        _select(loaded, case or [], tag or [])
        if model is None and any(c.model is None for c in loaded.cases):
            raise ConfigError(
                "No model was given for the cases that do not pin one.",
                code="MODEL_NOT_CONFIGURED",
                hint="Pass --model provider:model (see `xclaw models list`).",
            )
    except XclawError as err:
        fail(err)
    if approval == "allow":
        err_console.print(
            "[bold yellow]warning:[/] --approval allow approves every request of every case."
        )
    mode: Literal["deny", "allow"] = approval
    try:
        from xclaw.compose.settings import resolve_config

        config = resolve_config(loaded.root)  # once: every case follows it
    except XclawError as err:
        fail(err)
    options = EvalOptions(model, jobs, mode, sandbox, keep, base_url, work_dir, protocol, config)
    try:
        report = asyncio.run(_checked_run(loaded, options))
    except XclawError as err:  # the model spec or its key: refused before any case ran
        fail(err)
    print_report(console, report, threshold)
    if out is not None:
        write_results(report, out, threshold)
        console.print(f"[dim]results: {out}[/]")
    raise typer.Exit(0 if report.pass_rate >= threshold else 1)


async def _checked_run(loaded: LoadedDataset, options: EvalOptions) -> EvalReport:
    """Resolve ``--model`` once first, so a bad spec or a missing key stops everything."""
    from xclaw.evals import run_dataset
    from xclaw.models.resolve import resolve_model

    if options.model is not None:
        probe = resolve_model(
            options.model,
            base_url=options.base_url,
            project=loaded.root,
            protocol=options.protocol,
            model_settings=options.config.models if options.config is not None else None,
        )
        await probe.aclose()
    return await run_dataset(loaded, options)


def _select(loaded: LoadedDataset, ids: list[str], tags: list[str]) -> None:
    """Keep the cases named by ``--case`` and tagged by ``--tag`` (both: either matches)."""
    if not ids and not tags:
        return
    unknown = set(ids) - {c.id for c in loaded.cases}
    if unknown:
        raise ConfigError(
            f"The dataset has no case {', '.join(sorted(unknown))}.",
            code="EVAL_CASE_NOT_FOUND",
            hint="Case ids are the `id:` fields of the dataset.",
        )
    chosen = [c for c in loaded.cases if c.id in ids or set(tags) & set(c.tags)]
    if not chosen:
        raise ConfigError(
            "No case matches the --case/--tag selection.",
            code="EVAL_CASE_NOT_FOUND",
            hint="Check the tags in the dataset.",
        )
    loaded.dataset = loaded.dataset.model_copy(update={"cases": chosen})
