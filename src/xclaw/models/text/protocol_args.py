"""Turn an ``<args>`` element into plain arguments, guided by the tool's JSON schema.

Strings are the element's text (CDATA content exactly; layout whitespace around a CDATA
section is dropped). Integers and numbers are parsed strictly from their text, booleans are
``true``/``false``, arrays are repeated ``<item>`` children, objects are nested elements named
after their fields, and free-form maps are ``<item key="NAME">`` children. Anything else is a
problem reported back to the model; nothing is guessed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from xclaw.models.text.protocol_xml import Node

_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_MAX_DEPTH = 32
_MAX_PROBLEMS = 8


class ArgumentProblems(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def convert_arguments(args: Node | None, schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments in ``args`` (``None``: no ``<args>`` element); raises ArgumentProblems."""
    converter = _Converter(schema)
    if args is None:
        value: Any = {}
        converter.check_required({}, converter.resolve(schema), "")
    else:
        value = converter.convert(args, schema, "", 0)
    if converter.problems:
        raise ArgumentProblems(converter.problems[:_MAX_PROBLEMS])
    if not isinstance(value, dict):
        raise ArgumentProblems(["the arguments must be named elements inside <args>"])
    return value


class _Converter:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.problems: list[str] = []

    def fail(self, path: str, problem: str) -> None:
        self.problems.append(f"{path or '<args>'}: {problem}")

    def resolve(self, schema: Any) -> dict[str, Any]:
        return resolve_schema(schema, self.root)

    def convert(self, node: Node, schema: Any, path: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            self.fail(path, "nested too deeply")
            return None
        schema = self.resolve(schema)
        branches = alternatives(schema)
        if len(branches) == 1 and branches[0] is schema:
            return self.convert_one(node, schema, path, depth)
        if len(branches) == 1:
            return self.convert(node, branches[0], path, depth + 1)
        for branch in branches:
            trial = _Converter(self.root)
            value = trial.convert(node, branch, path, depth + 1)
            if not trial.problems:
                return value
        self.fail(path, f"does not match any of: {', '.join(type_name(b) for b in branches)}")
        return None

    def convert_one(self, node: Node, schema: dict[str, Any], path: str, depth: int) -> Any:
        kind = schema_type(schema)
        if kind == "object":
            return self.convert_object(node, schema, path, depth)
        if kind == "array":
            return self.convert_array(node, schema, path, depth)
        if node.children:
            self.fail(path, "takes text, not elements; put text containing < or & in CDATA")
            return None
        value = self.scalar(node.value(), kind, path)
        return self.check_enum(value, schema, path)

    def scalar(self, text: str, kind: str, path: str) -> Any:
        word = text.strip()
        if kind == "integer":
            if _INTEGER.fullmatch(word):
                return int(word)
            self.fail(path, f"expects an integer, got {_quote(text)}")
        elif kind == "number":
            if _NUMBER.fullmatch(word) and math.isfinite(float(word)):
                return int(word) if _INTEGER.fullmatch(word) else float(word)
            self.fail(path, f"expects a number, got {_quote(text)}")
        elif kind == "boolean":
            if word.lower() in ("true", "false"):
                return word.lower() == "true"
            self.fail(path, f"expects true or false, got {_quote(text)}")
        elif kind == "null":
            if not word:
                return None
            self.fail(path, "must be empty (null)")
        else:
            return text
        return None

    def check_enum(self, value: Any, schema: dict[str, Any], path: str) -> Any:
        choices = schema.get("enum")
        if "const" in schema:
            choices = [schema["const"]]
        if not isinstance(choices, list) or value in choices:
            return value
        # Layout whitespace around a closed choice cannot change its meaning.
        if isinstance(value, str) and value.strip() in choices:
            return value.strip()
        self.fail(path, f"must be one of {', '.join(map(_quote, choices))}, got {_quote(value)}")
        return value

    def convert_array(self, node: Node, schema: dict[str, Any], path: str, depth: int) -> Any:
        if node.has_text():
            self.fail(path, "is a list: put each value in its own <item> element")
            return []
        items = self.resolve(schema.get("items", {}))
        # Plain item schemas skip the union machinery: long lists must stay fast.
        plain = alternatives(items) == [items]
        out: list[Any] = []
        for i, child in enumerate(node.children):
            if child.tag != "item":
                self.fail(f"{path}.{child.tag}", "list values must be <item> elements")
            elif plain:
                out.append(self.convert_one(child, items, f"{path}[{i}]", depth + 1))
            else:
                out.append(self.convert(child, items, f"{path}[{i}]", depth + 1))
        return out

    def convert_object(self, node: Node, schema: dict[str, Any], path: str, depth: int) -> Any:
        if node.has_text():
            self.fail(path, "takes named child elements, not text")
            return {}
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        is_map = not props and isinstance(extra, dict)
        out: dict[str, Any] = {}
        for child in node.children:
            key = child.attrs.get("key", "") if is_map and child.tag == "item" else child.tag
            where = f"{path}.{key}" if path else key
            if key in out:
                self.fail(where, "is given more than once")
            elif key in props:
                out[key] = self.convert(child, props[key], where, depth + 1)
            elif isinstance(extra, dict):
                out[key] = self.convert(child, extra, where, depth + 1)
            else:
                allowed = ", ".join(props) or "none"
                self.fail(where, f"is not an argument here (allowed: {allowed})")
        self.check_required(out, schema, path)
        return out

    def check_required(self, given: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if name not in given:
                self.fail(f"{path}.{name}" if path else str(name), "is required but missing")


def resolve_schema(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (local ``#/...`` only) and single-entry ``allOf`` wrappers."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            schema = {**_lookup(root, ref), **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            schema = {**resolve_schema(all_of[0], root), **rest}
            continue
        return schema
    return {}


def _lookup(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    if not ref.startswith("#"):
        return {}
    for key in filter(None, ref[1:].split("/")):
        if not isinstance(node, dict):
            return {}
        node = node.get(key, {})
    return node if isinstance(node, dict) else {}


def alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The non-null branches of a union (``anyOf``/``oneOf``/type list), or the schema itself."""
    branches: list[Any] | None = None
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            branches = schema[key]
    if branches is None and isinstance(schema.get("type"), list):
        branches = [{**schema, "type": t} for t in schema["type"]]
    if branches is None:
        return [schema]
    dicts: list[dict[str, Any]] = [b for b in branches if isinstance(b, dict)]
    non_null = [b for b in dicts if b.get("type") != "null"]
    empty: dict[str, Any] = {}
    return non_null or dicts or [empty]


def schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def type_name(schema: dict[str, Any]) -> str:
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    return schema_type(schema)


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text if len(text) <= 60 else text[:57] + "...")
