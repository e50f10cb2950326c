"""``xclaw eval`` end to end: the table, the JSON file, the exit code, redaction, validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from eval_support import MakeDataset, fix_case, fix_script
from typer.testing import CliRunner

from xclaw.cli.eval_cmd import eval_
from xclaw.core.errors import ConfigError
from xclaw.evals import load_dataset
from xclaw.evals.approval import CaseApprover
from xclaw.redact import load_environment_secrets

app = typer.Typer()
app.command("eval")(eval_)
app.command("noop")(lambda: None)  # two commands: typer keeps "eval" as a subcommand

CASE_KEYS = {
    "id", "tags", "model", "status", "run_status", "reason", "failures", "tools_called",
    "tool_calls", "turns", "input_tokens", "output_tokens", "cost_usd", "duration_s",
    "approvals_denied", "session_id", "reply", "workdir", "started_at", "finished_at",
}  # fmt: skip


def _half_passing(make_dataset: MakeDataset) -> Path:
    wrong = fix_script(reply="Gave up.")
    return make_dataset(
        [fix_case("good", "fix.yaml", tags=["smoke"]), fix_case("bad", "wrong.yaml")],
        {"fix.yaml": fix_script(), "wrong.yaml": wrong},
    )


@pytest.mark.parametrize(("threshold", "code"), [(0.5, 0), (0.75, 1)])
def test_exit_code_follows_the_threshold_and_results_are_saved(
    make_dataset: MakeDataset, tmp_path: Path, threshold: float, code: int
) -> None:
    path = _half_passing(make_dataset)
    out = tmp_path / "results.json"
    res = CliRunner().invoke(
        app, ["eval", str(path), "--jobs", "2", "--threshold", str(threshold), "--out", str(out)]
    )
    assert res.exit_code == code, res.output
    assert "good" in res.output and "bad" in res.output and "1/2 = 50%" in res.output
    data = json.loads(out.read_text())
    assert data["schema"] == "xclaw.eval/1" and data["threshold"] == threshold
    summary = data["summary"]
    assert (summary["cases"], summary["passed"], summary["failed"]) == (2, 1, 1)
    assert summary["pass_rate"] == 0.5 and summary["meets_threshold"] is (code == 0)
    assert (summary["input_tokens"], summary["output_tokens"]) == (800, 80)
    assert "800/80" in res.output
    good, bad = data["cases"]
    assert set(good) == CASE_KEYS
    assert (good["id"], good["status"], bad["status"]) == ("good", "passed", "failed")
    assert bad["failures"] == [
        {"code": "REPLY_LACKS_TEXT", "message": "the reply does not contain 'Fixed'"}
    ]
    assert [c["name"] for c in good["tool_calls"]] == ["fs.read", "fs.edit", "terminal.exec"]
    assert not list(tmp_path.glob("*.xclaw-tmp"))  # written atomically, nothing left over


def test_case_and_tag_selection(make_dataset: MakeDataset, tmp_path: Path) -> None:
    path = _half_passing(make_dataset)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["eval", str(path), "--tag", "smoke", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert [c["id"] for c in json.loads(out.read_text())["cases"]] == ["good"]
    res = CliRunner().invoke(app, ["eval", str(path), "--case", "nope"])
    assert res.exit_code == 2 and "EVAL_CASE_NOT_FOUND" in res.output


def test_secrets_never_reach_the_results(
    make_dataset: MakeDataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-eval-value-9f8e7d"
    monkeypatch.setenv("XCLAW_EVAL_TEST_TOKEN", secret)
    load_environment_secrets()
    try:
        script = fix_script(reply=f"Fixed it; the token is {secret}")
        path = make_dataset([fix_case()], {"fix.yaml": script})
        out = tmp_path / "r.json"
        res = CliRunner().invoke(app, ["eval", str(path), "--out", str(out)])
        assert res.exit_code == 0, res.output
        text = out.read_text()
        assert secret not in text and secret not in res.output
        assert "the token is [REDACTED]" in text
    finally:
        monkeypatch.delenv("XCLAW_EVAL_TEST_TOKEN")
        load_environment_secrets()


def test_cases_without_a_model_need_one(make_dataset: MakeDataset) -> None:
    case = fix_case()
    del case["model"]
    res = CliRunner().invoke(app, ["eval", str(make_dataset([case]))])
    assert res.exit_code == 2 and "MODEL_NOT_CONFIGURED" in res.output


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"surprise": 1}, "Extra inputs are not permitted"),
        ({"fixture": "../../etc"}, "outside the dataset folder"),
        ({"fixture": "missing"}, "not an existing folder"),
        ({"model": "openai:gpt-4.1"}, "may only pin a scripted model"),
        ({"id": "bad id!"}, "cases.0.id"),
        ({"assertions": {"reply": {"regex": ["("]}}}, "invalid regex"),
        ({"setup": [[]]}, "cases.0.setup.0"),
    ],
)
def test_invalid_datasets_are_refused_before_anything_runs(
    make_dataset: MakeDataset, change: dict[str, object], needle: str
) -> None:
    case = fix_case()
    case.update(change)
    with pytest.raises(ConfigError) as err:
        load_dataset(make_dataset([case], {"fix.yaml": fix_script()}))
    assert err.value.code == "EVAL_DATASET_INVALID" and needle in err.value.message


def test_duplicate_case_ids_are_refused(make_dataset: MakeDataset) -> None:
    with pytest.raises(ConfigError, match="appears twice"):
        load_dataset(make_dataset([fix_case(), fix_case()], {"fix.yaml": fix_script()}))


async def test_the_case_approver_grants_only_declared_rules() -> None:
    from xclaw.core.tooling import ApprovalRequest, Decision, Grant, Risk

    def ask(grant: Grant | None) -> ApprovalRequest:
        return ApprovalRequest("terminal.exec", "", Decision("ask", Risk.EXECUTE, grant=grant))

    approver = CaseApprover("deny", ["program python3"])
    assert await approver.approve(ask(Grant("command", "program python3"))) == "once"
    assert await approver.approve(ask(Grant("command", "program node"))) == "deny"
    assert await approver.approve(ask(Grant("path", "program python3"))) == "deny"
    assert await approver.approve(ask(None)) == "deny"
    assert len(approver.denied) == 3
    assert await CaseApprover("allow").approve(ask(None)) == "once"
    with pytest.raises(ValueError):
        CaseApprover("ask")  # type: ignore[arg-type]


def test_a_bad_model_spec_stops_before_any_case_runs(make_dataset: MakeDataset) -> None:
    case = fix_case()
    del case["model"]
    res = CliRunner().invoke(app, ["eval", str(make_dataset([case])), "--model", "nosuch:thing"])
    assert res.exit_code == 2, res.output
    assert "MODEL" in res.output and "xclaw eval" not in res.output  # no table was printed
