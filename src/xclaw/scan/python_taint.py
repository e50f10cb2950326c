"""What a Python value carries, read with the ``ast``: the whole environment, a credential
file's content, one environment value, encoded data, a secret placed before ".domain", a
network client or a socket.

A simple taint: names (and ``self.x`` attributes) assigned from a source are followed through
assignments, loops, ``with``, container updates, function arguments and returns, per function
with module names seen everywhere, to a fixpoint. Sources: ``os.environ`` used whole (one
``os.environ["X"]`` or ``os.getenv("X")`` is a single value, which the skill may send to its
API), files whose path names a credential store or a key folder (``Path.home() / ".ssh" /
"id_rsa"``, ``.env``), ``dotenv_values()``, browser cookie readers, and ``env``/``printenv``
run as a command. The environment handed to a child process (``env=``) goes nowhere and is not
followed. ``python_network`` decides where a carried value may not go.
"""

from __future__ import annotations

import ast
import re

from xclaw.scan.exfil_rules import ENV_DUMP_SHELL, KEY_DIRS
from xclaw.scan.python_names import Names, fold
from xclaw.scan.text_rules import CREDENTIALS

ENVIRONMENT, CREDENTIAL, ENV_VALUE = "environment", "credential", "env-value"
ENCODED = "encoded"  # base64/hex of anything: only a DNS label makes it suspicious
LABEL = "dns-label"  # a secret placed before ".domain" in an assembled string
NETOBJ, SOCKET = "network-object", "socket"  # what a value is, not what it carries
SECRETS = frozenset({ENVIRONMENT, CREDENTIAL, ENV_VALUE, ENCODED})


