"""The conformance harness (conformance/run.py) on a few real recordings, so a regression in an
adapter shows up in the suite; ``make conformance`` replays the whole corpus.

Also checks the harness itself can fail: a changed expectation must be reported, a known
difference excuses only the field it names, and missing recordings are an error, never a pass.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
# One recording per wire API: chat streaming with tool arguments split across chunks,
# Anthropic thinking followed by a tool call (its signed thinking sent back on turn 2), and
# Responses streaming with reasoning and a tool call.
SMOKE_FILES = (
    "openai/test_run_stream_sync_streams_real_model.yaml",
    "anthropic/test_anthropic_tool_with_thinking.yaml",
    "openai/test_openai_responses_phase_streamed_on_part_start.yaml",
)
# The Anthropic SDK warns about retired model names; recordings keep the names they used.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def _load_harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", REPO / "conformance/run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


harness = _load_harness()


@pytest.fixture(scope="module")
def corpus() -> Path:
    root: Path | None = harness.find_recordings()
    if root is None:
        pytest.fail(f"wire recordings not found at {harness.recordings_place()}")
    return root


def test_the_corpus_is_the_repositorys_own_copy() -> None:
    """With no WIRE_RECORDINGS the harness replays conformance/recordings, nothing outside
    the repository; every file is there as index.json describes it (sha256), with its
    origin and licence beside it."""
    import hashlib

    root = harness.find_recordings({})
    assert root == REPO / "conformance" / "recordings"
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    assert len(index["files"]) == 31
    for entry in index["files"]:
        data = (root / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert index["source"]["commit"] in readme and "MIT" in readme
    assert "Pydantic Services Inc." in (root / "LICENSE").read_text(encoding="utf-8")


def _copy_corpus(corpus: Path, dest: Path, file: str, edit: Any) -> Path:
    """A one-file corpus in ``dest`` whose index entry ``edit`` has changed."""
    index = json.loads((corpus / "index.json").read_text(encoding="utf-8"))
    entry = next(e for e in index["files"] if e["file"] == file)
    edit(entry)
    (dest / file).parent.mkdir(parents=True)
    shutil.copyfile(corpus / file, dest / file)
    (dest / "index.json").write_text(json.dumps({**index, "files": [entry]}), encoding="utf-8")
    return dest


def test_recorded_exchanges_decode_as_recorded(corpus: Path) -> None:
    index = json.loads((corpus / "index.json").read_text(encoding="utf-8"))
    wanted = sum(len(e["interactions"]) for e in index["files"] if e["file"] in SMOKE_FILES)
    results = harness.run_corpus(corpus, SMOKE_FILES, known=[])
    assert len(results) == wanted == 6
    assert [(r.name, r.failures) for r in results if r.failures] == []
    # The rebuilt requests carry what was recorded: the second turns replay the tool calls,
    # results and (Anthropic) signed thinking without a difference.
    assert [(r.name, r.request_diffs) for r in results if r.request_diffs] == []


def test_a_changed_expectation_is_reported(corpus: Path, tmp_path: Path) -> None:
    file = "openai/test_run_stream_sync_streams_real_model.yaml"

    def edit(entry: dict[str, Any]) -> None:
        first = entry["interactions"][0]["expected"]
        first["tool_calls"][0]["arguments"] = {"country": "France"}
        first["usage"]["completion_tokens"] += 1
        entry["interactions"][1]["expected"]["stop_reason"] = "length"

    root = _copy_corpus(corpus, tmp_path, file, edit)
    first, second = harness.run_corpus(root, known=[])
    assert [f.split(":", 1)[0] for f in first.failures] == ["tool_calls", "usage"]
    assert "'country': 'UK'" in first.failures[0]
    assert second.failures == ["stop_reason: expected 'length' (recorded 'length'), got 'stop'"]


def test_a_known_difference_excuses_only_its_field(corpus: Path, tmp_path: Path) -> None:
    file = "openai/test_run_stream_sync_streams_real_model.yaml"

    def edit(entry: dict[str, Any]) -> None:
        entry["interactions"][1]["expected"]["text"] = "Paris"
        entry["interactions"][1]["expected"]["stop_reason"] = "length"

    root = _copy_corpus(corpus, tmp_path, file, edit)
    known = [{"file": file, "interaction": 1, "field": "text", "reason": "test"}]
    _, second = harness.run_corpus(root, known=known)
    assert [f.split(":", 1)[0] for f in second.failures] == ["stop_reason"]
    assert len(second.known) == 1 and second.known[0].endswith("[known: test]")


def test_missing_recordings_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WIRE_RECORDINGS", str(tmp_path / "nowhere"))
    assert harness.main([]) == 2
    assert "no wire recordings" in capsys.readouterr().err


def test_request_differences_name_what_was_dropped() -> None:
    from _rebuild import request_differences

    recorded = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
        ],
        "max_completion_tokens": 5,
    }
    sent = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    diffs = request_differences("chat_completions", recorded, sent)
    assert diffs == [
        "settings: recorded {'max_completion_tokens': 5}, sent {'max_tokens': 5}",
        "conversation: recorded 2 entries, sent 1",
    ]
