"""Behaviour configuration, resolved once: defaults, then the user's ``xclaw.yaml``, then the
project's, then flags (and ``XCLAW_*`` variables), merged key by key (lists are replaced).

A project file can be written by whoever can write the project, the agent included, so fields
that widen what xclaw does unasked are marked in the schema: ``user_only()`` (no project value
at all) or ``project_may_set(...)`` (only these values); ``load_config`` refuses the rest with
``CONFIG_UNSAFE``. Secrets never live here; they come from the environment.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from xclaw.core.errors import ConfigError
from xclaw.core.limits import Limits
from xclaw.dirs import config_dir

ApprovalMode = Literal["ask", "deny", "allow"]


def user_only() -> dict[str, Any]:
    """Schema mark (``json_schema_extra``): only the user config or a flag may set the field."""
    return {"user_only": True}


def project_may_set(*values: str) -> dict[str, Any]:
    """Schema mark: a project file may set the field to these values only."""
    return {"project_values": list(values)}


class LimitsConfig(BaseModel):
    """Where a run stops as interrupted. ``max_turns`` and ``wall_time_s`` count one run: a
    ``run``, a ``resume``, or one gateway message of a chat, never the session's earlier turns."""

    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(200, ge=1)
    turn_timeout_s: float = Field(600.0, gt=0)
    tool_timeout_s: float = Field(900.0, gt=0)
    max_protocol_errors: int = Field(3, ge=0)
    max_identical_calls: int = Field(5, ge=1)
    max_output_bytes: int = Field(50_000_000, ge=1)
    wall_time_s: float = Field(4 * 3600.0, gt=0)
    stream_retries: int = Field(1, ge=0)  # a reply stream that drops after text began

    def to_limits(self) -> Limits:
        return Limits(**self.model_dump())


ProtocolName = Literal["native", "xml", "auto"]
ToolChoice = Literal["auto", "required", "none"]


class SamplingSettings(BaseModel):
    """Sampling settings sent with every request of a model, when set (unset: the server's
    default). Presets carry them too; a config value wins field by field."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    tool_choice: ToolChoice | None = None
    max_tokens: int | None = Field(None, ge=1)  # per reply; bounds a small model that loops

    def request_settings(self) -> dict[str, Any]:
        """The set fields, as ``ModelRequest.settings`` carries them."""
        fields = SamplingSettings.model_fields
        return {k: getattr(self, k) for k in fields if getattr(self, k) is not None}


class ModelSettings(SamplingSettings):
    """``models:`` in xclaw.yaml, keyed by a pattern over ``provider:model`` (fnmatch, the
    longest match wins field by field), e.g. ``"openai-compatible:*": {protocol: xml}``.

    ``protocol``: how tool calls travel — ``native`` (the API's tool channel, with text-call
    repair), ``xml`` (the XML text protocol over plain chat messages), ``auto`` (probe once,
    remember the answer). A project file may set these: they change how a model is spoken
    to, never what xclaw may do."""

    protocol: ProtocolName | None = None


SandboxMode = Literal["auto", "bwrap", "host", "full"]


class SandboxConfig(BaseModel):
    """Where commands run (see xclaw.sandbox). Only your user config or a flag may weaken it."""

    model_config = ConfigDict(extra="forbid")
    # A project may ask for more confinement, never for host mode (nor auto, which falls
    # back to it).
    mode: SandboxMode | None = Field(None, json_schema_extra=project_may_set("bwrap", "full"))
    # Extra folders shown read-only, extra variable names passed: both widen what runs see.
    read_only_paths: list[str] = Field(default_factory=list, json_schema_extra=user_only())
    env_passthrough: list[str] = Field(default_factory=list, json_schema_extra=user_only())
    # Run commands as another user (seed 003: AGENT_RUN_UID / AGENT_RUN_GID also work).
    run_as_uid: int | None = Field(None, ge=1, json_schema_extra=user_only())
    run_as_gid: int | None = Field(None, ge=1, json_schema_extra=user_only())


class CheckConfig(BaseModel):
    """A trusted check of ``xclaw patch``: a program and its arguments, never a shell line."""

    model_config = ConfigDict(extra="forbid")
    command: list[str] = Field(min_length=1)
    required: bool = False


class PatchConfig(BaseModel):
    """Change-job settings only the user may give (a project file may not loosen them)."""

    model_config = ConfigDict(extra="forbid")
    editable_lockfiles: list[str] = Field(default_factory=list)  # e.g. [Cargo.lock]
    # Modes that write your working tree without a review (seed 001: only the user's own
    # configuration turns them on); review is always allowed.
    allow_modes: list[Literal["review", "auto", "trusted-auto"]] = Field(default_factory=list)


_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class ChronosJobConfig(BaseModel):
    """A scheduled unattended run (``xclaw chronos``); the schedule is checked by chronos."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=_NAME)
    schedule: str = Field(min_length=1)  # 5-field cron, 6 with seconds first, or @daily ...
    timezone: str = "UTC"
    task: str = Field(min_length=1)
    model: str | None = None
    channel: str | None = None  # the notify target the run's `notify` tool uses
    enabled: bool = True
    max_steps: int = Field(15, ge=1, le=1000)
    missed: Literal["skip", "run_once"] = "skip"
    directory: str | None = None  # project root of the run (default: the command's -C)


