"""Request parameters: what the bridge applies, passes to the model, accepts, or refuses.

Nothing a client sets is silently dropped:

    applied by the bridge   ``stop`` (the answer's text is cut at the first stop sequence,
                            for every model; ``xclaw.bridge.stops``)
    passed to the model     the generation settings (``SETTINGS``), only to a model that
                            honours them; any other model answers 400 naming the parameter
    accepted, no effect     labels that change nothing in the answer (``NO_EFFECT``)
    neutral values          a parameter set to the value that asks for nothing
                            (``frequency_penalty: 0``, ``logprobs: false``, ``store: false``)
    anything else           400 ``BRIDGE_PARAMETER_UNSUPPORTED`` naming it

Which settings a model honours: what it declares in ``honoured_settings`` (a frozenset), for
a chain what all of its models honour (any of them may answer), and for the wire adapters
what their ``request_body`` puts on the wire (``HONOURED_BY_API``, checked against the
adapters by ``tests/bridge/test_parameters.py``). Any other model honours none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xclaw.bridge.chats import ModelChain
from xclaw.bridge.errors import BridgeError
from xclaw.core.model import Model
from xclaw.models._wire import WireModel
from xclaw.models.openai_chat import PASSED_SETTINGS

__all__ = [
    "HONOURED_BY_API",
    "NO_EFFECT",
    "SETTINGS",
    "honoured_settings",
    "model_settings",
    "refuse_unsupported",
    "unsupported",
]

SETTINGS = PASSED_SETTINGS  # the names of ``ModelRequest.settings`` a client may set
_COMMON = frozenset({"temperature", "top_p", "max_tokens"})
HONOURED_BY_API: dict[str, frozenset[str]] = {
    "openai_chat": frozenset(PASSED_SETTINGS),
    "openai_responses": _COMMON | {"parallel_tool_calls", "reasoning_effort"},
    "anthropic": _COMMON | {"reasoning_effort"},
}
# These adapters send an effort only to a model whose profile says it reasons.
_EFFORT_NEEDS_REASONING = frozenset({"openai_responses", "anthropic"})

NO_EFFECT = frozenset(
    {
        "user",  # labels for the provider's abuse monitoring and caching: the answer is
        "safety_identifier",  # the same without them
        "metadata",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
        "include_obfuscation",  # stream_options: random padding, never content
    }
)
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "frequency_penalty": (0,),
    "presence_penalty": (0,),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "logit_bias": ({},),
    "store": (False,),
    "background": (False,),
    "modalities": (["text"],),
    "service_tier": ("auto", "default"),
    "truncation": ("disabled",),
    "include": ([],),
    "parallel_tool_calls": (True,),  # a permission, never an obligation
}


def unsupported(param: str, message: str, hint: str) -> BridgeError:
    return BridgeError(400, "BRIDGE_PARAMETER_UNSUPPORTED", message, hint=hint, param=param)


def refuse_unsupported(extra: Mapping[str, Any] | None, prefix: str = "") -> None:
    """400 for the first parameter in ``extra`` (what the request schema does not know)
    that would change the answer if the bridge honoured it."""
    for name, value in (extra or {}).items():
        if value is None or name in NO_EFFECT or _neutral(name, value):
            continue
        raise unsupported(
            prefix + name,
            f"The bridge does not support the parameter {prefix + name!r}.",
            "Leave it out; the bridge refuses what it cannot honour instead of ignoring it.",
        )


def _neutral(name: str, value: Any) -> bool:
    return name in _NEUTRAL and value in _NEUTRAL[name]


def honoured_settings(model: Model) -> frozenset[str]:
    """The settings ``model`` keeps (see the module docstring)."""
    declared = getattr(model, "honoured_settings", None)
    if isinstance(declared, frozenset):
        return frozenset(str(name) for name in declared)
    if isinstance(model, ModelChain):
        each = [honoured_settings(inner) for inner in model.models]
        return frozenset.intersection(*each) if each else frozenset()
    if isinstance(model, WireModel) and model.preset is not None:
        api = model.preset.api
        names = HONOURED_BY_API.get(api, frozenset())
        if api in _EFFORT_NEEDS_REASONING and not model.profile.reasoning:
            names -= {"reasoning_effort"}
        return names
    return frozenset()


def model_settings(
    asked: Mapping[str, Any],
    honoured: frozenset[str],
    model_id: str,
    wire_names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The settings to pass on; 400 naming the first one the model cannot honour.
    ``wire_names`` maps a setting to the parameter the client sent (Responses names)."""
    out: dict[str, Any] = {}
    for name, value in asked.items():
        if value is None:
            continue
        target = name
        if name == "max_completion_tokens" and name not in honoured and "max_tokens" not in asked:
            target = "max_tokens"  # the same limit under its older name
        if target in honoured:
            out[target] = value
        elif not _neutral(name, value):
            param = (wire_names or {}).get(name, name)
            raise unsupported(
                param,
                f"Model {model_id!r} cannot honour {param!r}: it would be ignored.",
                "Leave it out for this model, or serve a model that takes it (an API model).",
            )
    return out
