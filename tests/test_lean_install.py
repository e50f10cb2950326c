"""The core install, for real: a fresh venv, ``pip install`` of this tree without any extra,
then ``xclaw run --model openai:...`` against a local fake OpenAI server, and ``xclaw serve``
naming the extra it needs.

It downloads the core dependencies from the package registry (about 25 s, 170 MB), like
``make deps`` does; ``make check-lean`` runs it alone. tests/test_extras.py checks the same
without a network, by hiding the optional packages from the dev venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "models"))
from test_openai_responses import text_stream, usage  # noqa: E402
from wire_server import WireServer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def lean_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("lean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, str(REPO)], check=True, timeout=600)
    return venv


def _env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-lean",
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "XDG_DATA_HOME": str(tmp / "data"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
    }


def test_no_extra_is_installed(lean_venv: Path) -> None:
    code = (
        "from xclaw.core.extras import EXTRAS, missing_modules as gone; "
        "print(sorted(m for e, ms in EXTRAS.items() for m in ms if m not in gone(e)))"
    )
    done = subprocess.run(
        [str(lean_venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_run_with_an_openai_model_works(lean_venv: Path, root: Path, tmp_path: Path) -> None:
    with WireServer() as server:
        server.add_sse(text_stream("Nothing to change here.", use=usage(50, 9)))
        argv = [str(lean_venv / "bin" / "xclaw"), "run", "--model", "openai:gpt-4o-mini"]
        argv += ["--base-url", server.url + "/v1", "-C", str(root), "--approval", "deny"]
        done = subprocess.run(
            [*argv, "say what is here"],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(tmp_path),
        )
        asked = server.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert "completed" in done.stdout
    assert [r.path for r in asked] == ["/v1/responses"]


def test_serve_names_the_gateway_extra(lean_venv: Path, root: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(lean_venv / "bin" / "xclaw"), "serve", "-C", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
    )
    assert done.returncode == 2
    assert done.stderr.startswith("EXTRA_MISSING: xclaw serve needs the gateway extra"), done.stderr
    assert "pip install 'xclaw[gateway]'" in done.stderr
