"""No false refusals: the hardened sandbox still lets ordinary project work through.

Builds, tests, a dev server reached from another command, a virtual environment with a
package installed into it: each as the agent would run it, in bwrap, as root and (through
``tests/unprivileged.sh``) as a normal user.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from tests.security.conftest import call, call_async, dump

from xclaw.tools.base import Workspace


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XCLAW_SANDBOX", "bwrap")
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_pkg.py").write_text(
        "import unittest\nfrom pkg import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    )
    (root / "Makefile").write_text("build:\n\tpython3 -m compileall -q pkg\n\tmkdir -p dist\n")
    return root.resolve()


def run(root: Path, program: str, *argv: str, approval: str = "allow") -> Any:
    args = {"program": program, "argv": list(argv), "timeout_ms": 120_000}
    return call(root, "terminal.exec", args, approval=approval)


def test_build_runs(project: Path) -> None:
    result = run(project, "make", "build")
    assert result.ok, dump(result)
    assert (project / "dist").is_dir()
    assert list((project / "pkg" / "__pycache__").glob("*.pyc"))


def test_tests_run(project: Path) -> None:
    result = run(project, "python3", "-m", "unittest", "-q", "test_pkg")
    assert result.ok, dump(result)


def test_dev_server_answers_another_command(project: Path) -> None:
    async def go() -> Any:
        ws = Workspace(project)
        try:
            serve = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"]
            server = {"program": "python3", "argv": serve, "wait_for_url_ms": 10_000}
            # under deny: neither asks (loopback only, inside the session's network)
            started = await call_async(
                project, "process.start", server, approval="deny", workspace=ws
            )
            assert started.ok, dump(started)
            port = str(started.data["stdout"]).split("port ")[1].split()[0]
            url = f"http://127.0.0.1:{port}/"  # as commands inside the session reach it
            fetch = f"import urllib.request as u; print(u.urlopen({url!r}).status)"
            args = {"program": "python3", "argv": ["-c", fetch]}
            return await call_async(project, "terminal.exec", args, approval="deny", workspace=ws)
        finally:
            await ws.close()

    result = asyncio.run(go())
    assert result.ok and "200" in str(result.data["stdout"]), dump(result)


def _wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel (hello-1.0): what pip installs from an index, offline."""
    path = folder / "hello-1.0-py3-none-any.whl"
    files = {
        "hello.py": b"GREETING = 'hi'\n",
        "hello-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: hello\nVersion: 1.0\n",
        "hello-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{name},sha256={digest.decode()},{len(data)}")
        record.append("hello-1.0.dist-info/RECORD,,")
        z.writestr("hello-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_pip_install_into_a_project_venv(project: Path) -> None:
    wheel = _wheel(project)
    made = run(project, "python3", "-m", "venv", ".venv")
    assert made.ok, dump(made)
    installed = run(project, ".venv/bin/python", "-m", "pip", "install", "--no-index", wheel.name)
    assert installed.ok, dump(installed)
    used = run(project, ".venv/bin/python", "-c", "import hello; print(hello.GREETING)")
    assert used.ok and "hi" in str(used.data["stdout"]), dump(used)


def test_git_init_add_commit_in_a_fresh_project(project: Path) -> None:
    for argv in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "first")):
        result = run(project, "git", *argv)
        assert result.ok, dump(result)
    log = run(project, "git", "log", "--oneline")
    assert log.ok and "first" in str(log.data["stdout"]), dump(log)
