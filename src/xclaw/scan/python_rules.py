"""Python files read with the ``ast`` parser: what a call really reaches (through aliases,
getattr and assembled strings) and where its argument comes from (decoded, downloaded)."""

from __future__ import annotations

import ast
import re

from xclaw.scan.context import FileContext
from xclaw.scan.python_names import Names, fold
from xclaw.scan.python_network import scan_network_flows
from xclaw.scan.python_patching import scan_xclaw_rebinding
from xclaw.scan.python_taint import scope_nodes
from xclaw.scan.report import Severity
from xclaw.scan.text_rules import CREDENTIALS, PIPE_TO_SHELL

_SHELL_RUN = {
    "os.system",
    "os.popen",
    "os.execv",
    "os.execvp",
    "os.execl",
    "os.execlp",
    "os.spawnl",
    "subprocess.run",
    "subprocess.call",
    "subprocess.Popen",
    "subprocess.check_output",
    "subprocess.check_call",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "pty.spawn",
}
_CODE_RUN = {"builtins.exec", "builtins.eval", "builtins.compile", "runpy.run_path"}
SINKS = frozenset(_SHELL_RUN | _CODE_RUN)
DECODERS = frozenset(
    {
        "base64.b64decode",
        "base64.standard_b64decode",
        "base64.urlsafe_b64decode",
        "base64.b32decode",
        "base64.b16decode",
        "base64.b85decode",
        "base64.a85decode",
        "base64.decodebytes",
        "base64.decodestring",
        "binascii.unhexlify",
        "binascii.a2b_hex",
        "binascii.a2b_base64",
        "builtins.bytes.fromhex",
        "builtins.bytearray.fromhex",
        "codecs.decode",
        "zlib.decompress",
        "gzip.decompress",
        "bz2.decompress",
        "lzma.decompress",
    }
)
NETWORK = frozenset(
    {
        "urllib.request.urlopen",
        "urllib.request.urlretrieve",
        "urllib.request.Request",
        "urllib.urlopen",
        "urllib2.urlopen",
        "requests.get",
        "requests.post",
        "requests.request",
        "requests.Session",
        "httpx.get",
        "httpx.post",
        "httpx.Client",
        "httpx.AsyncClient",
        "http.client.HTTPConnection",
        "http.client.HTTPSConnection",
        "socket.socket",
        "socket.create_connection",
        "urllib3.PoolManager",
        "aiohttp.ClientSession",
        "ftplib.FTP",
        "smtplib.SMTP",
        "smtplib.SMTP_SSL",
    }
)
_NETWORK_MODULES = (
    "urllib.request",
    "urllib2",
    "requests",
    "httpx",
    "http.client",
    "socket",
    "urllib3",
    "aiohttp",
    "ftplib",
    "smtplib",
)
DESERIALIZERS = frozenset(
    {
        "marshal.loads",
        "pickle.loads",
        "_pickle.loads",
        "cPickle.loads",
        "dill.loads",
        "cloudpickle.loads",
        "pickle.load",
        "marshal.load",
    }
)
_INTERESTING = SINKS | DECODERS | NETWORK | DESERIALIZERS
_DOWNLOAD_CMD = re.compile(
    r"\b(?:curl|wget|Invoke-WebRequest|iwr)\b|https?://|pip\s+install\s+"
    r"(?:git\+|https?:)|\bgit\s+clone\b",
    re.IGNORECASE,
)
_MAX_NESTING = 3
# Text without any of these cannot reach an xclaw module (not even through an assembled name).
_REBINDING_HINTS = ("xclaw", "import_module", "__import__", "modules")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _Taint:
    """Names assigned from decoded or downloaded data, per function scope (a module-level name
    is seen from every function), followed through assignments and function returns."""

    def __init__(self, tree: ast.Module, nodes: list[ast.AST], names: Names) -> None:
        self.names = names
        self.functions: dict[str, set[str]] = {}  # function name -> what its return carries
        self.module: dict[str, set[str]] = {}
        self.local: dict[int, dict[str, set[str]]] = {}  # id(function) -> name -> kinds
        self.scope_of: dict[int, ast.AST] = {}  # id(call) -> its function, or the module
        self.direct: dict[int, set[str]] = {}
        has_sink = False
        for node in nodes:
            if isinstance(node, ast.Call):
                kinds = self._direct_kind(node)
                if kinds:
                    self.direct[id(node)] = kinds
                q, _ = names.qualify(node.func)
                has_sink = has_sink or q in SINKS or q in DESERIALIZERS
        if not (self.direct and has_sink):
            self.direct = {} if not has_sink else self.direct
            return  # nothing decoded or downloaded reaches a sink: nothing to follow
        scopes: list[ast.AST] = [tree, *(n for n in nodes if isinstance(n, _SCOPES))]
        self.nodes = {id(sc): scope_nodes(sc, _SCOPES) for sc in scopes}
        for sc in scopes:
            for node in self.nodes[id(sc)]:
                if isinstance(node, ast.Call):
                    self.scope_of[id(node)] = sc
        for _ in range(3):  # definitions may come after use; three passes reach a fixpoint
            for sc in scopes:
                self._scope_pass(sc, tree)

    def _scope_pass(self, sc: ast.AST, tree: ast.Module) -> None:
        table = self.module if sc is tree else self.local.setdefault(id(sc), {})
        returns: set[str] = set()
        for node in self.nodes[id(sc)]:
            if isinstance(node, ast.Return) and node.value is not None:
                returns |= self.sources(node.value, sc)
                continue
            value, targets = _assignment(node)
            if value is None:
                continue
            kinds = self.sources(value, sc)
            if kinds:
                for t in targets:
                    table.setdefault(t, set()).update(kinds)
        if returns and isinstance(sc, ast.FunctionDef | ast.AsyncFunctionDef):
            self.functions.setdefault(sc.name, set()).update(returns)

    def sources(self, node: ast.AST, scope: ast.AST | None = None) -> set[str]:
        """``decoded`` / ``downloaded`` / ``deserialized``: what flows into this expression."""
        if not self.direct:
            return set()
        local = self.local.get(id(scope), {}) if scope is not None else {}
        kinds: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                kinds |= local.get(sub.id, set()) | self.module.get(sub.id, set())
            elif isinstance(sub, ast.Call):
                kinds |= self.direct.get(id(sub), set())
                if isinstance(sub.func, ast.Name):
                    kinds |= self.functions.get(sub.func.id, set())
        return kinds

    def _direct_kind(self, call: ast.Call) -> set[str]:
        q, _ = self.names.qualify(call.func)
        if q in DECODERS or _is_decode_method(call) or _is_chr_chain(call):
            return {"decoded"}
        if q in NETWORK:
            return {"downloaded"}
        if q in DESERIALIZERS:
            return {"decoded", "deserialized"}
        return set()


