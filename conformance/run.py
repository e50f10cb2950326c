#!/usr/bin/env python3
"""Replay real recorded provider traffic through xclaw's wire adapters and compare outcomes.

Each interaction of each cassette in the recorded corpus (recordings/, see its README.md) is served
by a local HTTP server exactly as recorded — status, content type, JSON bodies rebuilt with
``json.dumps(parsed_body)``, SSE bodies verbatim, one chunk per event — to the adapter for its
API, given an xclaw request rebuilt from the recorded request body. What the adapter yields is
decoded into text, tool calls, stop reason, usage, reasoning and errors and compared with the
interaction's ``expected`` outcome. Differences in the request xclaw sends are reported, never
failed on.

    .venv/bin/python conformance/run.py [-v] [--only SUBSTRING ...]

Exit status: 0 when every interaction passes (or differs only as listed, with a reason, in
``known_differences.yaml``), 1 when one fails, 2 when the recordings cannot be found.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO / "tests" / "models")]  # _rebuild, and the test server

from _checks import Outcome, compare  # noqa: E402
from _rebuild import rebuild_request, request_differences  # noqa: E402
from wire_server import WireServer  # noqa: E402

from xclaw.core.model import Model  # noqa: E402
from xclaw.models.anthropic import AnthropicModel  # noqa: E402
from xclaw.models.openai_chat import OpenAIChatModel  # noqa: E402
from xclaw.models.openai_responses import OpenAIResponsesModel  # noqa: E402
from xclaw.models.presets import get_preset  # noqa: E402

__all__ = ["Result", "find_recordings", "main", "run_corpus"]

KNOWN_DIFFERENCES = HERE / "known_differences.yaml"
# libyaml's loader when present: the cassettes are large enough for the pure one to take seconds
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INTERACTION_TIMEOUT_S = 20.0

# (api, provider) -> (adapter, preset). Groq has no preset of its own: it is reached through
# the generic OpenAI-compatible one. DeepSeek's preset describes its chat API, so its
# Responses endpoint gets no preset, as an unknown Responses server would.
ADAPTERS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("chat_completions", "openai"): ("chat", "openai-chat"),
    ("chat_completions", "deepseek"): ("chat", "deepseek"),
    ("chat_completions", "openrouter"): ("chat", "openrouter"),
    ("chat_completions", "groq"): ("chat", "openai-compatible"),
    ("responses", "openai"): ("responses", "openai"),
    ("responses", "deepseek"): ("responses", None),
    ("messages", "anthropic"): ("messages", "anthropic"),
}
# The part of a recorded path the SDK appends to its base URL.
_ENDPOINTS = {
    "chat_completions": "/chat/completions",
    "responses": "/responses",
    "messages": "/v1/messages",
}
# Recorded headers that described the original transfer, not the (decompressed) body.
_DROPPED_HEADERS = {"content-type", "content-length", "content-encoding", "transfer-encoding"}


@dataclass
class Result:
    file: str
    index: int
    api: str
    streaming: bool
    failures: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)  # failures excused, with their reasons
    request_diffs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def name(self) -> str:
        return f"{self.file}#{self.index}"


# The corpus, in the repository (conformance/recordings/README.md: origin and licence).
RECORDINGS = HERE / "recordings"


def recordings_place(env: dict[str, str] | None = None) -> Path:
    """``$WIRE_RECORDINGS`` when set (an explicit choice never falls back), else the
    repository's ``conformance/recordings``."""
    environ = os.environ if env is None else env
    chosen = environ.get("WIRE_RECORDINGS")
    return Path(chosen) if chosen else RECORDINGS


def find_recordings(env: dict[str, str] | None = None) -> Path | None:
    """The corpus directory; None when it holds no ``index.json``."""
    path = recordings_place(env)
    return path.resolve() if (path / "index.json").is_file() else None


# -- serving and driving one interaction ----------------------------------------------------


