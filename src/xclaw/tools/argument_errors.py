"""What a refused tool call tells the model: the bad fields and what each one takes.

A refusal used to carry the tool's whole JSON schema (38 lines for ``terminal.exec``), though
the model already has it in the tool catalogue. ``explain`` keeps only what the model needs to
send the call again: for each field the validation named, its expected type, its allowed values
and bounds; for an unknown field, the fields the tool does take.

    explain(schema, "mode: Input should be 'create' or 'overwrite'")
    # ({"fields": [{"field": "mode", "expected": "string", "allowed": ["create", "overwrite"]}]},
    #  "mode takes a string, one of create, overwrite")

``terminal.exec`` called with ``argv: "-la"`` is told ``argv takes an array of strings``.
"""

from __future__ import annotations

from typing import Any

_BOUNDS: tuple[str, ...] = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_BOUNDS += ("minLength", "maxLength", "minItems", "maxItems")
_WHOLE_CALL = "(arguments)"  # validation_detail's name for the call as a whole


def explain(schema: dict[str, Any], detail: str) -> tuple[dict[str, Any], str]:
    """The bad fields of ``detail`` (``validation_detail``'s ``field: message; ...``)
    as compact data, and a sentence saying what each takes. ``accepted`` and ``required``
    (field names only) are added when a field is unknown or the call is not an object."""
    fields: list[dict[str, Any]] = []
    sentences: list[str] = []
    accepted = list((schema.get("properties") or {}).keys())
    lost = False  # the model must be told which fields exist
    for path in _field_paths(detail):
        sub = None if path == _WHOLE_CALL else _schema_at(schema, path.split("."))
        if sub is None:
            lost = True
            fields.append({"field": path, "expected": "object" if path == _WHOLE_CALL else None})
            if path != _WHOLE_CALL:
                sentences.append(f"{path} is not a field of this tool")
            continue
        entry = {"field": path, **_describe(schema, sub)}
        fields.append(entry)
        sentences.append(_sentence(entry))
    data: dict[str, Any] = {"fields": fields}
    if lost or not fields:  # not a field problem: the arguments are not an object at all
        data["accepted"] = accepted
        sentences.append(_takes(accepted))
        if schema.get("required"):
            data["required"] = list(schema["required"])
            sentences.append(f"required: {', '.join(schema['required'])}")
    return data, "; ".join(dict.fromkeys(sentences))


def _field_paths(detail: str) -> list[str]:
    paths: list[str] = []
    for part in detail.split("; "):
        name, sep, _ = part.partition(": ")
        if sep and name and " " not in name and name not in paths:
            paths.append(name)
    return paths


def _takes(accepted: list[str]) -> str:
    return f"the tool takes {', '.join(accepted)}" if accepted else "the tool takes no fields"


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _arms(root: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(root, node)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            return [_resolve(root, arm) for arm in node[key] if isinstance(arm, dict)]
    return [node]


def _schema_at(root: dict[str, Any], steps: list[str]) -> dict[str, Any] | None:
    """The schema of the value at ``steps`` (``argv.0``, ``env.NAME``); None when no field
    of that name exists."""
    node: dict[str, Any] | None = root
    for step in steps:
        if node is None:
            return None
        node = _child(root, node, step)
    return node


def _child(root: dict[str, Any], node: dict[str, Any], step: str) -> dict[str, Any] | None:
    for arm in _arms(root, node):
        props = arm.get("properties")
        if isinstance(props, dict) and step in props:
            return _resolve(root, props[step])
        if step.isdigit() and isinstance(arm.get("items"), dict):
            return _resolve(root, arm["items"])
        extra = arm.get("additionalProperties")
        if isinstance(extra, dict) and not isinstance(props, dict):
            return _resolve(root, extra)
    return None


def _type_name(root: dict[str, Any], node: dict[str, Any]) -> str:
    kinds: list[str] = []
    for arm in _arms(root, node):
        kind = arm.get("type")
        if kind == "array" and isinstance(arm.get("items"), dict):
            kind = f"array of {_plural(_type_name(root, _resolve(root, arm['items'])))}"
        elif kind == "object" and isinstance(arm.get("additionalProperties"), dict):
            inner = _type_name(root, _resolve(root, arm["additionalProperties"]))
            kind = f"object of {_plural(inner)}"
        elif kind is None and "const" in arm:
            kind = type(arm["const"]).__name__
        if isinstance(kind, str) and kind not in kinds:
            kinds.append(kind)
    return " or ".join(kinds) or "any value"


def _plural(kind: str) -> str:
    return kind if " " in kind or kind.endswith("s") else kind + "s"


def _describe(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"expected": _type_name(root, node)}
    allowed: list[Any] = []
    for arm in _arms(root, node):
        allowed += arm.get("enum") or ([arm["const"]] if "const" in arm else [])
        out.update({k: arm[k] for k in _BOUNDS if k in arm})
    if allowed:
        out["allowed"] = allowed
    return out


def _sentence(entry: dict[str, Any]) -> str:
    text = f"{entry['field']} takes {_article(entry['expected'])}"
    if entry.get("allowed"):
        text += ", one of " + ", ".join(str(v) for v in entry["allowed"])
    bounds = [f"{k} {entry[k]}" for k in _BOUNDS if k in entry]
    if bounds:
        text += f" ({', '.join(bounds)})"
    return text


def _article(kind: str) -> str:
    if kind.startswith("any"):
        return kind
    return ("an " if kind[0] in "aeiou" else "a ") + kind
