"""Hostile programs run with ``terminal.exec`` in the default sandbox (bwrap here).

Each program is written into the project by the test and tries one escape: reading keys,
xclaw's data, other processes' environments; writing outside the root; following or making
links out; connecting anywhere (including a server the test runs on the host's loopback);
leaving a daemon behind; filling /tmp; killing xclaw. Every attempt prints ``ACHIEVED ...``
when it worked and ``blocked ...`` when it did not, then ``DONE``. Each case asserts on the
printout and on the host: no secret read, no outside write, no connection, no process left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.security.conftest import KEY_VALUE, SECRET, call, dump, output, tree_snapshot

from xclaw.dirs import config_dir, data_dir

# The system interpreter: pyenv shims need the real home, which the fake HOME hides.
PY = "/usr/bin/python3"

PRELUDE = """\
import json, os, signal, socket, sys, time
C = json.load(open("cfg.json"))
ID, OUT, HOME, DATA = C["id"], C["out"], C["home"], C["data"]

def attempt(what, fn):
    try:
        got = fn()
    except BaseException as err:  # noqa
        print("blocked", what, type(err).__name__, str(err)[:80], flush=True)
        return
    if got:
        print("ACHIEVED", what, repr(got)[:300], flush=True)
    else:
        print("blocked", what, "(nothing)", flush=True)

def read(path):
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", "replace")

def write(path, text="pwned"):
    with open(path, "w") as fh:
        fh.write(text)
    return path

def secret_in(text):
    return any(s in text for s in C["needles"])

def tcp(host, port, timeout=2.0):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t = time.monotonic()
    try:
        s.connect((host, port))
        return f"connected to {host}:{port}"
    finally:
        print("elapsed", host, round(time.monotonic() - t, 2), flush=True)
        s.close()