def _assignment(node: ast.AST) -> tuple[ast.AST | None, list[str]]:
    if isinstance(node, ast.Assign):
        return node.value, [
            n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)
        ]
    if isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
        return node.value, [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return node.context_expr, [
            n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)
        ]
    return None, []


def _is_decode_method(call: ast.Call) -> bool:
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    if f.attr == "fromhex":
        return True
    if f.attr in {"decode", "encode"} and call.args:
        return fold(call.args[0]) in {"rot13", "rot_13", "hex", "base64", "zlib", "bz2"}
    return False


def _is_chr_chain(call: ast.Call) -> bool:
    # "".join(chr(c) for c in [...]) or "".join(map(chr, [...]))
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "join" and call.args):
        return False
    inner = call.args[0]
    return any(isinstance(n, ast.Name) and n.id == "chr" for n in ast.walk(inner)) and any(
        isinstance(n, ast.List | ast.Tuple) and len(n.elts) >= 8 for n in ast.walk(inner)
    )


def _command_text(node: ast.AST, names: Names, depth: int = 0) -> str:
    """A command as far as it can be spelled: list items joined, unknown parts as ``x``."""
    if depth > 40:
        return "x"
    if isinstance(node, ast.List | ast.Tuple):
        return " ".join(_command_text(e, names, depth + 1) for e in node.elts)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            _command_text(v.value, names)
            if isinstance(v, ast.FormattedValue)
            else (fold(v, names) or "x")
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _command_text(node.left, names, depth + 1) + _command_text(
            node.right, names, depth + 1
        )
    return fold(node, names) or "x"


def scan_python(
    ctx: FileContext, *, nesting: int = 0, line_offset: int = 0, text: str | None = None
) -> None:
    """Apply the Python rules; ``text`` set means code found inside a string (``exec("...")``),
    whose findings are reported at the line of that string."""
    source = ctx.text if text is None else text
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if text is None:
            ctx.emit("python.unparsable", 1)
        return
    if text is None:
        ctx.parsed = True
    nodes = list(ast.walk(tree))  # walked once: every rule below reads this list
    names = Names.of(nodes)
    names.learn_assignments(nodes, _INTERESTING)
    checker = _Checker(ctx, names, _Taint(tree, nodes, names), nesting, line_offset)
    for node in nodes:
        if isinstance(node, ast.Call):
            checker.call(node)
        elif isinstance(node, ast.BinOp | ast.JoinedStr):
            checker.assembled_string(node)
        elif isinstance(node, ast.Import | ast.ImportFrom) and ctx.install:
            checker.network_import(node)
    if any(word in source for word in _REBINDING_HINTS):
        scan_xclaw_rebinding(nodes, names, checker.emit)
    scan_network_flows(nodes, tree, names, checker.emit)