class ChronosHookConfig(BaseModel):
    """``POST /hooks/<name>``: who may call it and the task a delivery becomes."""

    model_config = ConfigDict(extra="forbid")
    auth: Literal["github", "bearer"] = "github"  # HMAC-SHA256 X-Hub-Signature-256, or token
    secret_env: str = Field(pattern=_ENV_NAME)  # the secret's variable (environment or .env)
    task: str = Field(min_length=1)  # template: {{payload.path}} fields, inserted as data
    model: str | None = None
    channel: str | None = None
    max_steps: int = Field(15, ge=1, le=1000)
    max_body_bytes: int = Field(256 * 1024, ge=1, le=16 * 1024 * 1024)
    delivery_header: str | None = "X-GitHub-Delivery"  # required and remembered when set
    replay_window_s: float = Field(24 * 3600.0, gt=0)
    timestamp_header: str | None = None  # unix seconds; required when set
    timestamp_tolerance_s: float = Field(300.0, gt=0)
    directory: str | None = None


class ChronosTargetConfig(BaseModel):
    """Where ``notify`` sends: URLs and signing secrets come from the environment."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["stdout", "channel", "feishu", "webhook"]
    url_env: str | None = Field(None, pattern=_ENV_NAME)  # feishu / webhook: the URL
    secret_env: str | None = Field(None, pattern=_ENV_NAME)  # feishu signing / webhook bearer
    channel: str | None = None  # channel: a gateway chat channel (feishu, telegram, qq)
    peer: str | None = None  # channel: the chat (id) to post to


class ChronosSubscriptionConfig(BaseModel):
    """Events (``chronos.finished`` ...) from a source (job id, ``hook:NAME``) starts a
    notification (``notify: TARGET``) or an agent run (``task: TEMPLATE``)."""

    model_config = ConfigDict(extra="forbid")
    events: list[str] = Field(min_length=1)  # not "on": YAML reads a bare on as true
    source: str | None = None
    notify: str | None = None
    message: str = "{{event.type}} {{event.source}}: {{event.status}}\n{{event.reply}}"
    task: str | None = None
    model: str | None = None
    max_steps: int = Field(15, ge=1, le=1000)


class ChronosConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    jobs: list[ChronosJobConfig] = Field(default_factory=list)
    hooks: dict[str, ChronosHookConfig] = Field(default_factory=dict)
    targets: dict[str, ChronosTargetConfig] = Field(default_factory=dict)
    subscriptions: list[ChronosSubscriptionConfig] = Field(default_factory=list)
    stop_timeout_s: float = Field(30.0, ge=0)  # SIGTERM: wait this long, then checkpoint
    notify_attempts: int = Field(5, ge=1, le=20)
    notify_backoff_s: float = Field(1.0, ge=0)


_ALLOW_HOST = re.compile(r"^(?:https?://)?(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?/?$")


class BrowsingConfig(BaseModel):
    """What the browser tools may open without asking; only the user config may say so."""

    model_config = ConfigDict(extra="forbid")
    # ``host:port`` (or ``host``) on loopback or a private network, e.g. ``localhost:3000``.
    allow_hosts: list[str] = Field(default_factory=list)

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        bad = [h for h in hosts if not _ALLOW_HOST.match(h.strip())]
        if bad:
            raise ValueError(f"not a host or host:port: {', '.join(map(repr, bad))}")
        return [h.strip() for h in hosts]


class ObservabilityConfig(BaseModel):
    """Traces (OpenTelemetry) of every run; see xclaw.obs. Only the user config may set it:
    a project file must not send a run's traces to an endpoint of its choosing."""

    model_config = ConfigDict(extra="forbid")
    # Collector base URL (as OTEL_EXPORTER_OTLP_ENDPOINT; /v1/traces is appended).
    otlp_endpoint: str | None = Field(None, pattern=r"^https?://[^\s]+$")
    service_name: str = Field("xclaw", min_length=1, max_length=100)
    console: bool = False  # spans, readable, on stderr
    json_file: str | None = None  # spans as JSON lines appended to this file


