"""Where a Python value may not go, read with the ``ast``: the whole environment or a key file
handed to an HTTP client, a socket, a mail/FTP client or a sending command; a secret looked up
as a DNS name; a socket wired to a shell. What a value carries comes from ``python_taint``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from xclaw.scan.exfil_rules import SHELL_SENDER
from xclaw.scan.python_names import Names
from xclaw.scan.python_taint import (
    CONSTRUCTORS,
    CREDENTIAL,
    ENVIRONMENT,
    LABEL,
    NETOBJ,
    RUNS,
    SOCKET,
    SOCKETS,
    Flows,
    command_words,
    first_arg,
)

Emit = Callable[..., None]  # (rule, node, *, message=...) -> None

_SENDERS = frozenset(
    {
        *(f"requests.{m}" for m in ("post", "put", "patch", "get", "request", "delete", "head")),
        *(f"httpx.{m}" for m in ("post", "put", "patch", "get", "request", "stream", "delete")),
        "urllib.request.urlopen",
        "urllib.request.Request",
        "urllib.request.urlretrieve",
        "urllib.urlopen",
        "urllib2.urlopen",
        "urllib2.Request",
        "urllib3.request",
        "aiohttp.request",
        "xmlrpc.client.ServerProxy",
    }
)
_SEND_METHODS = frozenset(
    {
        "post",
        "put",
        "patch",
        "get",
        "request",
        "send",
        "sendall",
        "sendto",
        "sendmsg",
        "sendfile",
        "urlopen",
        "open",
        "putrequest",
        "putheader",
        "endheaders",
        "storbinary",
        "storlines",
        "sendmail",
        "send_message",
        "write",
    }
)
_DNS = frozenset(
    {
        "socket.gethostbyname",
        "socket.gethostbyname_ex",
        "socket.getaddrinfo",
        "socket.gethostbyaddr",
        "socket.getfqdn",
        "dns.resolver.resolve",
        "dns.resolver.query",
        "dns.resolver.resolve_address",
    }
)
_EXECS = frozenset(
    {"pty.spawn", *(f"os.{f}" for f in ("execv", "execve", "execl", "execle", "execlp", "execvp"))}
)
_SHELL_NAME = re.compile(r"(?:^|[/\s\"'])(?:ba|z|k|da|c)?sh\b|\bcmd(?:\.exe)?\b|powershell|-i\b")
_DNS_COMMAND = re.compile(r"^\s*(?:\S*/)?(?:dig|nslookup|host|drill|ping)\b")
_INTERESTING = _SENDERS | CONSTRUCTORS | SOCKETS | _DNS | RUNS | _EXECS


def scan_network_flows(nodes: list[ast.AST], tree: ast.Module, names: Names, emit: Emit) -> None:
    """Report secrets that reach the network and sockets given to a shell."""
    called = {names.qualify(n.func)[0] for n in nodes if isinstance(n, ast.Call)}
    if not called & _INTERESTING:
        return
    flows = Flows(tree, nodes, names)
    for scope in flows.scopes:
        for node in flows.scope_nodes[id(scope)]:
            if isinstance(node, ast.Call):
                _check_sink(flows, node, scope, emit)
    _check_reverse_shell(flows, emit)


def _check_sink(flows: Flows, call: ast.Call, scope: ast.AST, emit: Emit) -> None:
    q, _ = flows.names.qualify(call.func)
    where = (q or _method_name(call)).removeprefix("builtins.")
    carried = flows.argument_kinds(call, scope)
    if q in RUNS:
        _check_command(flows, call, where, carried, emit)
        return
    if q in _DNS or _is_method_on_network(flows, call, scope, {"resolve", "query"}):
        if carried & {ENVIRONMENT, CREDENTIAL, LABEL}:
            emit("exfil.dns", call, message=f"A secret is looked up as a DNS name ({where}()).")
        return
    if q in _SENDERS or _is_method_on_network(flows, call, scope, _SEND_METHODS):
        _report_sent(call, where, carried, emit)


def _is_method_on_network(
    flows: Flows, call: ast.Call, scope: ast.AST, methods: Iterable[str]
) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in methods
        and NETOBJ in flows.kinds(func.value, scope)
    )


def _check_command(flows: Flows, call: ast.Call, where: str, carried: set[str], emit: Emit) -> None:
    words = command_words(first_arg(call), flows.names)
    if _DNS_COMMAND.search(words) and carried & {ENVIRONMENT, CREDENTIAL, LABEL}:
        emit("exfil.dns", call, message=f"A secret is looked up as a DNS name ({where}()).")
    elif SHELL_SENDER.search(words):
        _report_sent(call, where, carried, emit)


def _check_reverse_shell(flows: Flows, emit: Emit) -> None:
    wired = False  # os.dup2(sock.fileno(), 0..2) seen
    spawns: list[ast.Call] = []
    for scope in flows.scopes:
        for node in flows.scope_nodes[id(scope)]:
            if not isinstance(node, ast.Call):
                continue
            q, _ = flows.names.qualify(node.func)
            if q == "os.dup2" and node.args and SOCKET in flows.kinds(node.args[0], scope):
                wired = True
            elif q in RUNS or q in _EXECS:
                if _stdio_is_socket(flows, node, scope):
                    _report_shell(node, "a process reads and writes a socket", emit)
                    return
                if q == "pty.spawn" or _SHELL_NAME.search(
                    command_words(first_arg(node), flows.names)
                ):
                    spawns.append(node)
    if wired and spawns:
        _report_shell(spawns[0], "a socket becomes standard input and output of a shell", emit)


def _stdio_is_socket(flows: Flows, call: ast.Call, scope: ast.AST) -> bool:
    return any(
        kw.arg in {"stdin", "stdout", "stderr"} and SOCKET in flows.kinds(kw.value, scope)
        for kw in call.keywords
    )


def _method_name(call: ast.Call) -> str:
    return f".{call.func.attr}" if isinstance(call.func, ast.Attribute) else "a call"


def _report_sent(call: ast.Call, where: str, carried: set[str], emit: Emit) -> None:
    if ENVIRONMENT in carried:
        emit(
            "exfil.environment",
            call,
            message=f"The whole environment (os.environ) is sent out by {where}().",
        )
    if CREDENTIAL in carried:
        emit(
            "credentials.exfiltrate",
            call,
            message=f"A key file, .env file or cookie jar is sent out by {where}().",
        )


def _report_shell(call: ast.Call, why: str, emit: Emit) -> None:
    emit("shell.reverse_shell", call, message=f"A reverse shell: {why}.")
