"""Monkey-patching of xclaw itself: any rebinding of an attribute of an ``xclaw`` module, or of
an object imported from one.

An enabled plugin runs in xclaw's process, so ``p.is_secret_path = lambda s: False`` would
switch the credential guard off for every later tool call. No plugin needs to write into
xclaw's namespace: it registers tools, services and hooks through ``PluginApi``. Reading xclaw
(``from xclaw.tools.base import tool``), subclassing its classes and setting attributes on
objects the plugin built itself are fine.

Caught whatever the spelling: ``import xclaw.policy.paths as p``, ``from xclaw.policy import
engine``, ``importlib.import_module("xclaw...")``, ``__import__``, ``sys.modules["xclaw..."]``,
``getattr`` chains and names assigned from any of those; written by assignment (also augmented
or in a ``for``/``with`` target), ``del``, ``setattr``/``delattr``/``object.__setattr__``,
``X.__dict__[...] = ``, ``vars(X).update(...)``, ``mock.patch("xclaw...")`` or
``monkeypatch.setattr``, or by replacing the module in ``sys.modules``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from xclaw.scan.python_names import Names, fold

Emit = Callable[..., None]  # (rule, node, *, message=...) -> None

_SETATTR = frozenset(
    {
        "builtins.setattr",
        "builtins.delattr",
        "builtins.object.__setattr__",
        "builtins.object.__delattr__",
        "builtins.type.__setattr__",
        "builtins.type.__delattr__",
    }
)
_DICT_WRITES = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
)
_PATCHERS = frozenset(
    {
        *(f"{m}.{f}" for m in ("mock", "unittest.mock") for f in ("patch", "patch.object")),
        "monkeypatch.setattr",
        "monkeypatch.delattr",
        "pytest.MonkeyPatch.setattr",
    }
)


def is_xclaw(name: str | None) -> bool:
    return name is not None and (name == "xclaw" or name.startswith("xclaw."))


def scan_xclaw_rebinding(nodes: list[ast.AST], names: Names, emit: Emit) -> None:
    """Report every write into an xclaw module or an object taken from one."""
    resolver = _Resolver(names, nodes)
    if not resolver.any_xclaw:
        return
    for node in nodes:
        found = resolver.rebinding(node)
        if found:
            target, how = found
            emit(
                "python.patches_xclaw",
                node,
                message=f"{target} is rebound ({how}); plugins must not patch xclaw, "
                "which would run with the patched behaviour.",
            )


class _Resolver:
    """Which expressions name xclaw: imports, plus names assigned from an xclaw expression."""

    def __init__(self, names: Names, nodes: list[ast.AST]) -> None:
        self.names = names
        self.aliases: dict[str, str] = {
            local: q for local, (q, _) in names.aliases.items() if is_xclaw(q)
        }
        assigned = [n for n in nodes if isinstance(n, ast.Assign | ast.NamedExpr | ast.withitem)]
        for _ in range(3):  # chains: m = import_module("xclaw.policy"); p = m.paths
            for node in assigned:
                self._learn(node)
        self.any_xclaw = bool(self.aliases) or any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) and is_xclaw(n.value)
            for n in nodes
        )

    def _learn(self, node: ast.Assign | ast.NamedExpr | ast.withitem) -> None:
        if isinstance(node, ast.withitem):
            target, value = node.optional_vars, node.context_expr
        elif isinstance(node, ast.NamedExpr):
            target, value = node.target, node.value
        else:
            target, value = node.targets[0], node.value
        if isinstance(target, ast.Name):
            q = self.resolve(value)
            if q:
                self.aliases[target.id] = q

    def resolve(self, node: ast.AST, depth: int = 0) -> str | None:
        """The xclaw dotted name an expression stands for, or None."""
        if depth > 30:
            return None
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value, depth + 1)
            if base is None:
                return None
            return base if node.attr == "__dict__" else f"{base}.{node.attr}"
        if isinstance(node, ast.Subscript):
            return self._resolve_subscript(node)
        if isinstance(node, ast.Call):
            return self._resolve_call(node, depth)
        return None

    def _resolve_subscript(self, node: ast.Subscript) -> str | None:
        q, _ = self.names.qualify(node.value)
        key = fold(node.slice, self.names)
        return key if q == "sys.modules" and is_xclaw(key) else None

    def _resolve_call(self, node: ast.Call, depth: int) -> str | None:
        q, _ = self.names.qualify(node.func)
        if q in {"builtins.getattr", "builtins.vars"} and node.args:
            base = self.resolve(node.args[0], depth + 1)
            if base and q == "builtins.getattr" and len(node.args) >= 2:
                attr = fold(node.args[1], self.names)
                return f"{base}.{attr}" if attr else base
            return base
        if q in {"importlib.import_module", "builtins.__import__"} and node.args:
            name = fold(node.args[0], self.names)
            return name if is_xclaw(name) else None
        return None

    def rebinding(self, node: ast.AST) -> tuple[str, str] | None:
        """(what is rebound, how) when ``node`` writes into xclaw."""
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            base = self.resolve(node.value)
            how = "deleted" if isinstance(node.ctx, ast.Del) else "assigned"
            return (f"{base}.{node.attr}", how) if base else None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            return self._namespace_item(node)
        if isinstance(node, ast.Call):
            return self._rebinding_call(node)
        return None

    def _namespace_item(self, node: ast.Subscript) -> tuple[str, str] | None:
        q, _ = self.names.qualify(node.value)
        key = fold(node.slice, self.names)
        if q == "sys.modules" and is_xclaw(key):
            return f"sys.modules[{key!r}]", "module replaced"
        if _is_namespace(node.value):
            base = self.resolve(node.value)
            if base:
                return f"{base}.{key or '?'}", "written through its __dict__"
        return None

    def _rebinding_call(self, node: ast.Call) -> tuple[str, str] | None:
        q, _ = self.names.qualify(node.func)
        func = node.func
        if q in _SETATTR and node.args:
            base = self.resolve(node.args[0])
            attr = fold(node.args[1], self.names) if len(node.args) > 1 else None
            return (f"{base}.{attr or '?'}", q.rsplit(".", 1)[-1] + "()") if base else None
        if isinstance(func, ast.Attribute):
            if func.attr in {"__setattr__", "__delattr__"}:
                base = self.resolve(func.value)
                return (base, func.attr + "()") if base else None
            if func.attr in _DICT_WRITES and _is_namespace(func.value):
                base = self.resolve(func.value)
                return (base, f"__dict__.{func.attr}()") if base else None
        if q in _PATCHERS and node.args:
            return self._patched(node, q)
        return None

    def _patched(self, node: ast.Call, q: str | None) -> tuple[str, str] | None:
        first = node.args[0]
        how = f"{str(q).rsplit('.', 1)[-1]}()"
        text = fold(first, self.names)
        if text is not None and is_xclaw(text):
            return text, how
        base = self.resolve(first)
        return (base, how) if base else None


def _is_namespace(node: ast.AST) -> bool:
    """``X.__dict__`` or ``vars(X)``: the mapping that holds a module's or class's names."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and bool(node.args)
    )
