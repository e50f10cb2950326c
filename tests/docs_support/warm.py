"""``xclaw`` for the docs' bash blocks, started warm: the same entry point, in a fork of an
interpreter that has already imported it.

A block runs up to fifteen ``xclaw`` commands, and a cold start spends most of its time
importing and loading (typer, rich, sqlalchemy, the OpenAI SDK, the token encodings, the
embedding model: 0.3-2 s a command); the blocks would take minutes. So ``WarmXclaw`` starts a
server (once per test module and worker) that imports xclaw's command modules and the
libraries they load on first use and fills the caches each command would fill the same way
from data that never changes (``_fill_caches``), then waits on a Unix socket. The ``xclaw``
first on the reader's PATH is a small client: it sends its argv, its current directory, its
environment and its stdin, stdout and stderr (the descriptors themselves); the server forks a
child that takes them all and runs ``xclaw.cli.app.main()`` as the installed script does. The
client exits with the child's code and forwards SIGINT and SIGTERM to it; a child whose client
went away (a block killed at its timeout) is killed. Everything else a cold start does
(reading the environment, the configuration, the terminal, the store) happens in the child as
it would. ``XCLAW_DOCS_COLD=1`` runs the blocks with the installed script instead, cold.

The environments' own ``xclaw`` processes (a server in the foreground of another terminal, a
run they crash) start warm too: SIGINT and SIGTERM reach the child through its client, and a
client SIGKILLed means its child is SIGKILLed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

COLD = os.environ.get("XCLAW_DOCS_COLD") == "1"
SCRIPT = Path(sys.executable).parent / "xclaw"  # the installed entry point
# What the commands of the docs import on first use (the command modules come from COMMANDS).
LIBRARIES = (
    "httpx",
    "openai",
    "anthropic",
    "sqlalchemy",
    "xclaw.store.sqlite",
    "xclaw.compose.coding",
    "xclaw.compose.assistant",
    "xclaw.compose.agents",
    "xclaw.coding.agent",
    "xclaw.models.openai_responses",
    "xclaw.models.openai_chat",
    "xclaw.models.anthropic",
    "xclaw.cli.render",
    "rich.markdown",
    "websockets.asyncio.client",
)
THREADED = ("faiss",)  # OpenMP's threads do not survive a fork (OpenBLAS's are remade)

CLIENT = """\
#!{python} -IS
# xclaw, warm: tests/docs_support/warm.py runs this command in a fork of a warm interpreter.
import json, os, signal, socket, struct, sys

sock = socket.socket(socket.AF_UNIX)
sock.connect({socket!r})
request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}})
data = request.encode()
socket.send_fds(sock, [struct.pack("!I", len(data)) + data], [0, 1, 2])
answer = sock.makefile("r")
pid = int(answer.readline())
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda number, _frame: os.kill(pid, number))
sys.exit(int(answer.readline() or 1))
"""


def _serve(path: str) -> None:
    """The server: import, then fork a child per request, report each one's exit code."""
    import gc
    import importlib
    import threading

    from xclaw.cli.app import COMMANDS

    for entry in COMMANDS.values():
        importlib.import_module(entry.target.partition(":")[0])
    for name in LIBRARIES:
        importlib.import_module(name)
    _fill_caches()
    threaded = [name for name in THREADED if name in sys.modules]
    assert not threaded, f"imported {threaded}: forks of this interpreter would not be safe"
    assert threading.active_count() == 1, threading.enumerate()
    gc.collect()
    gc.freeze()  # what is here now stays out of the children's collections (and their pages)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nobody reads that pipe any more
    ended, wake = os.pipe()  # SIGCHLD wakes the loop up at once
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}
    signal.signal(signal.SIGTERM, lambda *_: _stop(children))
    while True:
        ready, _, _ = select.select([listener, ended, *children.values()], [], [], 1.0)
        for sock in ready:
            if sock is ended:
                os.read(ended, 512)
            elif sock is listener:
                conn, _ = listener.accept()
                try:
                    pid = _start(conn, (listener, ended, wake))
                except (OSError, ValueError):  # a client that went away before it asked
                    conn.close()
                    continue
                children[pid] = conn
                conn.sendall(f"{pid}\n".encode())
            else:  # a client's end: only its exit closes it, so it went away: kill the child
                pid = next(p for p, c in children.items() if c is sock)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = children.pop(pid)
                code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
                with contextlib.suppress(OSError):
                    conn.sendall(f"{code if code >= 0 else 128 - code}\n".encode())
                conn.close()


def _fill_caches() -> None:
    """What every child would compute the same way on first use, from data that never
    changes: the token encodings' ranks (~0.3 s each), the OpenAI SDK's map of stream event
    types (built on the first event it parses, ~0.5 s), the local embedding model's weights
    (memory and the knowledge base, ~0.9 s: the process-wide embedder, loaded as
    ``warm_up`` loads it)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    from xclaw.context import tokens

    for name in (tokens.O200K, tokens.CL100K):
        tokens._encoding(name)
    delta = {"type": "response.output_text.delta", "item_id": "m", "delta": "", "output_index": 0}
    construct_type(type_=ResponseStreamEvent, value={**delta, "content_index": 0})
    construct_type(type_=ChatCompletionChunk, value={"id": "c", "choices": [], "created": 0})

    from xclaw.memory.embed import default_embedder

    default_embedder().warm_up()


def _stop(children: dict[int, socket.socket]) -> None:
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    os._exit(0)


def _start(conn: socket.socket, own: tuple[socket.socket, int, int]) -> int:
    """Fork the child of the request on ``conn``; ``own``: the server's listener and pipe."""
    header, fds, _, _ = socket.recv_fds(conn, 4, 3)
    try:
        (size,) = struct.unpack("!I", header)
        data = b""
        while len(data) < size:
            chunk = conn.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the client went away")
            data += chunk
        request = json.loads(data)
        assert len(fds) == 3, fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    # The child: the client's descriptors, directory, environment and argv; then the script.
    code = 1
    try:
        listener, ended, wake = own
        listener.close()
        conn.close()
        signal.set_wakeup_fd(-1)
        os.close(ended)
        os.close(wake)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(SCRIPT), *request["argv"]]
        from xclaw.cli.app import main

        code = 0
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # what the script's interpreter would print before it exits 1
            import traceback

            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


@dataclass
class WarmXclaw:
    """The server and the folder holding its client, ``bin/xclaw``, to put first on PATH."""

    bin: Path
    proc: subprocess.Popen[str] | None

    @classmethod
    @contextlib.contextmanager
    def started(cls) -> Iterator[WarmXclaw]:
        if COLD:
            yield cls(SCRIPT.parent, None)
            return
        with tempfile.TemporaryDirectory(prefix="xclaw-warm-") as folder:
            home, path = Path(folder) / "home", str(Path(folder) / "socket")  # a short path
            home.mkdir()
            env = {**os.environ, "HOME": str(home), "NO_COLOR": "1"}
            proc = subprocess.Popen(
                [sys.executable, __file__, path],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its own group: its children go with it
            )
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert line == "ready\n", f"the warm xclaw did not start: {line!r}"
                client = Path(folder) / "bin" / "xclaw"
                client.parent.mkdir()
                client.write_text(CLIENT.format(python=sys.executable, socket=path))
                client.chmod(0o755)
                yield cls(client.parent, proc)
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                if proc.stdout is not None:
                    proc.stdout.close()


if __name__ == "__main__":
    sys.path[0] = str(SCRIPT.parent)  # as the installed script's, not this folder
    _serve(sys.argv[1])
