"""Resolving what a Python expression names or spells, the way an obfuscator hides it:
import aliases, ``getattr(x, 'ex' + 'ec')``, ``__import__('o'+'s')``, ``globals()['eval']``,
``''.join([...])``, ``s[::-1]``, ``chr(101)``, and constant base64/hex decoded in place."""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import codecs
from collections.abc import Callable
from dataclasses import dataclass, field

_BUILTINS = frozenset(dir(builtins))
_MAX_FOLD = 100_000
_DECODE_CONST: dict[str, Callable[[bytes], bytes]] = {
    "base64.b64decode": base64.b64decode,
    "base64.standard_b64decode": base64.b64decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode,
    "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode,
    "base64.b85decode": base64.b85decode,
    "base64.decodebytes": base64.decodebytes,
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "builtins.bytes.fromhex": lambda raw: bytes.fromhex(raw.decode("latin-1")),
}


@dataclass
class Names:
    """Import and assignment aliases of one module: local name -> (qualified name, hidden)."""

    aliases: dict[str, tuple[str, bool]] = field(default_factory=dict)
    consts: dict[str, str] = field(default_factory=dict)  # names bound once to a folded string

    @classmethod
    def of(cls, nodes: list[ast.AST]) -> Names:
        names = cls()
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    names.aliases[local] = (a.name if a.asname else local, False)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    names.aliases[a.asname or a.name] = (f"{node.module}.{a.name}", False)
        names.aliases.setdefault("__builtins__", ("builtins", False))
        return names

    def learn_assignments(self, nodes: list[ast.AST], interesting: frozenset[str]) -> None:
        """``e = exec`` or ``f = getattr(os, 'system')``: remember ``e`` and ``f`` as aliases."""
        seen: dict[str, int] = {}
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    seen[target.id] = seen.get(target.id, 0) + 1
                    text = fold(node.value, self)
                    if text is not None and seen[target.id] == 1:
                        self.consts[target.id] = text
                    elif target.id in self.consts:
                        del self.consts[target.id]  # rebound: no longer one known value
                if isinstance(target, ast.Name) and not isinstance(node.value, ast.Constant):
                    q, hidden = self.qualify(node.value)
                    if q and (q in interesting or q.split(".")[0] in {"builtins", "os"}):
                        self.aliases[target.id] = (q, hidden)

    def qualify(self, node: ast.AST, depth: int = 0) -> tuple[str | None, bool]:
        """The dotted name an expression refers to, and whether it was hidden to get there."""
        if depth > 20:
            return None, False
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return (f"builtins.{node.id}" if node.id in _BUILTINS else node.id), False
        if isinstance(node, ast.Attribute):
            base, hidden = self.qualify(node.value, depth + 1)
            if base is None:
                return None, hidden
            if node.attr == "__dict__":
                return base, hidden
            return f"{base}.{node.attr}", hidden
        if isinstance(node, ast.Call):
            return self._qualify_call(node, depth)
        if isinstance(node, ast.Subscript):
            base, _ = self.qualify(node.value, depth + 1)
            key = fold(node.slice, self)
            if base in {"builtins.globals()", "builtins.vars()", "builtins.locals()", "builtins"}:
                return (f"builtins.{key}" if key else None), True
            return None, False
        return None, False

    def _qualify_call(self, node: ast.Call, depth: int) -> tuple[str | None, bool]:
        func, hidden = self.qualify(node.func, depth + 1)
        if func in {"builtins.__import__", "importlib.import_module"} and node.args:
            name = fold(node.args[0], self)
            plain = isinstance(node.args[0], ast.Constant)
            return name, hidden or not plain
        if func == "builtins.getattr" and len(node.args) >= 2:
            base, _ = self.qualify(node.args[0], depth + 1)
            attr = fold(node.args[1], self)
            if base and attr:
                if base.endswith(".__dict__"):
                    base = base[: -len(".__dict__")]
                return f"{base}.{attr}", True
            return None, True
        if func in {"builtins.globals", "builtins.vars", "builtins.locals"}:
            if func == "builtins.vars" and node.args:
                return self.qualify(node.args[0], depth + 1)
            return f"{func}()", hidden
        return None, hidden


def fold(node: ast.AST, names: Names | None = None, depth: int = 0) -> str | None:
    """The constant string an expression spells, if it spells one (bytes read as latin-1)."""
    if depth > 40:
        return None
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return node.value
        if isinstance(node.value, bytes):
            return node.value.decode("latin-1")
        return None
    if isinstance(node, ast.Name) and names is not None:
        return names.consts.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold(node.left, names, depth + 1), fold(node.right, names, depth + 1)
        if left is None or right is None or len(left) + len(right) > _MAX_FOLD:
            return None
        return left + right
    if isinstance(node, ast.JoinedStr):
        parts = [
            fold(v.value if isinstance(v, ast.FormattedValue) else v, names, depth + 1)
            for v in node.values
        ]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _fold_slice(node, names, depth)
    if isinstance(node, ast.Call):
        return _fold_call(node, names, depth)
    return None


def _fold_slice(node: ast.Subscript, names: Names | None, depth: int) -> str | None:
    s = node.slice
    assert isinstance(s, ast.Slice)
    base = fold(node.value, names, depth + 1)
    if base is None or s.lower is not None or s.upper is not None:
        return None
    step = s.step
    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub):
        if isinstance(step.operand, ast.Constant) and step.operand.value == 1:
            return base[::-1]
    return None


def _fold_call(node: ast.Call, names: Names | None, depth: int) -> str | None:
    func = node.func
    args = node.args
    if isinstance(func, ast.Attribute):
        if func.attr == "join" and len(args) == 1 and isinstance(args[0], ast.List | ast.Tuple):
            sep = fold(func.value, names, depth + 1)
            items = [fold(e, names, depth + 1) for e in args[0].elts]
            if sep is None or any(i is None for i in items):
                return None
            return sep.join(i for i in items if i is not None)
        if func.attr in {"decode", "encode", "lower", "upper", "strip"} and not args:
            base = fold(func.value, names, depth + 1)
            return (
                None
                if base is None
                else getattr(base, func.attr)()
                if func.attr in {"lower", "upper", "strip"}
                else base
            )
        if func.attr in {"decode", "encode"} and args and fold(args[0]) in {"rot13", "rot_13"}:
            base = fold(func.value, names, depth + 1)
            return None if base is None else codecs.decode(base, "rot13")
    if isinstance(func, ast.Name) and func.id == "chr" and len(args) == 1:
        a = args[0]
        if isinstance(a, ast.Constant) and isinstance(a.value, int) and 0 <= a.value < 0x110000:
            return chr(a.value)
        return None
    return _fold_decoded_constant(node, names, depth)


def _fold_decoded_constant(node: ast.Call, names: Names | None, depth: int) -> str | None:
    if names is None or not node.args:
        return None
    q, _ = names.qualify(node.func)
    if q == "codecs.decode" and len(node.args) >= 2 and fold(node.args[1]) in {"rot13", "rot_13"}:
        text = fold(node.args[0], names, depth + 1)
        return None if text is None else codecs.decode(text, "rot13")
    decoder = _DECODE_CONST.get(q or "")
    if decoder is None:
        return None
    raw = fold(node.args[0], names, depth + 1)
    if raw is None:
        return None
    try:
        return decoder(raw.encode("latin-1")).decode("latin-1")
    except (ValueError, TypeError, binascii.Error):
        return None
