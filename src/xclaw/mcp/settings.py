"""Which MCP servers a run may use: the user's ``mcp.servers`` and the project's ``.mcp.json``.

Both use Claude Code's server shape: ``{command, args, env, cwd}`` for a program spoken to over
stdio, ``{type: http, url, headers}`` for streamable HTTP. ``${VAR}`` and ``${VAR:-default}``
expand from xclaw's environment in command, args, env, cwd, url and headers.

A project's servers start programs (or send headers) that anyone who can write the project
chose, the model included: each one is used only once the user trusted that exact definition
(``xclaw mcp trust NAME``, kept in xclaw's data dir). The user's own config needs no trust.

``mcp.serve`` (``ServeSettings``) is how ``xclaw mcp serve`` names the tools it serves.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from xclaw.core.errors import ConfigError
from xclaw.core.validation import validation_detail
from xclaw.redact import is_secret_field, is_secret_name, register_secret, register_secrets

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
PROJECT_FILE = ".mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# underscore: ``fs_read``, what every client accepts; dotted: ``fs.read``, xclaw's own
ToolNameStyle = Literal["underscore", "dotted"]


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    timeout_s: float = Field(60.0, gt=0, le=3600, alias="timeout")  # per tool call
    startup_timeout_s: float = Field(30.0, gt=0, le=600, alias="startupTimeout")
    output_cap: int = Field(32_000, ge=1_000, le=1_000_000, alias="outputCap")


class StdioServer(_ServerBase):
    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServer(_ServerBase):
    type: Literal["http", "streamable-http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)


ServerConfig = Annotated[StdioServer | HttpServer, Field(discriminator="type")]
_SERVER = TypeAdapter[StdioServer | HttpServer](ServerConfig)


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One configured server and where it came from."""

    name: str
    config: StdioServer | HttpServer | None  # None: the definition is invalid, see ``error``
    source: Literal["user", "project"]
    raw: dict[str, Any]  # as written, before ``${VAR}`` expansion: what trust covers
    error: str = ""

    @property
    def fingerprint(self) -> str:
        return definition_fingerprint(self.raw)

    @property
    def transport(self) -> str:
        kind = self.config.type if self.config else self.raw.get("type")
        if kind is None:
            kind = "http" if "url" in self.raw and "command" not in self.raw else "stdio"
        return "stdio" if kind == "stdio" else str(kind).replace("streamable-http", "http")

    @classmethod
    def parse(cls, name: str, raw: Any, source: Literal["user", "project"]) -> ServerEntry:
        """One definition; an invalid one is kept with its error, so one bad server never
        hides the others."""
        where = "xclaw.yaml" if source == "user" else PROJECT_FILE
        kept = dict(raw) if isinstance(raw, dict) else {"invalid": repr(raw)}
        try:
            return cls(name, parse_server(name, raw, where), source, kept)
        except ConfigError as err:
            return cls(name, None, source, kept, error=str(err))


def definition_fingerprint(raw: Mapping[str, Any]) -> str:
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_server(name: str, raw: object, where: str) -> StdioServer | HttpServer:
    """One server definition; a missing ``type`` means stdio with a command, http with a url."""
    if not SERVER_NAME.match(name):
        raise ConfigError(
            f"{where}: MCP server name {name!r} may use only letters, digits, '_' and '-'.",
            code="MCP_CONFIG_INVALID",
            hint="Rename the server (at most 40 characters).",
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{where}: MCP server {name!r} must be a mapping.", code="MCP_CONFIG_INVALID"
        )
    data = dict(raw)
    if "type" not in data:
        data["type"] = "http" if "url" in data and "command" not in data else "stdio"
    if data["type"] == "sse":
        raise ConfigError(
            f"{where}: MCP server {name!r} uses the SSE transport, which xclaw does not speak.",
            code="MCP_CONFIG_INVALID",
            hint="Use the server's streamable HTTP endpoint (type: http) or stdio.",
        )
    try:
        server = _SERVER.validate_python(data)
    except ValidationError as err:
        detail = validation_detail(err, "(server)")
        raise ConfigError(
            f"{where}: MCP server {name!r} is invalid: {detail}",
            code="MCP_CONFIG_INVALID",
            hint="Fix the server definition.",
        ) from None
    _register_literal_secrets(server)
    return server


def _register_literal_secrets(server: StdioServer | HttpServer) -> None:
    """Credentials written into the definition itself are masked like the environment's."""
    if isinstance(server, StdioServer):
        register_secrets({k: v for k, v in server.env.items() if "${" not in v})
        return
    for header, value in server.headers.items():
        if is_secret_field(header) and "${" not in value:
            register_secret(value.split()[-1] if value.split() else value)


class ServeSettings(BaseModel):
    """``mcp.serve``: how ``xclaw mcp serve`` shows xclaw's tools to a client."""

    model_config = ConfigDict(extra="forbid")
    tool_names: ToolNameStyle = "underscore"


def _check_keys(section: Mapping[str, Any]) -> None:
    unknown = set(section) - {"servers", "serve"}
    if unknown:
        raise ConfigError(
            f"xclaw.yaml: the mcp section has unknown keys: {sorted(unknown)}",
            code="MCP_CONFIG_INVALID",
            hint="Only mcp.servers and mcp.serve are read.",
        )


def serve_settings(section: Mapping[str, Any]) -> ServeSettings:
    """The ``mcp.serve`` part of the user's xclaw.yaml."""
    _check_keys(section)
    try:
        return ServeSettings.model_validate(section.get("serve") or {})
    except ValidationError as err:
        detail = validation_detail(err, "(serve)")
        raise ConfigError(
            f"xclaw.yaml: mcp.serve is invalid: {detail}",
            code="MCP_CONFIG_INVALID",
            hint="mcp.serve takes tool_names: underscore (the default) or dotted.",
        ) from None


def user_servers(section: Mapping[str, Any]) -> dict[str, ServerEntry]:
    """The ``mcp`` section of the user's xclaw.yaml: ``{servers: {name: definition}}``."""
    _check_keys(section)
    servers = section.get("servers") or {}
    if not isinstance(servers, dict):
        raise ConfigError("xclaw.yaml: mcp.servers must be a mapping.", code="MCP_CONFIG_INVALID")
    return {name: ServerEntry.parse(str(name), raw, "user") for name, raw in servers.items()}


def read_project_file(root: Path) -> dict[str, dict[str, Any]]:
    """The raw ``mcpServers`` of ``ROOT/.mcp.json`` (empty when there is none)."""
    path = root / PROJECT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"{path} is not valid JSON: {err}", code="MCP_CONFIG_INVALID", hint="Fix the file."
        ) from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not all(isinstance(v, dict) for v in servers.values()):
        raise ConfigError(
            f'{path} must hold {{"mcpServers": {{name: {{...}}}}}}.',
            code="MCP_CONFIG_INVALID",
            hint="Fix the file.",
        )
    return servers


def project_servers(root: Path) -> dict[str, ServerEntry]:
    return {
        name: ServerEntry.parse(str(name), raw, "project")
        for name, raw in read_project_file(root).items()
    }


def expand(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from the environment; an unset one without a default
    is an error rather than an empty string sent to the server."""
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if value is not None and value != "":
            if is_secret_name(m.group(1)):
                register_secret(value)  # a header or argument now holds it
            return value
        if m.group(2) is not None:
            return m.group(2)
        raise ConfigError(
            f"the variable {m.group(1)} is not set",
            code="MCP_CONFIG_INVALID",
            hint=f"Set {m.group(1)} or give a default: ${{{m.group(1)}:-value}}.",
        )

    return _VAR.sub(one, text)