def _queue_response(server: WireServer, response: dict[str, Any]) -> None:
    status = int(response["status"]["code"])
    headers = {k: v[0] for k, v in response.get("headers", {}).items() if v}
    content_type = headers.get("content-type", "application/json")
    extra = {k: v for k, v in headers.items() if k not in _DROPPED_HEADERS}
    if "parsed_body" in response:
        body = json.dumps(response["parsed_body"]).encode()
        server.add_raw(status, body, content_type, extra)
        return
    text: str = response["body"]["string"]
    if content_type.startswith("text/event-stream"):
        # Verbatim, split after each blank line so every event is its own chunk on the wire.
        events: list[str | bytes | dict[str, Any]] = [
            piece.encode() for piece in re.split(r"(?<=\n\n)", text) if piece
        ]
        server.add_sse(events, {**extra, "content-type": content_type}, status=status)
    else:
        server.add_raw(status, text.encode(), content_type, extra)


def _build_model(api: str, provider: str, model: str, base_url: str, stream: bool) -> Model:
    kind, preset_name = ADAPTERS[(api, provider)]
    preset = get_preset(preset_name) if preset_name else None
    key, timeout_s = "conformance", INTERACTION_TIMEOUT_S
    if kind == "chat":
        assert preset is not None, f"no preset {preset_name!r}"
        return OpenAIChatModel(
            model, base_url=base_url, api_key=key, preset=preset, stream=stream, timeout_s=timeout_s
        )
    if kind == "responses":
        return OpenAIResponsesModel(
            model, base_url=base_url, api_key=key, preset=preset, stream=stream, timeout_s=timeout_s
        )
    return AnthropicModel(
        model, base_url=base_url, api_key=key, preset=preset, stream=stream, timeout_s=timeout_s
    )


async def _collect(model: Model, request: Any) -> Outcome:
    outcome = Outcome()
    try:
        async with asyncio.timeout(INTERACTION_TIMEOUT_S):
            async for event in model.respond(request):
                outcome.add(event)
    except Exception as err:  # every failure is an outcome to compare, never a crash
        outcome.error = err
    finally:
        await model.aclose()
    return outcome


async def _run_interaction(entry: dict[str, Any], meta: dict[str, Any], recorded: Any) -> Result:
    api, provider = entry["api"], entry["provider"]
    result = Result(entry["file"], meta["index"], api, bool(meta.get("streaming")))
    if (api, provider) not in ADAPTERS:
        result.failures.append(f"adapter: none is mapped for {provider} {api}")
        return result
    body = recorded["request"]["parsed_body"]
    path = urlsplit(recorded["request"]["uri"]).path
    prefix = path[: -len(_ENDPOINTS[api])] if path.endswith(_ENDPOINTS[api]) else ""
    label = ADAPTERS[(api, provider)][1] or ""
    request, result.notes = rebuild_request(api, body, label)
    with WireServer() as server:
        _queue_response(server, recorded["response"])
        model = _build_model(
            api, provider, body["model"], server.url + prefix, bool(body.get("stream"))
        )
        outcome = await _collect(model, request)
        sent = list(server.requests)
    result.failures = compare(api, meta["expected"], int(meta["status"]), outcome)
    if len(sent) != 1:
        result.failures.append(f"requests: expected 1 request, the adapter sent {len(sent)}")
    else:
        result.request_diffs = request_differences(api, body, sent[0].body)
        sent_path = urlsplit(sent[0].path).path
        if sent_path != path:
            result.request_diffs.append(f"path: recorded {path}, sent {sent_path}")
    return result


# -- the corpus -----------------------------------------------------------------------------


def load_known_differences(path: Path = KNOWN_DIFFERENCES) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    for entry in entries:
        missing = {"file", "interaction", "field", "reason"} - set(entry)
        if missing or not str(entry.get("reason", "")).strip():
            raise SystemExit(f"{path}: every entry needs file, interaction, field and a reason")
    return list(entries)


