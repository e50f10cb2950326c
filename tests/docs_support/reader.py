"""The reader's machine, in a temp folder: where the docs' examples run.

``Reader.make(tmp_path, monkeypatch)`` makes the folder the examples start in (holding
``proj/hello.txt``), a home of its own with the XDG defaults under it (``~/.config/xclaw``,
``~/.local/share/xclaw``), no provider key, and this venv's ``xclaw`` first on PATH (or, given
``xclaw=FOLDER``, the one in FOLDER: the warm one of warm.py). This process gets the same
environment (Python blocks run in it); ``env`` is it for subprocesses.

``run_python`` runs a Python block in a namespace (``arun_python`` one with a top-level
``await``, as an async REPL would); ``run_bash`` runs a bash block with ``bash -e`` and a timeout,
``stdin`` as what the reader types into it (else nothing: end of input), and keeps what it
printed (``printed``) for the environment to check. Each block's placeholder words are replaced
first (``words``: ``ID`` -> a session id); the lines an environment runs itself, as the reader
would in a terminal of their own (a server in the foreground), are left out (``elsewhere``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.docs_support.blocks import Block, substitute

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "XCLAW_API_KEY")
BASH_TIMEOUT_S = 90


@dataclass
class Reader:
    folder: Path  # the current directory of every example
    home: Path
    monkeypatch: pytest.MonkeyPatch
    words: dict[str, str] = field(default_factory=dict)
    elsewhere: list[str] = field(default_factory=list)  # lines run in another terminal
    stdin: str | None = None  # what the reader types into the block's commands
    printed: str = ""  # what the last bash block printed

    @classmethod
    def make(
        cls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xclaw: Path | None = None
    ) -> Reader:
        folder, home = tmp_path / "reader", tmp_path / "home"
        (folder / "proj").mkdir(parents=True)
        (folder / "proj" / "hello.txt").write_text("hi there\n")
        home.mkdir()
        monkeypatch.chdir(folder)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        # `xclaw` as the examples call it: this interpreter's entry point (or a warm one).
        first = [str(xclaw)] if xclaw else []
        path = [*first, str(Path(sys.executable).parent), os.environ["PATH"]]
        monkeypatch.setenv("PATH", os.pathsep.join(path))
        monkeypatch.setenv("NO_COLOR", "1")
        for name in PROVIDER_KEYS:
            monkeypatch.delenv(name, raising=False)  # only the fakes set up here answer
        return cls(folder, home, monkeypatch)

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def setenv(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)

    def code_of_line(self, line: str) -> str:
        return substitute(line, self.words)

    def code_of(self, block: Block) -> str:
        lines = block.code.splitlines(keepends=True)
        kept = [
            f"# in another terminal: {x}" if x.rstrip("\n") in self.elsewhere else x for x in lines
        ]
        return substitute("".join(kept), self.words)

    # -- running ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _output(self, block: Block) -> Iterator[list[str]]:
        """What the example prints, kept in a real file (subprocesses it starts need a file
        descriptor); the list holds it once the example is done. An error fails the test."""
        printed: list[str] = []
        with (self.folder.parent / "out.txt").open("w+") as out:
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    yield printed
            except Exception as exc:  # pragma: no cover - the message is the point
                out.seek(0)
                pytest.fail(f"{block.where()}: the example raised {exc!r}\n{out.read()}")
            out.seek(0)
            printed.append(out.read())

    def _compiled(self, block: Block) -> Any:
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # a fragment may await, as in an async REPL
        return compile(self.code_of(block), block.where(), "exec", flags=flags)

    def run_python(self, block: Block, namespace: dict[str, Any]) -> str:
        """Run ``block`` in ``namespace``; what it printed."""
        with self._output(block) as printed:
            pending = eval(self._compiled(block), namespace)
            assert pending is None, f"{block.where()} awaits: run it with arun_python"
        return printed[0]

    async def arun_python(self, block: Block, namespace: dict[str, Any]) -> str:
        """Run ``block``, which may ``await`` at its top level, in ``namespace``."""
        with self._output(block) as printed:
            pending = eval(self._compiled(block), namespace)  # a coroutine when it awaits
            if pending is not None:
                await pending
        return printed[0]

    @staticmethod
    def close_clients(namespace: dict[str, Any]) -> None:
        """What the end of an example's process does for it: HTTP clients it left open (an
        ``OpenAI`` client, as a script would leave one) are closed."""
        for value in namespace.values():
            module = type(value).__module__.partition(".")[0]
            close = getattr(value, "close", None)
            if module in ("openai", "httpx") and close and not inspect.iscoroutinefunction(close):
                close()

    def run_bash(self, block: Block) -> str:
        """Run ``block`` with ``bash -e`` in the reader's folder; its output (it must exit 0).
        It runs in a process group of its own, killed whole when it is still running at its
        timeout."""
        script = self.folder.parent / "block.sh"
        script.write_text(self.code_of(block))
        proc = subprocess.Popen(
            ["bash", "-e", str(script)],
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL if self.stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(self.stdin, timeout=BASH_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - the message is the point
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            pytest.fail(f"{block.where()}: still running after {BASH_TIMEOUT_S}s\n{stdout}{stderr}")
        output = self.printed = stdout + stderr
        assert proc.returncode == 0, f"{block.where()} exited {proc.returncode}:\n{output}"
        return output


@contextlib.contextmanager
def nothing(reader: Reader) -> Iterator[None]:
    """The environment of an unmarked block: the reader's folder as it is."""
    yield