_ENVIRON = frozenset({"os.environ", "os.environb", "posix.environ"})
_GETENV = frozenset({"os.getenv", "os.getenvb"})
_ONE_VALUE = frozenset({"get", "pop", "setdefault", "__getitem__"})
_CREDENTIAL_CALLS = frozenset({"dotenv.dotenv_values", "dotenv.main.dotenv_values"})
_PATHS = frozenset(
    {"os.path.join", "os.path.expanduser", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"}
)
_ENCODERS = frozenset(
    {
        "base64.b64encode",
        "base64.b32encode",
        "base64.b16encode",
        "base64.urlsafe_b64encode",
        "base64.b85encode",
        "base64.a85encode",
        "binascii.hexlify",
        "binascii.b2a_hex",
        "binascii.b2a_base64",
        "codecs.encode",
    }
)
CONSTRUCTORS = frozenset(
    {
        "requests.Session",
        "requests.session",
        "httpx.Client",
        "httpx.AsyncClient",
        "http.client.HTTPConnection",
        "http.client.HTTPSConnection",
        "urllib3.PoolManager",
        "aiohttp.ClientSession",
        "ftplib.FTP",
        "ftplib.FTP_TLS",
        "smtplib.SMTP",
        "smtplib.SMTP_SSL",
        "urllib.request.build_opener",
        "websocket.create_connection",
        "websocket.WebSocket",
        "dns.resolver.Resolver",
        "ssl.wrap_socket",
    }
)
SOCKETS = frozenset({"socket.socket", "socket.create_connection", "socket.fromfd"})
RUNS = frozenset(
    {
        "os.system",
        "os.popen",
        "subprocess.run",
        "subprocess.call",
        "subprocess.Popen",
        "subprocess.check_output",
        "subprocess.check_call",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
    }
)
# Methods that fill their object from their arguments (a ConfigParser reading a credentials file).
_MUTATORS = frozenset(
    {"update", "append", "extend", "insert", "add", "setdefault", "write", "read", "read_file"}
)
_DOTENV_FILE = re.compile(r"(?:^|[/\\])\.env$")
_MAX_DEPTH = 60
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _names_credential(text: str) -> bool:
    """A credential file, a ``.env`` file, or a folder of keys (``Path.home() / ".ssh"``)."""
    return bool(
        CREDENTIALS.search(text)
        or _DOTENV_FILE.search(text)
        or KEY_DIRS.fullmatch(text.lstrip("~/"))
    )


def _one_value(kinds: set[str]) -> set[str]:
    """``env["X"]`` out of the whole environment is one value."""
    return (kinds - {ENVIRONMENT}) | {ENV_VALUE} if ENVIRONMENT in kinds else kinds


def scope_nodes(scope: ast.AST, inner: tuple[type[ast.AST], ...] = _FUNCTIONS) -> list[ast.AST]:
    """The nodes of one function (or the module), not those of the ``inner`` scopes (the
    functions) defined in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, inner):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _key(node: ast.AST) -> str | None:
    """``name`` or ``self.attr.sub`` for a name or an attribute chain on a name."""
    attrs: list[str] = []
    while isinstance(node, ast.Attribute) and len(attrs) < 20:
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(attrs)])


def _path_text(node: ast.AST, depth: int = 0) -> str:
    """The constant parts of a path expression joined by ``/``: ``~ / ".ssh" / "id_rsa"``."""
    if depth > 20:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return f"{_path_text(node.left, depth + 1)}/{_path_text(node.right, depth + 1)}"
    if isinstance(node, ast.Call):
        return "/".join(_path_text(a, depth + 1) for a in node.args)
    return ""


def command_words(node: ast.AST | None, names: Names) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.List | ast.Tuple):
        return " ".join(fold(e, names) or "x" for e in node.elts)
    return fold(node, names) or ""


class Flows:
    """What every name of one module carries, learned once; ``kinds`` answers for any
    expression."""

    def __init__(self, tree: ast.Module, nodes: list[ast.AST], names: Names) -> None:
        self.names = names
        self.tree = tree
        self.defs = {n.name: n for n in nodes if isinstance(n, _FUNCTIONS)}
        self.scopes: list[ast.AST] = [tree, *(n for n in nodes if isinstance(n, _FUNCTIONS))]
        self.scope_nodes = {id(sc): scope_nodes(sc) for sc in self.scopes}
        self.tables: dict[int, dict[str, set[str]]] = {id(sc): {} for sc in self.scopes}
        self.returns: dict[str, set[str]] = {}
        for _ in range(4):  # definitions may follow their use; four passes reach a fixpoint
            for sc in self.scopes:
                self._learn(sc)

    # -- following values -------------------------------------------------------------------

    def _table(self, scope: ast.AST, key: str) -> dict[str, set[str]]:
        # Attributes (self.data) are shared by every method; plain names stay in their function.
        return self.tables[id(self.tree)] if "." in key else self.tables[id(scope)]

    def _bind(self, target: ast.AST, kinds: set[str], scope: ast.AST) -> None:
        if not kinds:
            return
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._bind(elt, kinds, scope)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, kinds, scope)
        elif isinstance(target, ast.Subscript):
            self._bind(target.value, kinds, scope)
        else:
            key = _key(target)
            if key:
                self._table(scope, key).setdefault(key, set()).update(kinds)

    def _learn(self, scope: ast.AST) -> None:
        for node in self.scope_nodes[id(scope)]:
            for target, value in _flows_of(node):
                self._bind(target, self.kinds(value, scope), scope)
            if isinstance(node, ast.Return) and node.value is not None and scope is not self.tree:
                name = getattr(scope, "name", "")
                self.returns.setdefault(name, set()).update(self.kinds(node.value, scope))
            elif isinstance(node, ast.Call):
                self._learn_call(node, scope)

    def _learn_call(self, call: ast.Call, scope: ast.AST) -> None:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            self._bind(func.value, self.argument_kinds(call, scope), scope)
        callee, skip = self.callee(call)
        if callee is None:
            return
        params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)][skip:]
        table = self.tables[id(callee)]
        for name, arg in zip(params, call.args, strict=False):
            if isinstance(arg, ast.Starred):
                break
            kinds = self.kinds(arg, scope)
            if kinds:
                table.setdefault(name, set()).update(kinds)
        for kw in call.keywords:
            kinds = self.kinds(kw.value, scope) if kw.arg else set()
            if kinds and kw.arg:
                table.setdefault(kw.arg, set()).update(kinds)

    def callee(self, call: ast.Call) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, int]:
        func = call.func
        if isinstance(func, ast.Name):
            return self.defs.get(func.id), 0
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id in {"self", "cls"}:
                return self.defs.get(func.attr), 1
        return None, 0

    def kinds(self, node: ast.AST, scope: ast.AST, depth: int = 0) -> set[str]:
        """What flows into this expression: environment, credential, env-value, ..."""
        if depth > _MAX_DEPTH:
            return set()
        if isinstance(node, ast.Name | ast.Attribute):
            return self._reference_kinds(node, scope, depth)
        if isinstance(node, ast.Subscript):
            return _one_value(self.kinds(node.value, scope, depth + 1))
        if isinstance(node, ast.Call):
            return self._call_kinds(node, scope, depth)
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            return set()  # "KEY" in os.environ is a yes or no
        if isinstance(node, ast.Constant):
            text = node.value if isinstance(node.value, str) else ""
            return {CREDENTIAL} if _names_credential(text) else set()
        if isinstance(node, (*_FUNCTIONS, ast.Lambda)):
            return set()
        return self._composite_kinds(node, scope, depth)

    def _composite_kinds(self, node: ast.AST, scope: ast.AST, depth: int) -> set[str]:
        """Containers, operators and f-strings carry what their parts carry; a path built with
        ``/`` may name a key file, and a secret before ".domain" makes a DNS label."""
        out: set[str] = set()
        for child in ast.iter_child_nodes(node):
            out |= self.kinds(child, scope, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if _names_credential(_path_text(node)):
                out.add(CREDENTIAL)
        if out & SECRETS and isinstance(node, ast.BinOp | ast.JoinedStr):
            if self._secret_label(node, scope, depth):
                out.add(LABEL)
        return out

    def _reference_kinds(
        self, node: ast.Name | ast.Attribute, scope: ast.AST, depth: int
    ) -> set[str]:
        q, _ = self.names.qualify(node)
        if q in _ENVIRON:
            return {ENVIRONMENT}
        key = _key(node)
        out: set[str] = set()
        if key:
            out |= self.tables[id(scope)].get(key, set())
            out |= self.tables[id(self.tree)].get(key, set())
        if isinstance(node, ast.Attribute):
            out |= self.kinds(node.value, scope, depth + 1)
        return out

    def _call_kinds(self, call: ast.Call, scope: ast.AST, depth: int) -> set[str]:
        q, _ = self.names.qualify(call.func)
        if q in _GETENV:
            return {ENV_VALUE}
        out = self._source_of_call(call, q)
        func = call.func
        if isinstance(func, ast.Attribute):
            receiver = self.kinds(func.value, scope, depth + 1)
            out |= _one_value(receiver) if func.attr in _ONE_VALUE else receiver
            if func.attr == "hex":
                out.add(ENCODED)
            if func.attr == "format" and self._formats_label(call, scope, depth):
                out.add(LABEL)
            if func.attr == "join" and self._joins_label(call, scope, depth):
                out.add(LABEL)
        callee, _ = self.callee(call)
        if callee is not None:
            out |= self.returns.get(callee.name, set())
        return out | self.argument_kinds(call, scope, depth)

    def _source_of_call(self, call: ast.Call, q: str | None) -> set[str]:
        out: set[str] = set()
        if q in _CREDENTIAL_CALLS or (q or "").startswith("browser_cookie3."):
            out.add(CREDENTIAL)
        if q in _PATHS and _names_credential(_path_text(call)):
            out.add(CREDENTIAL)
        if q in _ENCODERS:
            out.add(ENCODED)
        if q in CONSTRUCTORS or q in SOCKETS:
            out.add(NETOBJ)
        if q in SOCKETS:
            out.add(SOCKET)
        if q in RUNS and ENV_DUMP_SHELL.search(command_words(first_arg(call), self.names)):
            out.add(ENVIRONMENT)  # subprocess.check_output("env")
        return out

    def argument_kinds(self, call: ast.Call, scope: ast.AST, depth: int = 0) -> set[str]:
        out: set[str] = set()
        for a in call.args:
            out |= self.kinds(a, scope, depth + 1)
        for kw in call.keywords:
            if kw.arg != "env":  # the environment handed to a child process stays here
                out |= self.kinds(kw.value, scope, depth + 1)
        return out

    # -- a secret as a DNS label ------------------------------------------------------------

    def _is_secret(self, node: ast.AST, scope: ast.AST, depth: int) -> bool:
        return bool(self.kinds(node, scope, depth + 1) & SECRETS)

    def _secret_label(self, node: ast.BinOp | ast.JoinedStr, scope: ast.AST, depth: int) -> bool:
        """``key + ".x.com"``, ``f"{key}.x.com"`` or ``"%s.x.com" % key``."""
        if isinstance(node, ast.JoinedStr):
            parts: list[ast.AST] = [
                v.value if isinstance(v, ast.FormattedValue) else v for v in node.values
            ]
        elif isinstance(node.op, ast.Add):
            parts = _flatten_add(node)
        elif isinstance(node.op, ast.Mod):
            template = fold(node.left, self.names) or ""
            return "%s." in template and self._is_secret(node.right, scope, depth)
        else:
            return False
        for here, after in zip(parts, parts[1:], strict=False):
            text = fold(after, self.names)
            if text and text.startswith(".") and self._is_secret(here, scope, depth):
                return True
        return False

    def _formats_label(self, call: ast.Call, scope: ast.AST, depth: int) -> bool:
        assert isinstance(call.func, ast.Attribute)
        template = fold(call.func.value, self.names) or ""
        secret = any(self._is_secret(a, scope, depth) for a in call.args)
        return "}." in template and secret

    def _joins_label(self, call: ast.Call, scope: ast.AST, depth: int) -> bool:
        assert isinstance(call.func, ast.Attribute)
        if fold(call.func.value, self.names) != "." or not call.args:
            return False
        return self._is_secret(call.args[0], scope, depth)


def _flows_of(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs a statement binds: assignments, loops, ``with ... as``."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.NamedExpr):
        return [(node.target, node.value)]
    if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


def _flatten_add(node: ast.AST) -> list[ast.AST]:
    """``a + b + c`` as ``[a, b, c]`` (iterative: a chain may be thousands of terms long)."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        here = stack.pop()
        if isinstance(here, ast.BinOp) and isinstance(here.op, ast.Add):
            stack.extend((here.right, here.left))
        else:
            out.append(here)
    return out


def first_arg(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in {"args", "cmd"}), None)