class StoreConfig(BaseModel):
    """Where sessions are stored; see xclaw.store.open. Only the user config may set it: a
    project file must not send your sessions to a database of its choosing."""

    model_config = ConfigDict(extra="forbid")
    # postgresql://user:password@host:5432/db; unset: SQLite in the data dir.
    # XCLAW_DATABASE_URL overrides it.
    url: str | None = Field(None, pattern=r"^postgres(?:ql)?(?:\+psycopg)?://[^\s]+$")


class GatewayConfig(BaseModel):
    """Several gateway instances (xclaw.gateway.fanout). Only the user config may set it: a
    project file must not send your sessions' traffic to a server of its choosing."""

    model_config = ConfigDict(extra="forbid")
    # redis://[:password@]host:6379/0 (or rediss://); unset: one process.
    # XCLAW_REDIS_URL overrides it.
    redis_url: str | None = Field(None, pattern=r"^rediss?://[^\s]+$")


# memory: the section of xclaw.memory (weights, embedder, recall, extraction); the models live
# here, with the other sections, so loading the config never imports the memory package.
class EmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: Literal["local", "openai"] = "local"
    model: str = "text-embedding-3-small"  # openai only
    base_url: str = "https://api.openai.com/v1"  # any OpenAI-compatible endpoint
    api_key_env: str | None = "OPENAI_API_KEY"
    dim: int = Field(1536, ge=1)
    cache: bool = True


class MilvusConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str | None = None  # a server URI; unset: a milvus-lite file in the data dir
    token_env: str | None = None
    collection: str = Field("xclaw_memory", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    top_k: int = Field(5, ge=1, le=50)
    window_fraction: float = Field(0.05, gt=0, le=0.5)  # share of the model's window
    max_tokens: int = Field(1_500, ge=50)  # and never more than this
    # Floor on the vector similarity (not the blended score): measured on the labelled set,
    # 0.15 keeps recall@5 at its best; the user's preferences are considered whatever it is.
    min_similarity: float = Field(0.15, ge=-1, le=1)
    preferences: int = Field(5, ge=0, le=50)  # user-scope preferences always considered
    kb_passages: int = Field(3, ge=0, le=20)  # knowledge-base passages beside the facts
    kb_chars: int = Field(1_800, ge=0)  # and at most this many characters of them
    min_score: float | None = Field(None, ge=0, le=1)  # replaced: refused with a pointer

    @field_validator("min_score")
    @classmethod
    def _replaced(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError(
                "min_score (a floor on the blended score) is replaced by min_similarity, a "
                "floor on the vector similarity (default 0.15): rename it"
            )
        return value


class ExtractConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    timeout_s: float = Field(120.0, gt=0)
    max_facts: int = Field(10, ge=1, le=50)
    duplicate_similarity: float = Field(0.92, gt=0, le=1)


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["sqlite", "milvus"] = "sqlite"
    path: str | None = None  # sqlite file; unset: <data dir>/memory/memory.db
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    milvus: MilvusConfig = Field(default_factory=MilvusConfig)
    vector_weight: float = Field(0.7, ge=0, le=1)
    keyword_weight: float = Field(0.3, ge=0, le=1)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)


class XclawConfig(BaseModel):
    """The whole file. User-only sections: a check is a command xclaw runs unasked, patch
    settings widen what a job may edit, chronos starts unattended runs, browsing widens what
    the browser opens unasked, observability sends traces away, mcp servers are programs
    xclaw starts (a project's own go in .mcp.json, used once the user trusts them), memory
    chooses where memories and an embeddings key go, store where sessions go, gateway where
    their traffic goes."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    models: dict[str, ModelSettings] = Field(default_factory=dict)  # per-model settings
    # A project may make approvals stricter, never turn them off.
    approval: ApprovalMode | None = Field(None, json_schema_extra=project_may_set("ask", "deny"))
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    checks: dict[str, CheckConfig] = Field(default_factory=dict, json_schema_extra=user_only())
    patch: PatchConfig = Field(default_factory=PatchConfig, json_schema_extra=user_only())
    browsing: BrowsingConfig = Field(default_factory=BrowsingConfig, json_schema_extra=user_only())
    chronos: ChronosConfig = Field(default_factory=ChronosConfig, json_schema_extra=user_only())
    agents: dict[str, Any] = Field(default_factory=dict)  # validated by xclaw.agents.config
    memory: MemoryConfig = Field(default_factory=MemoryConfig, json_schema_extra=user_only())
    # validated by xclaw.mcp.settings
    mcp: dict[str, Any] = Field(default_factory=dict, json_schema_extra=user_only())
    observability: ObservabilityConfig = Field(
        default_factory=ObservabilityConfig, json_schema_extra=user_only()
    )
    store: StoreConfig = Field(default_factory=StoreConfig, json_schema_extra=user_only())
    gateway: GatewayConfig = Field(default_factory=GatewayConfig, json_schema_extra=user_only())


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: mappings merge key by key, anything else (lists too) is
    replaced, so a project's ``sandbox: {mode: bwrap}`` keeps the user's other sandbox keys."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = deep_merge(below, value)
        else:
            merged[key] = value
    return merged


def _mark(model: type[BaseModel], key: object) -> tuple[dict[str, Any], type[BaseModel] | None]:
    """The schema marks of ``model.key`` and, when it is a section, its model."""
    info = model.model_fields.get(str(key))
    if info is None:
        return {}, None  # unknown: validation names it
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    kind = info.annotation
    section = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
    return extra, section


def _first_leaf(path: str, value: object) -> str:
    """The path down to the first value set under a mapping: ``memory.embedder.base_url``."""
    while isinstance(value, Mapping) and value:
        key, value = next(iter(value.items()))
        path = f"{path}.{key}"
    return path


def unsafe_project_value(
    data: Mapping[str, Any], model: type[BaseModel] = XclawConfig, prefix: str = ""
) -> tuple[str, str] | None:
    """What a project file sets that only the user may set, and why; None when nothing."""
    for key, value in data.items():
        path = f"{prefix}{key}"
        mark, section = _mark(model, key)
        if mark.get("user_only"):
            given = _first_leaf(path, value)
            return given, "only your user config may set " + ("it" if given == path else path)
        allowed = mark.get("project_values")
        if allowed is not None and value not in allowed:
            return f"{path}: {value}", f"a project may set it to {' or '.join(allowed)} only"
        if section is not None and isinstance(value, Mapping):
            found = unsafe_project_value(value, section, f"{path}.")
            if found is not None:
                return found
    return None


def _refuse_unsafe(path: Path, data: Mapping[str, Any], text: str | None = None) -> None:
    found = unsafe_project_value(data)
    if found is not None:
        given, why = found
        steps = given.partition(":")[0].split(".")
        where = _where(path, text, steps, at_value=False)
        raise ConfigError(
            f"{where}: sets {given}, which a project file may not do ({why}).",
            code="CONFIG_UNSAFE",
            hint="Move it to your user config (~/.config/xclaw/xclaw.yaml); for one run, "
            "--sandbox and --approval choose too.",
        )


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _parse(path: Path, raw: bytes | None) -> dict[str, Any]:
    return {} if raw is None else read_yaml_mapping(path, raw)


def read_yaml_mapping(path: Path, raw: bytes) -> dict[str, Any]:
    """A YAML settings file's mapping (empty for an empty file). A file that is not UTF-8, not
    YAML or not a mapping is a coded ``ConfigError`` naming ``path:line:column`` in a plain
    sentence, never the parser's own dump."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            f"{path}:{line}:{column}: the file is not UTF-8 text "
            f"(byte 0x{raw[err.start]:02x} there).",
            code="CONFIG_YAML_INVALID",
            hint=f"Save {path.name} as UTF-8, then run the command again.",
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = (err.problem or err.context or "it is malformed").strip()
        raise ConfigError(
            f"{where}: this is not valid YAML ({problem}).",
            code="CONFIG_YAML_INVALID",
            hint="Check the indentation and the `key: value` spacing there (no tabs; quote a "
            "value that holds ': ' or starts with a special character), then run the command "
            "again.",
        ) from None
    except yaml.YAMLError as err:  # not positioned (rare): still one sentence
        raise ConfigError(
            f"{path}: this is not valid YAML ({type(err).__name__}).",
            code="CONFIG_YAML_INVALID",
            hint="Fix the file, then run the command again.",
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = "list" if isinstance(data, list) else type(data).__name__
        raise ConfigError(
            f"{path}:1:1: the file holds a {kind}, not settings (`key: value` lines).",
            code="CONFIG_NOT_MAPPING",
            hint="Write the settings as `key: value` lines at the top level, then run the "
            "command again.",
        )
    return data


# -- invalid settings: the file, the line, the nearest valid key ----------------------------


@dataclass(frozen=True)
class ConfigSource:
    """Where settings came from: a file (with its text, for line numbers) or a name such as
    ``XCLAW_MODEL`` or ``the command line``."""

    name: str
    data: Mapping[str, Any]
    path: Path | None = None
    text: str | None = None


def _position(text: str, steps: Sequence[object], at_value: bool) -> tuple[int, int] | None:
    """1-based line and column of the key at ``steps`` (its value when ``at_value``), or of
    the deepest part of the path that exists."""
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    mark = None
    for step in steps:
        if isinstance(node, yaml.MappingNode):
            found = next((kv for kv in node.value if kv[0].value == str(step)), None)
            if found is None:
                break
            mark, node = found[0].start_mark, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if not 0 <= step < len(node.value):
                break
            node = node.value[step]
            mark = node.start_mark
        else:
            break
    else:
        if at_value and node is not None:
            mark = node.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else None


def _where(path: Path, text: str | None, steps: Sequence[object], *, at_value: bool) -> str:
    found = _position(text, steps, at_value) if text is not None else None
    return f"{path}:{found[0]}:{found[1]}" if found else str(path)


def _has(data: object, steps: Sequence[object]) -> bool:
    for step in steps:
        if isinstance(data, Mapping) and step in data:
            data = data[step]
        elif isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
            data = data[step]
        else:
            return False
    return True


def _inner(annotation: Any, step: object) -> Any:
    """The annotation one step down a location: a model's field, a dict's value, a list's
    item (``X | None`` and other unions are looked through)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(step))
        return None if field is None else field.annotation
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arm in get_args(annotation):
            found = _inner(arm, step)
            if found is not None:
                return found
        return None
    if origin in (dict, Mapping):
        return get_args(annotation)[1] if not isinstance(step, int) else None
    if origin in (list, tuple, Sequence):
        return get_args(annotation)[0] if isinstance(step, int) else None
    return None


def _model_at(model: Any, steps: Sequence[object]) -> type[BaseModel] | None:
    annotation: Any = model
    for step in steps:
        annotation = _inner(annotation, step)
        if annotation is None:
            return None
    for arm in (annotation, *get_args(annotation)):
        if isinstance(arm, type) and issubclass(arm, BaseModel):
            return arm
    return None


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _dotted(steps: Sequence[object]) -> str:
    """``sandbox.mode``, ``chronos.jobs[0].id``, ``models["openai:*"].protocol``."""
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif not _PLAIN_KEY.fullmatch(str(step)):
            out += f"[{json.dumps(str(step))}]"
        else:
            out += f".{step}" if out else str(step)
    return out


def explain_invalid(
    err: ValidationError, model: Any, sources: Sequence[ConfigSource]
) -> ConfigError:
    """The first problem of ``err`` as a coded error: the file that set it (``sources`` in
    order of precedence, highest first) with line and column, the dotted key, and for an
    unknown key the nearest valid one (difflib), else the keys that section takes. ``model``
    is what was validated: a model class, or an annotation such as ``dict[str, Preset]``."""
    # An unknown key first: a misspelt section name makes the rest of its problems moot.
    problems = sorted(err.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    first = problems[0]
    loc = [step for step in first["loc"] if isinstance(step, int | str)]
    missing = first["type"] == "missing"
    unknown = first["type"] == "extra_forbidden"
    # A value model validation reports under a union arm's tag: keep the steps the data has.
    while loc and not any(_has(src.data, loc[: -1 if missing else None]) for src in sources):
        loc.pop()
    lookup = loc[:-1] if missing else loc
    source = next((src for src in sources if _has(src.data, lookup)), None)
    if source is None:
        where = "the configuration"
    elif source.path is not None:
        where = _where(source.path, source.text, lookup, at_value=not unknown)
    else:
        where = source.name
    extra = len(problems) - 1
    more = f" ({extra} more problem{'s' if extra > 1 else ''} after this one)" if extra else ""
    key = _dotted(loc) or "(top level)"
    if unknown:
        section = _model_at(model, loc[:-1])
        valid = list(section.model_fields) if section is not None else []
        near = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
        under = f" under {_dotted(loc[:-1])}" if len(loc) > 1 else ""
        if near:
            better = _dotted([*loc[:-1], near[0]])
            sentence = f" The nearest valid key is {better}."
            hint = f"Rename {key} to {better}, then run the command again."
        else:
            sentence = ""
            hint = f"Valid keys{under}: {', '.join(valid)}. Remove or rename {key}."
        return ConfigError(
            f"{where}: {key} is not a valid key{more}.{sentence}",
            code="CONFIG_KEY_UNKNOWN",
            hint=hint,
        )
    if missing:
        owner = _dotted(loc[:-1]) or "the file"
        return ConfigError(
            f"{where}: {owner} needs {loc[-1]}, and it is missing{more}.",
            code="CONFIG_VALUE_INVALID",
            hint=f"Add `{loc[-1]}: ...` there, then run the command again.",
        )
    detail = str(first["msg"]).removeprefix("Value error, ")
    return ConfigError(
        f"{where}: {key}: {detail} (it is {first.get('input')!r}){more}.",
        code="CONFIG_VALUE_INVALID",
        hint="Change that value, then run the command again.",
    )


# Resolved configurations by everything they were made from (paths, file contents, the
# environment, flags): a file rewritten between calls is read again, never served stale.
_resolved: dict[tuple[object, ...], XclawConfig] = {}
_RESOLVED_MAX = 32


def load_config(
    project: Path | None = None, *, flags: Mapping[str, Any] | None = None
) -> XclawConfig:
    """Defaults, then the user file, then the project's ``xclaw.yaml`` (refused with
    ``CONFIG_UNSAFE`` when it sets a user-only field), then ``XCLAW_MODEL``, then ``flags``
    (the user's own command line, never checked), merged key by key."""
    user_file = config_dir() / "xclaw.yaml"
    project_file = project / "xclaw.yaml" if project is not None else None
    user_raw = _read(user_file)
    project_raw = _read(project_file) if project_file is not None else None
    env_model = os.environ.get("XCLAW_MODEL") or None
    flags_key = json.dumps(flags, sort_keys=True, default=str) if flags else None
    key = (str(user_file), user_raw, str(project_file), project_raw, env_model, flags_key)
    cached = _resolved.get(key)
    if cached is None:
        cached = _resolve(user_file, user_raw, project_file, project_raw, env_model, flags)
        if len(_resolved) >= _RESOLVED_MAX:
            _resolved.pop(next(iter(_resolved)))
        _resolved[key] = cached
    return cached.model_copy(deep=True)  # callers may change their copy


def _resolve(
    user_file: Path,
    user_raw: bytes | None,
    project_file: Path | None,
    project_raw: bytes | None,
    env_model: str | None,
    flags: Mapping[str, Any] | None,
) -> XclawConfig:
    user = _parse(user_file, user_raw)
    sources = [ConfigSource("the command line", flags or {})]
    if env_model:
        sources.append(ConfigSource("XCLAW_MODEL", {"model": env_model}))
    merged = user
    if project_file is not None:
        local = _parse(project_file, project_raw)
        text = _text(project_raw)
        _refuse_unsafe(project_file, local, text)
        sources.append(ConfigSource(str(project_file), local, project_file, text))
        merged = deep_merge(merged, local)
    sources.append(ConfigSource(str(user_file), user, user_file, _text(user_raw)))
    if env_model:
        merged["model"] = env_model
    merged = deep_merge(merged, flags or {})
    try:
        return XclawConfig.model_validate(merged)
    except ValidationError as err:
        raise explain_invalid(err, XclawConfig, sources) from None


def _text(raw: bytes | None) -> str | None:
    return raw.decode("utf-8") if raw is not None else None  # _parse checked it decodes
