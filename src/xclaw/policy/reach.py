"""What a sandbox cannot contain, read from ``program + argv``: network use beyond loopback,
and publishing or pushing (seed 003 ch. 05 on top of seed 000 §8).

Inside the sandbox every command runs without asking except these; the checks are by program
and subcommand, after the launchers (``env``, ``nice``, ``npx``...) have been unwrapped by
``policy.commands``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from xclaw.policy._argv import before_dashdash
from xclaw.policy.launchers import normalize_program, unwrapped

_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"})
_HOSTLIKE = re.compile(r"^(?:[\w-]+\.)+[a-z]{2,}(?::\d+)?(?:/|$)", re.IGNORECASE)
_SCP_REMOTE = re.compile(r"^(?:[\w.-]+@)?[\w.-]+:(?!//)")

# program: subcommands (first word) that fetch from or talk to other machines; "*" = any.
_NETWORK_TABLE = """
git: clone fetch pull ls-remote remote submodule archive request-pull
npm: install i ci add update upgrade outdated view info audit exec dlx login whoami search
yarn: install add upgrade up dlx info npm
pnpm: install i add update up dlx outdated audit
bun: install i add update x
pip: install download index search
uv: sync add lock tool
cargo: fetch install update add search login
go: get install
gem: install fetch update
apt: *
apt-get: *
dnf: *
yum: *
apk: *
brew: *
docker: pull login search
podman: pull login search
ssh: *
scp: *
sftp: *
rsync: *
nc: *
ncat: *
netcat: *
socat: *
telnet: *
ftp: *
ping: *
dig: *
nslookup: *
host: *
npx: *
pnpx: *
bunx: *
uvx: *
"""
_NETWORK: dict[str, frozenset[str]] = {
    prog.strip(): frozenset(words.split())
    for prog, words in (line.split(":") for line in _NETWORK_TABLE.strip().splitlines())
}
_URL_CLIENTS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "lynx", "links"})
_PUSH_FORMS = (
    ("git", ("send-pack",)),
    ("git", ("http-push",)),
    ("git", ("push",)),
    ("twine", ("upload",)),
)


def _is_loopback_url(arg: str) -> bool:
    try:
        host = urlsplit(arg if "://" in arg else f"http://{arg}").hostname or ""
    except ValueError:
        return False
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names this machine outright: ``localhost`` (and ``*.localhost``) or a
    loopback address written out. A name like ``127.example.com`` is a name, not loopback."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def non_public_kind(address: str) -> str | None:
    """What kind of non-public address ``address`` is (``loopback``, ``private``,
    ``link-local``, ``reserved``), or None for a public address or a non-address."""
    try:
        ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private:
        return "private"
    if not ip.is_global or ip.is_multicast:
        return "reserved"
    return None


def needs_network(program: str, argv: Sequence[str]) -> str | None:
    """Why the command would reach beyond loopback, or None."""
    for name, args in unwrapped(program, argv):
        family = "pip" if re.match(r"^pip\d*(\.\d+)?$", name) else name
        if family.startswith("python") and args[:2] == ["-m", "pip"]:
            family, args = "pip", args[2:]
        if family in _URL_CLIENTS:
            urls = [a for a in args if "://" in a or _HOSTLIKE.match(a) or a == "localhost"]
            if not urls or not all(_is_loopback_url(u) for u in urls):
                return f"{name} reaches a host other than this machine's loopback"
            continue
        subs = _NETWORK.get(family)
        if subs is None:
            continue
        words = [a for a in before_dashdash(args) if not a.startswith("-")]
        if "*" in subs or (words and words[0] in subs):
            what = f"{name} {words[0]}" if words and "*" not in subs else name
            return f"{what} uses the network"
    return None


def publishes(program: str, argv: Sequence[str]) -> str | None:
    """Why the command sends work to another machine (push, publish, upload), or None."""
    for name, args in unwrapped(program, argv):
        family = name
        if name.startswith("python") and args[:2] in (["-m", "twine"], ["-m", "twine.__main__"]):
            family, args = "twine", args[2:]
        words = [a for a in before_dashdash(args) if not a.startswith("-")]
        for prog, seq in _PUSH_FORMS:
            if family == prog and _has_subcommand(words, seq):
                return f"{family} {' '.join(seq)} sends work to another machine"
        if family in ("docker", "podman", "buildah") and any(
            a == "--push" or a.startswith("--push=") or a.startswith("--output=type=registry")
            for a in args
        ):
            return f"{family} --push publishes an image"
        if family == "rsync" and any(_SCP_REMOTE.match(a) or "://" in a for a in words):
            return "rsync copies to or from another machine"
    return None


def _has_subcommand(words: list[str], seq: tuple[str, ...]) -> bool:
    n = len(seq)
    return any(tuple(words[i : i + n]) == seq for i in range(len(words) - n + 1))


def program_name(program: str) -> str:
    return normalize_program(program)
