"""The eval runner on scripted cases: real agent loop, tools, sandbox, policy and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import BUGGY, FIXED, PYTHON, UNITTEST, MakeDataset, fix_case, fix_script

from xclaw.evals import EvalOptions, load_dataset, run_dataset
from xclaw.evals.results import CaseResult


async def _run(path: Path, jobs: int = 1, **options: Any) -> list[CaseResult]:
    work = path.parent.parent / "work"  # inside the test's tmp_path: kept folders go with it
    work.mkdir(exist_ok=True)
    report = await run_dataset(
        load_dataset(path), EvalOptions(jobs=jobs, work_root=work, **options)
    )
    return report.cases


def _codes(result: CaseResult) -> list[str]:
    return [f.code for f in result.failures]


async def test_a_solved_case_passes_and_the_dataset_fixture_stays_untouched(
    make_dataset: MakeDataset,
) -> None:
    path = make_dataset([fix_case()], {"fix.yaml": fix_script()})
    [res] = await _run(path, keep=True)
    assert res.failures == [] and res.status == "passed"
    assert res.run_status == "completed"
    assert res.tools_called == ["fs.read", "fs.edit", "terminal.exec"]
    assert [c["ok"] for c in res.tool_calls] == [True, True, True]
    assert res.turns == 4 and res.reply.startswith("Fixed")
    assert (res.input_tokens, res.output_tokens, res.cost_usd) == (400, 40, None)
    assert (path.parent / "proj" / "calc.py").read_text() == BUGGY  # worked on a copy
    assert res.workdir is not None
    assert (Path(res.workdir) / "project" / "calc.py").read_text() == FIXED


async def test_a_wrong_result_fails_its_file_assertion(make_dataset: MakeDataset) -> None:
    script = [
        {
            "tool_calls": [
                {"name": "fs.write", "arguments": {"path": "answer.txt", "content": "41"}}
            ]
        },
        {"text": "Done."},
    ]
    case = {
        "id": "answer",
        "task": "Put the answer to the question into answer.txt.",
        "fixture": "proj",
        "model": "scripted:answer.yaml",
        "assertions": {
            "files": [{"path": "answer.txt", "contains": ["42"]}],
            "reply": {"contains": ["Done"]},
        },
    }
    [res] = await _run(make_dataset([case], {"answer.yaml": script}))
    assert res.status == "failed" and res.run_status == "completed"
    assert [f.to_dict() for f in res.failures] == [
        {"code": "FILE_LACKS_TEXT", "message": "answer.txt does not contain '42'"}
    ]


async def test_a_forbidden_tool_and_a_missing_expected_tool_fail(
    make_dataset: MakeDataset,
) -> None:
    script = [{"tool_calls": [{"name": "fs.list", "arguments": {}}]}, {"text": "Looked."}]
    case = {
        "id": "look",
        "task": "Look around.",
        "fixture": "proj",
        "model": "scripted:look.yaml",
        "expected_tools": ["terminal.exec"],
        "forbidden_tools": ["fs.l*"],
    }
    [res] = await _run(make_dataset([case], {"look.yaml": script}))
    assert res.status == "failed"
    assert _codes(res) == ["EXPECTED_TOOL_NOT_CALLED", "FORBIDDEN_TOOL_CALLED"]
    assert "fs.list was called" in res.failures[1].message


async def test_a_case_over_its_time_is_stopped_and_fails(make_dataset: MakeDataset) -> None:
    script = [
        {
            "tool_calls": [
                {"name": "terminal.exec", "arguments": {"program": "sleep", "argv": ["30"]}}
            ]
        },
        {"text": "never reached"},
    ]
    case = {
        "id": "slow",
        "task": "Wait.",
        "fixture": "proj",
        "model": "scripted:slow.yaml",
        "allow": ["program sleep"],
        "timeout_s": 1.5,
    }
    [res] = await _run(make_dataset([case], {"slow.yaml": script}))
    assert _codes(res) == ["EVAL_CASE_TIMEOUT"]
    assert res.tools_called == ["terminal.exec"] and res.run_status is None
    assert res.duration_s < 20  # stopped, not waited out (sleep 30)


async def test_a_crashing_setup_is_a_structured_failure_and_the_agent_never_runs(
    make_dataset: MakeDataset,
) -> None:
    setup = [PYTHON, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]
    path = make_dataset([fix_case(setup=[setup])], {"fix.yaml": fix_script()})
    [res] = await _run(path)
    assert _codes(res) == ["EVAL_SETUP_FAILED"]
    assert "exited with code 3" in res.failures[0].message
    assert "boom" in res.failures[0].message
    assert res.tools_called == [] and res.run_status is None


def _marker_script(value: str) -> list[Any]:
    return [
        {
            "tool_calls": [
                {"name": "fs.write", "arguments": {"path": "marker.txt", "content": value}}
            ]
        },
        {
            "tool_calls": [
                {"name": "terminal.exec", "arguments": {"program": "sleep", "argv": ["0.6"]}}
            ]
        },
        {"tool_calls": [{"id": "r", "name": "fs.read", "arguments": {"path": "marker.txt"}}]},
        {"text": "marker: {{result:r.data.content}}"},
    ]


def _marker_case(case_id: str, value: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "task": "Write marker.txt.",
        "fixture": "proj",
        "model": f"scripted:{case_id}.yaml",
        "allow": ["program sleep"],
        "assertions": {
            "files": [{"path": "marker.txt", "contains": [value]}],
            "reply": {"contains": [value]},
        },
    }


@pytest.mark.parametrize("jobs", [1, 2])
async def test_cases_run_in_parallel_each_in_its_own_copy_and_store(
    make_dataset: MakeDataset, jobs: int
) -> None:
    path = make_dataset(
        [_marker_case("a", "alpha-marker"), _marker_case("b", "bravo-marker")],
        {"a.yaml": _marker_script("alpha-marker"), "b.yaml": _marker_script("bravo-marker")},
    )
    a, b = await _run(path, jobs=jobs, keep=True)
    assert (a.status, b.status) == ("passed", "passed"), (a.failures, b.failures)
    overlap = a.started_at < b.finished_at and b.started_at < a.finished_at
    assert overlap is (jobs == 2)
    assert a.workdir != b.workdir and a.session_id != b.session_id
    for res in (a, b):
        assert res.workdir is not None
        store = Path(res.workdir) / "store" / "xclaw.db"
        assert store.is_file() and res.session_id is not None
        assert res.session_id.encode() in store.read_bytes()
    assert (
        b.session_id is not None
        and b.session_id.encode() not in (Path(a.workdir or "") / "store" / "xclaw.db").read_bytes()
    )
    assert not (path.parent / "proj" / "marker.txt").exists()


async def test_risky_commands_are_denied_unless_the_case_allows_them(
    make_dataset: MakeDataset,
) -> None:
    script = [
        {
            "tool_calls": [
                {"name": "terminal.exec", "arguments": {"program": "rm", "argv": ["-f", "calc.py"]}}
            ]
        },
        {"text": "Removed."},
    ]
    base = {
        "task": "Delete calc.py.",
        "fixture": "proj",
        "assertions": {"files": [{"path": "calc.py", "exists": False}]},
    }
    cases = [
        {**base, "id": "denied", "model": "scripted:rm.yaml"},
        {**base, "id": "allowed", "model": "scripted:rm.yaml", "allow": ["rm"]},
    ]
    denied, allowed = await _run(make_dataset(cases, {"rm.yaml": script}))
    assert "FILE_PRESENT" in _codes(denied)
    assert denied.approvals_denied and "rm -f calc.py" in denied.approvals_denied[0]
    assert denied.tool_calls[0]["error_code"] == "APPROVAL_DENIED"
    assert allowed.status == "passed", allowed.failures
    # --approval allow approves every ask, case rules or not.
    [_, everything] = await _run(make_dataset(cases, {"rm.yaml": script}), approval="allow")
    assert everything.status == "passed"


async def test_a_case_needing_a_missing_program_is_skipped(make_dataset: MakeDataset) -> None:
    path = make_dataset(
        [fix_case(requires=["no-such-program-xclaw"]), fix_case("fix2")],
        {"fix.yaml": fix_script()},
    )
    report = await run_dataset(load_dataset(path), EvalOptions(work_root=path.parent))
    assert [c.status for c in report.cases] == ["skipped", "passed"]
    assert report.pass_rate == 1.0


async def test_a_command_assertion_reports_the_failing_output(make_dataset: MakeDataset) -> None:
    script = [{"text": "Nothing to do."}]
    case = fix_case(script="idle.yaml", task="Look at calc.py.", expected_tools=[])
    case["assertions"]["reply"] = {}
    [res] = await _run(make_dataset([case], {"idle.yaml": script}))
    assert _codes(res) == ["COMMAND_ASSERTION_FAILED"]
    assert "AssertionError: 9 != 8" in res.failures[0].message
    assert UNITTEST[0] in res.failures[0].message