"""

# name -> (kind, source). Python sources get PRELUDE; shell sources get cfg variables.
PROGRAMS: dict[str, tuple[str, str]] = {
    # --- secrets -------------------------------------------------------------------------
    "read-ssh-key": ("py", 'attempt("ssh key", lambda: read(HOME + "/.ssh/id_rsa"))'),
    "read-ssh-key-tilde": (
        "py",
        'attempt("ssh key ~", lambda: read(os.path.expanduser("~/.ssh/id_rsa")))',
    ),
    "list-home-ssh": ("py", 'attempt("home has .ssh", lambda: ".ssh" in os.listdir(HOME))'),
    "read-outside-secret": ("py", 'attempt("outside secret", lambda: read(OUT + "/secret.txt"))'),
    "walk-tmp-for-secret": (
        "py",
        "def walk():\n"
        "    for d, _, fs in os.walk('/tmp'):\n"
        "        if d.startswith((os.getcwd(), *C['toolchains'])):\n"
        "            continue  # the project (cfg.json holds the needles), read-only toolchains\n"
        "        for f in fs:\n"
        "            try:\n"
        "                t = read(os.path.join(d, f))\n"
        "            except OSError:\n"
        "                continue\n"
        "            if secret_in(t):\n"
        "                return os.path.join(d, f)\n"
        "attempt('secret under /tmp', walk)",
    ),
    "read-xclaw-db": ("py", 'attempt("xclaw db", lambda: read(DATA + "/xclaw.db"))'),
    "list-xclaw-data": ("py", 'attempt("data dir listing", lambda: os.listdir(DATA))'),
    "read-xclaw-config": ("py", 'attempt("xclaw config", lambda: read(C["config"] + "/k.yaml"))'),
    "proc-all-environ": (
        "py",
        "def scan():\n"
        "    hits = []\n"
        "    for p in os.listdir('/proc'):\n"
        "        if p.isdigit():\n"
        "            for f in ('environ', 'cmdline'):\n"
        "                try:\n"
        "                    if secret_in(read(f'/proc/{p}/{f}')):\n"
        "                        hits.append(p)\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return hits\n"
        "attempt('planted key in /proc/*', scan)",
    ),
    "proc-1-environ": (
        "py",
        "attempt('/proc/1/environ key', lambda: secret_in(read('/proc/1/environ')))",
    ),
    "proc-ppid-environ": (
        "py",
        "attempt('parent environ key', lambda: secret_in(read(f'/proc/{os.getppid()}/environ')))",
    ),
    "proc-host-pid-environ": (
        "py",
        "attempt('xclaw environ', lambda: secret_in(read(f'/proc/{C[\"hostpid\"]}/environ')))",
    ),
    "own-environ": (
        "py",
        "attempt('own env key', lambda: [k for k, v in os.environ.items() if secret_in(v)])",
    ),
    "etc-shadow": ("py", "attempt('/etc/shadow', lambda: 'root:' in read('/etc/shadow'))"),
    "root-home": ("py", "attempt('/root/.ssh', lambda: os.listdir('/root/.ssh'))"),
    "sh-cat-ssh-key": ("sh", 'cat "$HOME/.ssh/id_rsa" && echo ACHIEVED ssh key || echo blocked'),
    "sh-grep-proc-environ": (
        "sh",
        'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$f" 2>/dev/null; done '
        '| grep -q "$NEEDLE" && echo ACHIEVED key in proc || echo blocked proc',
    ),
    # --- writes outside the root ---------------------------------------------------------
    "write-outside-dir": ("py", 'attempt("outside write", lambda: write(OUT + "/" + ID))'),
    "write-home": ("py", 'attempt("home write", lambda: write(HOME + "/" + ID) and False)'),
    "append-bashrc": (
        "py",
        'attempt("bashrc", lambda: open(HOME + "/.ssh/authorized_keys", "a").write("x") and False)',
    ),
    "write-etc": ("py", 'attempt("/etc write", lambda: write("/etc/" + ID))'),
    "write-usr": ("py", 'attempt("/usr write", lambda: write("/usr/" + ID))'),
    "write-opt": ("py", 'attempt("/opt write", lambda: write("/opt/" + ID))'),
    "write-parent-of-root": (
        "py",
        'attempt("../ write", lambda: write(os.path.join("..", ID)) and False)',
    ),
    "write-data-dir": ("py", 'attempt("data dir write", lambda: write(DATA + "/" + ID))'),
    "write-sitecustomize": (
        "py",
        'attempt("venv sitecustomize", lambda: write(C["site"] + "/" + ID + ".py"))',
    ),
    "write-toolchain": ("py", 'attempt("toolchain write", lambda: write(C["tool"] + "/" + ID))'),
    "sh-write-profile-d": (
        "sh",
        'echo "echo pwned" > /etc/profile.d/$ID.sh 2>/dev/null && echo ACHIEVED profile.d '
        "|| echo blocked profile.d",
    ),
    "sh-write-tmp-host": (
        "sh",
        'echo pwned > /tmp/$ID && echo "wrote private /tmp"; '
        "echo pwned > /var/tmp/$ID && echo 'wrote private /var/tmp'",
    ),
    # --- links ---------------------------------------------------------------------------
    "follow-planted-symlink": (
        "py",
        'attempt("symlink read", lambda: read("escape/secret.txt"))',
    ),
    "write-through-planted-symlink": (
        "py",
        'attempt("symlink write", lambda: write("escape/" + ID))',
    ),
    "own-symlink-out": (
        "py",
        "def f():\n"
        "    os.symlink(OUT, 'mine')\n"
        "    return read('mine/secret.txt')\n"
        "attempt('own symlink', f)",
    ),
    "hardlink-outside-py": (
        "py",
        "def f():\n"
        "    os.link(OUT + '/secret.txt', 'hl.txt')\n"
        "    return read('hl.txt')\n"
        "attempt('hard link', f)",
    ),
    "sh-ln-hardlink": (
        "sh",
        'ln "$OUT/secret.txt" hl2.txt 2>/dev/null && cat hl2.txt && echo ACHIEVED ln '
        "|| echo blocked ln",
    ),
    # --- network -------------------------------------------------------------------------
    "tcp-10-255": ("py", 'attempt("tcp 10.255.255.1", lambda: tcp("10.255.255.1", 80))'),
    "tcp-test-net": ("py", 'attempt("tcp 192.0.2.1", lambda: tcp("192.0.2.1", 80))'),
    "tcp-ipv6": ("py", 'attempt("tcp v6", lambda: tcp("2001:4860:4860::8888", 53))'),
    "udp-dns": (
        "py",
        "def f():\n"
        "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "    s.settimeout(1.5)\n"
        "    q = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00'\n"
        "    q += b'\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'\n"
        "    s.sendto(q, ('8.8.8.8', 53))\n"
        "    return s.recvfrom(512)\n"
        "attempt('udp dns', f)",
    ),
    "resolve-name": ("py", 'attempt("dns", lambda: socket.getaddrinfo("example.com", 80))'),
    "host-loopback-server": (
        "py",
        'attempt("host loopback", lambda: tcp("127.0.0.1", C["port"]))',
    ),
    "sh-curl-out": (
        "sh",
        "curl -s -m 2 http://10.255.255.1/ >/dev/null && echo ACHIEVED curl || echo blocked; "
        'curl -s -m 2 "http://127.0.0.1:$PORT/" >/dev/null && echo ACHIEVED loopback '
        "|| echo blocked loopback",
    ),
    "unix-socket-dbus": (
        "py",
        "def f():\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    s.connect('/run/dbus/system_bus_socket')\n"
        "    return 'dbus'\n"
        "attempt('dbus', f)",
    ),
    # --- processes -----------------------------------------------------------------------
    "daemon-double-fork": (
        "py",
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "        py = sys.executable\n"
        "        os.execv(py, [py, '-c', 'import time; time.sleep(30)', ID])\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
        "print('spawned daemon', flush=True)",
    ),
    "sh-nohup-disown": (
        "sh",
        "nohup /usr/bin/python3 -c 'import time; time.sleep(30)' $ID >/dev/null 2>&1 &\n"
        "setsid /usr/bin/python3 -c 'import time; time.sleep(30)' $ID >/dev/null 2>&1 &\n"
        "sleep 0.3; echo spawned",
    ),
    "sh-setsid-fork": (
        "sh",
        'setsid -f sh -c \'trap "" TERM HUP; '
        'exec /usr/bin/python3 -c "import time; time.sleep(30)" $0\' $ID; '
        "sleep 0.3; echo spawned",
    ),
    "fill-tmp": (
        "py",
        "def f():\n"
        "    with open('/tmp/' + ID, 'wb') as fh:\n"
        "        for _ in range(32):\n"
        "            fh.write(b'x' * (1 << 20))\n"
        "    return False\n"
        "attempt('fill /tmp', f)",
    ),
    "kill-parent": ("py", "attempt('kill parent', lambda: os.kill(os.getppid(), 9) or False)"),
    "kill-host-pid": (
        "py",
        "attempt('kill xclaw', lambda: os.kill(C['hostpid'], signal.SIGKILL) or True)",
    ),
    "sh-kill-all": ("sh", "kill -9 -1 2>/dev/null; echo tried kill -1"),
}


@dataclass
class LoopbackServer:
    port: int = 0
    accepted: list[str] = field(default_factory=list)


@pytest.fixture
def host_server() -> Iterator[LoopbackServer]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    info = LoopbackServer(srv.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
            except OSError:
                continue
            info.accepted.append(str(addr))
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield info
    stop.set()
    t.join(2)
    srv.close()


def _marked(marker: str) -> list[int]:
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd:
            found.append(int(p))
    return found


def _site_packages() -> Path:
    return Path(next(p for p in sys.path if p.endswith("site-packages")))


def _toolchain() -> Path:
    return Path(os.path.realpath(sys.base_prefix))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_hostile_program(
    name: str,
    root: Path,
    outside: Path,
    fake_home: Path,
    planted: dict[str, str],
    host_server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XCLAW_SANDBOX", raising=False)  # the default: bwrap here
    ident = f"xclaw-hostile-{uuid.uuid4().hex[:10]}"
    data, conf = data_dir(), config_dir()
    conf.mkdir(parents=True, exist_ok=True)
    (data / "xclaw.db").write_text(SECRET)
    (conf / "k.yaml").write_text(SECRET)
    (root / "escape").symlink_to(outside)
    cfg = {
        "id": ident,
        "out": str(outside),
        "home": str(fake_home),
        "data": str(data),
        "config": str(conf),
        "port": host_server.port,
        "hostpid": os.getpid(),
        "site": str(_site_packages()),
        "tool": str(_toolchain()),
        "needles": [SECRET, KEY_VALUE],
        # This interpreter's trees, bound read-only: under /tmp when the checkout is, and
        # reading a whole venv would take longer than the program's time.
        "toolchains": sorted({sys.prefix, sys.base_prefix}),
    }
    (root / "cfg.json").write_text(json.dumps(cfg))
    kind, source = PROGRAMS[name]
    if kind == "py":
        (root / "hostile.py").write_text(PRELUDE + source + "\nprint('DONE', flush=True)\n")
        args = {"program": PY, "argv": ["hostile.py"]}
    else:
        prelude = f"ID={ident}\nOUT='{outside}'\nPORT={host_server.port}\nNEEDLE='{KEY_VALUE}'\n"
        (root / "hostile.sh").write_text(prelude + source + "\necho DONE\n")
        args = {"program": "sh", "argv": ["hostile.sh"]}
    candidates = [
        Path("/etc", ident),
        Path("/usr", ident),
        Path("/opt", ident),
        Path("/tmp", ident),
        Path("/var/tmp", ident),
        Path("/etc/profile.d", ident + ".sh"),
        root.parent / ident,
        outside / ident,
        fake_home / ident,
        data / ident,
        _site_packages() / (ident + ".py"),
        _toolchain() / ident,
    ]
    outside_before = tree_snapshot(outside)
    home_before = tree_snapshot(fake_home)
    data_before = tree_snapshot(data)
    started = time.monotonic()
    try:
        result = call(root, "terminal.exec", {**args, "timeout_ms": 15_000})
        elapsed = time.monotonic() - started
        left = _marked(ident)
        text = dump(result)
        report = output(result)
        # The test process (xclaw's stand-in) survived whatever the program tried.
        os.kill(os.getpid(), 0)
        assert "DONE" in report, f"{name} did not finish: {text[:2000]}"
        assert "ACHIEVED" not in report, f"{name}: {report[:2000]}"
        assert SECRET not in text, f"{name} read a secret: {report[:2000]}"
        assert KEY_VALUE not in text, f"{name} saw a planted key: {report[:2000]}"
        written = [str(p) for p in candidates if os.path.lexists(p)]
        assert written == [], f"{name} wrote outside the root: {written}"
        assert tree_snapshot(outside) == outside_before, f"{name} changed the outside dir"
        assert tree_snapshot(fake_home) == home_before, f"{name} changed the home dir"
        assert tree_snapshot(data) == data_before, f"{name} changed xclaw's data dir"
        assert not (root / "hl.txt").exists() or SECRET not in (root / "hl.txt").read_text()
        assert host_server.accepted == [], f"{name} reached the host loopback server"
        assert left == [], f"{name} left processes behind: {left}"
        # A bound on the whole program (walks of /tmp included) on a busy 2-core machine; each
        # network attempt is held to 1.5 s by the per-line check below.
        assert elapsed < 30, f"{name} took {elapsed:.1f}s"
        for line in report.splitlines():
            if line.startswith("elapsed"):
                assert float(line.split()[-1]) < 1.5, f"{name}: slow failure {line}"
    finally:
        for pid in _marked(ident):
            os.kill(pid, signal.SIGKILL)
        for p in candidates:
            if os.path.lexists(p):
                os.unlink(p)