def _excuse(result: Result, known: list[dict[str, Any]]) -> None:
    """Move failures listed in ``known`` (same file, interaction and field) to ``known``."""
    kept: list[str] = []
    for failure in result.failures:
        field_name = failure.split(":", 1)[0]
        reason = next(
            (
                k["reason"]
                for k in known
                if k["file"] == result.file
                and k["interaction"] in (result.index, "*")
                and k["field"] == field_name
            ),
            None,
        )
        if reason is None:
            kept.append(failure)
        else:
            result.known.append(f"{failure} [known: {reason}]")
    result.failures = kept


async def _run_all(root: Path, entries: list[dict[str, Any]]) -> list[Result]:
    results: list[Result] = []
    for entry in entries:
        try:
            text = (root / entry["file"]).read_text(encoding="utf-8")
            cassette = yaml.load(text, Loader=_YAML_LOADER)
        except (OSError, yaml.YAMLError) as err:
            failure = f"cassette: cannot be read ({type(err).__name__})"
            results.append(Result(entry["file"], 0, entry["api"], False, [failure]))
            continue
        recorded = cassette["interactions"]
        for meta in entry["interactions"]:
            results.append(await _run_interaction(entry, meta, recorded[meta["index"]]))
    return results


def run_corpus(
    root: Path,
    only: Sequence[str] = (),
    known: list[dict[str, Any]] | None = None,
) -> list[Result]:
    """Every interaction of every file in ``root/index.json`` (or of files whose name
    contains one of ``only``), compared, with ``known`` differences excused."""
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    entries = [e for e in index["files"] if not only or any(o in e["file"] for o in only)]
    results = asyncio.run(_run_all(root, entries))
    known_list = load_known_differences() if known is None else known
    for result in results:
        _excuse(result, known_list)
    return results


def _print_report(results: list[Result], elapsed: float, verbose: bool) -> None:
    for r in results:
        mode = "stream" if r.streaming else "whole"
        fields = ", ".join(dict.fromkeys(f.split(":", 1)[0] for f in r.failures))
        verdict = "PASS" if r.passed else f"FAIL  [{fields}]"
        print(f"{verdict}  {r.name}  ({r.api}, {mode})")
        lines = [*r.failures, *r.known]
        lines += [f"request differs: {d}" for d in r.request_diffs]
        lines += [f"note: {n}" for n in r.notes] if verbose else []
        for line in lines:
            print(f"      {line}")
    failed = sum(not r.passed for r in results)
    files = len({r.file for r in results})
    print(
        f"\nconformance: {len(results)} interactions in {files} files: "
        f"{len(results) - failed} passed, {failed} failed, "
        f"{sum(bool(r.known) for r in results)} with known differences; "
        f"{sum(bool(r.request_diffs) for r in results)} with request differences "
        f"(reported, not failed); {elapsed:.1f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--only", nargs="*", default=[], help="run files whose name contains one")
    parser.add_argument("-v", "--verbose", action="store_true", help="show rebuild notes too")
    args = parser.parse_args(argv)
    # The Anthropic SDK warns about retired model names; the recordings keep the names used.
    warnings.filterwarnings("ignore", r"The model .* is deprecated", DeprecationWarning)
    root = find_recordings()
    if root is None:
        where = recordings_place()
        print(f"conformance: no wire recordings (index.json) found at {where}.", file=sys.stderr)
        print(
            f"Unset WIRE_RECORDINGS to replay the repository's copy ({RECORDINGS}), "
            "or set it to a corpus directory.",
            file=sys.stderr,
        )
        return 2
    print(f"conformance: replaying {root}")
    started = time.monotonic()
    results = run_corpus(root, args.only)
    if not results:
        print("conformance: no interaction matched; nothing was checked.", file=sys.stderr)
        return 2
    _print_report(results, time.monotonic() - started, args.verbose)
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