class _Checker:
    def __init__(
        self, ctx: FileContext, names: Names, taint: _Taint, nesting: int, line_offset: int
    ) -> None:
        self.ctx, self.names, self.taint = ctx, names, taint
        self.nesting, self.line_offset = nesting, line_offset

    def at(self, node: ast.AST) -> tuple[int, int]:
        if self.line_offset:
            return self.line_offset, 1
        return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1

    def emit(self, rule: str, node: ast.AST, **kw: object) -> None:
        line, col = self.at(node)
        self.ctx.emit(rule, line, col, **kw)  # type: ignore[arg-type]

    def call(self, node: ast.Call) -> None:
        q, hidden = self.names.qualify(node.func)
        if q in DESERIALIZERS:
            self._deserialize(node)
        if self.ctx.install and (q in NETWORK or (q in _SHELL_RUN and self._downloads(node))):
            self.emit(
                "install.network", node, message=f"Install-time code reaches the network ({q})."
            )
        if q not in SINKS:
            if hidden and q and q.split(".")[-1] in {"system", "popen", "exec", "eval"}:
                self.emit("python.obfuscated_call", node)
            return
        self._sink(node, q, hidden)

    def _sink(self, node: ast.Call, q: str, hidden: bool) -> None:
        args: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
        kinds: set[str] = set()
        scope = self.taint.scope_of.get(id(node))
        for a in args:
            kinds |= self.taint.sources(a, scope)
        if "decoded" in kinds:
            self.emit(
                "exec.decoded_payload",
                node,
                message=f"A decoded payload is passed to {q.removeprefix('builtins.')}().",
            )
        elif "downloaded" in kinds:
            self.emit(
                "exec.download",
                node,
                message=f"Data fetched from the network is passed to "
                f"{q.removeprefix('builtins.')}().",
            )
        if hidden:
            self.emit(
                "python.obfuscated_call",
                node,
                message=f"{q.removeprefix('builtins.')}() is reached through a computed name.",
            )
        if q in _CODE_RUN and not kinds and q != "runpy.run_path":
            self._code_run(node, q, args)
        self._spelled_command(node, args)

    def _code_run(self, node: ast.Call, q: str, args: list[ast.AST]) -> None:
        first = args[0] if args else None
        if isinstance(first, ast.Call):
            fq, _ = self.names.qualify(first.func)
            if fq == "builtins.compile":
                return  # exec(compile(...)): reported once, on compile()
        if q == "builtins.eval" and isinstance(first, ast.Constant):
            return  # eval("1 + 2") is a constant expression
        self.emit(
            "exec.dynamic_code",
            node,
            message=f"Code is built at run time and passed to {q.removeprefix('builtins.')}().",
        )
        code = fold(first, self.names) if first is not None else None
        if code and self.nesting < _MAX_NESTING:
            line, _ = self.at(node)
            scan_python(self.ctx, nesting=self.nesting + 1, line_offset=line, text=code)

    def _spelled_command(self, node: ast.Call, args: list[ast.AST]) -> None:
        for a in args:
            text = _command_text(a, self.names)
            if text and any(p.search(text) for p in PIPE_TO_SHELL):
                self.emit(
                    "shell.pipe_to_shell",
                    node,
                    message="A command run here pipes a download to a shell.",
                )
                return

    def _deserialize(self, node: ast.Call) -> None:
        arg = node.args[0] if node.args else None
        if arg is None:
            return
        inline = isinstance(arg, ast.Constant) and isinstance(arg.value, bytes | str)
        scope = self.taint.scope_of.get(id(node))
        if inline or "decoded" in self.taint.sources(arg, scope):
            self.emit("exec.inline_deserialize", node)

    def _downloads(self, node: ast.Call) -> bool:
        return any(
            _DOWNLOAD_CMD.search(_command_text(a, self.names))
            for a in [*node.args, *(k.value for k in node.keywords)]
        )

    def assembled_string(self, node: ast.BinOp | ast.JoinedStr) -> None:
        """Strings glued together at run time, checked once whole: ``'~/.ss' + 'h/id_rsa'``."""
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Add):
            return
        text = fold(node, self.names)
        if not text or len(text) < 6 or not CREDENTIALS.search(text):
            return
        parts = [fold(n) or "" for n in ast.walk(node) if isinstance(n, ast.Constant)]
        if not any(CREDENTIALS.search(p) for p in parts):
            self.emit(
                "credentials.read",
                node,
                message="A credential path is assembled from pieces at run time.",
            )

    def network_import(self, node: ast.Import | ast.ImportFrom) -> None:
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for m in mods:
            if m.startswith(_NETWORK_MODULES):
                self.emit(
                    "install.network",
                    node,
                    severity=Severity.HIGH,
                    message=f"Install-time code imports a network module ({m}).",
                )
                return
