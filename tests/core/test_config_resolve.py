"""One resolved configuration: defaults, user, project, flags merged key by key, and every
entry point's sandbox built from it (``xclaw.sandbox.resolve.session_sandbox``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xclaw.config import XclawConfig, deep_merge, load_config
from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir, data_dir
from xclaw.policy.approval import ModeApprover
from xclaw.sandbox import BwrapOptions, SandboxChoice
from xclaw.sandbox.host import HostSandbox

USER = """\
model: scripted:user
approval: deny
limits:
  max_turns: 7
  tool_timeout_s: 11
sandbox:
  read_only_paths: [/opt/user-docs]
  env_passthrough: [USER_TOOL_HOME]
  run_as_uid: 4242
  run_as_gid: 4343
"""


def write_user(text: str) -> Path:
    path = config_dir() / "xclaw.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@dataclass
class Built:
    """What ``make_sandbox`` was asked for, by whichever entry point."""

    calls: list[tuple[str, BwrapOptions]] = field(default_factory=list)

    @property
    def options(self) -> BwrapOptions:
        assert self.calls, "no sandbox was built"
        return self.calls[-1][1]


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Built:
    record = Built()

    def fake_local(
        requested: str, *, options: BwrapOptions, hidden: tuple[Path, ...]
    ) -> tuple[HostSandbox, str]:
        options.hidden = hidden or options.hidden
        record.calls.append((requested, options))
        return HostSandbox(options.env_passthrough, "test"), ""

    def fake(requested: str, *, options: BwrapOptions, hidden: tuple[Path, ...]) -> SandboxChoice:
        return SandboxChoice(fake_local(requested, options=options, hidden=hidden)[0])

    monkeypatch.setattr("xclaw.sandbox.resolve.make_sandbox", fake)
    monkeypatch.setattr("xclaw.sandbox.resolve.make_local_sandbox", fake_local)
    for name in ("XCLAW_SANDBOX", "AGENT_RUN_UID", "AGENT_RUN_GID"):
        monkeypatch.delenv(name, raising=False)
    return record


# -- the merge ----------------------------------------------------------------------------


def test_a_project_choosing_bwrap_keeps_the_users_run_as_and_paths(root: Path) -> None:
    write_user(USER)
    (root / "xclaw.yaml").write_text("sandbox:\n  mode: bwrap\n")
    cfg = load_config(root)
    assert cfg.sandbox.mode == "bwrap"
    assert (cfg.sandbox.run_as_uid, cfg.sandbox.run_as_gid) == (4242, 4343)
    assert cfg.sandbox.read_only_paths == ["/opt/user-docs"]
    assert cfg.sandbox.env_passthrough == ["USER_TOOL_HOME"]


def test_a_project_timeout_keeps_the_users_max_turns(root: Path) -> None:
    write_user(USER)
    (root / "xclaw.yaml").write_text("limits:\n  turn_timeout_s: 30\n")
    limits = load_config(root).limits
    assert (limits.turn_timeout_s, limits.max_turns, limits.tool_timeout_s) == (30, 7, 11)


def test_deep_merge_merges_mappings_and_replaces_lists() -> None:
    base = {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": 1}
    over = {"a": {"c": [3], "d": {"g": 2}}, "f": {"h": 1}}
    assert deep_merge(base, over) == {"a": {"b": 1, "c": [3], "d": {"e": 1, "g": 2}}, "f": {"h": 1}}
    assert base["a"] == {"b": 1, "c": [1, 2], "d": {"e": 1}}  # inputs untouched


def test_order_is_defaults_user_project_environment_flags(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_user(USER)
    assert load_config(root).model == "scripted:user"
    assert load_config(root).limits.wall_time_s == 4 * 3600.0  # a default nobody set
    (root / "xclaw.yaml").write_text("model: scripted:project\n")
    assert load_config(root).model == "scripted:project"
    monkeypatch.setenv("XCLAW_MODEL", "scripted:env")
    assert load_config(root).model == "scripted:env"
    flagged = load_config(root, flags={"model": "scripted:flag", "sandbox": {"mode": "host"}})
    assert (flagged.model, flagged.sandbox.mode) == ("scripted:flag", "host")  # flags are yours
    assert flagged.sandbox.run_as_uid == 4242


def test_no_project_means_the_user_file_alone(root: Path) -> None:
    (root / "xclaw.yaml").write_text("model: scripted:project\n")
    write_user("model: scripted:user\n")
    assert load_config().model == "scripted:user"
    assert load_config(None).approval is None


def test_a_rewritten_file_is_read_again(root: Path, tmp_path: Path, monkeypatch: Any) -> None:
    # Same size, same instant: only the content tells them apart.
    (root / "xclaw.yaml").write_text("model: scripted:aaa\n")
    assert load_config(root).model == "scripted:aaa"
    (root / "xclaw.yaml").write_text("model: scripted:bbb\n")
    assert load_config(root).model == "scripted:bbb"
    write_user("approval: ask\n")
    assert load_config(root).approval == "ask"
    other = tmp_path / "other-config"
    (other / "xclaw").mkdir(parents=True)
    (other / "xclaw" / "xclaw.yaml").write_text("approval: allow\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(other))  # another user dir: another result
    assert load_config(root).approval == "allow"
    (root / "xclaw.yaml").unlink()
    assert load_config(root).model is None


def test_each_caller_gets_its_own_copy(root: Path) -> None:
    write_user(USER)
    first = load_config(root)
    first.sandbox.read_only_paths.append("/changed")
    first.limits.max_turns = 1
    again = load_config(root)
    assert again.sandbox.read_only_paths == ["/opt/user-docs"] and again.limits.max_turns == 7


def test_bad_files_are_config_errors(root: Path) -> None:
    (root / "xclaw.yaml").write_bytes(b"model: \xff\xfe\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_YAML_INVALID"
    assert err.value.message.startswith(f"{root / 'xclaw.yaml'}:1:8: the file is not UTF-8")
    (root / "xclaw.yaml").write_text("- a list\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_NOT_MAPPING"


# -- the schema marks ---------------------------------------------------------------------

USER_ONLY = {
    "sandbox.read_only_paths",
    "sandbox.env_passthrough",
    "sandbox.run_as_uid",
    "sandbox.run_as_gid",
    "checks",
    "patch",
    "chronos",
    "browsing",
    "observability",
    "mcp",
    "memory",
    "store",
    "gateway",
}


def _marked(model: type[Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    marks: dict[str, dict[str, Any]] = {}
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra:
            marks[prefix + name] = extra
        kind = info.annotation
        if name == "sandbox":
            marks.update(_marked(kind, f"{name}."))
    return marks


def test_user_only_fields_are_marked_in_the_schema() -> None:
    marks = _marked(XclawConfig)
    assert {k for k, v in marks.items() if v.get("user_only")} == USER_ONLY
    assert marks["approval"] == {"project_values": ["ask", "deny"]}
    assert marks["sandbox.mode"] == {"project_values": ["bwrap", "full"]}
    schema = XclawConfig.model_json_schema()
    assert schema["properties"]["store"]["user_only"] is True  # visible to schema readers


def test_the_project_may_still_set_what_is_not_marked(root: Path) -> None:
    body = (
        "model: scripted:x\napproval: ask\nsandbox:\n  mode: full\n"
        "limits:\n  max_turns: 9\nagents: {}\n"
    )
    (root / "xclaw.yaml").write_text(body)
    cfg = load_config(root)
    assert (cfg.model, cfg.approval, cfg.sandbox.mode, cfg.limits.max_turns) == (
        "scripted:x",
        "ask",
        "full",
        9,
    )


# -- the session sandbox of every entry point ---------------------------------------------


def test_session_options_carry_the_users_settings_and_hide_xclaws_dirs(
    root: Path, built: Built
) -> None:
    from xclaw.sandbox.resolve import session_options

    write_user(USER)
    (root / "xclaw.yaml").write_text("sandbox:\n  mode: bwrap\n")
    options = session_options(load_config(root))
    assert options.read_only_paths == (Path("/opt/user-docs"),)
    assert options.env_passthrough == ("USER_TOOL_HOME",)
    assert options.run_as == (4242, 4343)
    assert options.hidden == (data_dir(), config_dir())


def test_the_mode_is_flag_then_environment_then_config(
    root: Path, built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xclaw.sandbox.resolve import local_sandbox, session_sandbox

    (root / "xclaw.yaml").write_text("sandbox:\n  mode: bwrap\n")
    cfg = load_config(root)
    session_sandbox(cfg)
    monkeypatch.setenv("XCLAW_SANDBOX", "full")
    session_sandbox(cfg)
    session_sandbox(cfg, "host")
    local_sandbox(cfg)  # a caller that starts programs itself stays local
    assert [requested for requested, _ in built.calls] == ["bwrap", "full", "host", "auto"]


def test_tools_call_honours_agent_run_uid(
    root: Path, built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xclaw.cli.tools_cmd import call_once

    monkeypatch.setenv("AGENT_RUN_UID", "4321")
    (root / "a.txt").write_text("hello\n")
    deny, cfg = ModeApprover("deny"), load_config(root)
    result = _run(call_once("fs.read", {"path": "a.txt"}, root, deny, config=cfg))
    assert result.ok, result
    assert built.options.run_as == (4321, 4321)
    monkeypatch.setenv("AGENT_RUN_GID", "4322")
    _run(call_once("fs.read", {"path": "a.txt"}, root, deny, "bwrap", config=load_config(root)))
    assert built.calls[-1][0] == "bwrap" and built.options.run_as == (4321, 4322)


def test_tools_call_refuses_an_unsafe_project_file(root: Path, built: Built) -> None:
    from xclaw.cli.app import app

    (root / "xclaw.yaml").write_text("sandbox:\n  run_as_uid: 1\n")
    out = CliRunner().invoke(app, ["tools", "call", "fs.list", "--args", "{}", "-C", str(root)])
    assert out.exit_code == 2 and "CONFIG_UNSAFE" in out.stderr
    assert "sandbox.run_as_uid" in _flat(out.stderr)
    assert not built.calls  # refused before any sandbox was made


def test_mcp_serve_gets_the_users_read_only_paths(
    root: Path, built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xclaw.cli.mcp_cmd import app

    write_user(USER)
    served: list[Any] = []

    async def fake_serve(path: Path, approval: str, sandbox: Any = None, **_: Any) -> None:
        served.append((path, approval, sandbox))

    monkeypatch.setattr("xclaw.mcp.serve.serve_stdio", fake_serve)
    out = CliRunner().invoke(app, ["serve", "-C", str(root)])
    assert out.exit_code == 0, out.output
    assert built.options.read_only_paths == (Path("/opt/user-docs"),)
    assert built.options.run_as == (4242, 4343)
    [(path, approval, sandbox)] = served
    assert (path, approval) == (root, "deny") and isinstance(sandbox, HostSandbox)


def test_the_mcp_tool_service_and_a_bare_workspace_use_the_users_config(
    root: Path, built: Built
) -> None:
    from xclaw.coding.toolset import coding_registry
    from xclaw.mcp.serve import ToolService
    from xclaw.tools.base import Workspace

    write_user(USER)
    service = ToolService(root, registry=coding_registry())
    service.workspace.get_sandbox()
    _run(service.aclose())
    assert built.options.read_only_paths == (Path("/opt/user-docs"),)
    (root / "xclaw.yaml").write_text("sandbox: not even valid\n")  # not read here
    Workspace(root).get_sandbox()
    assert built.calls[-1][0] == "auto" and built.options.run_as == (4242, 4343)


def test_run_serve_chronos_and_agents_share_the_factory(root: Path, built: Built) -> None:
    from xclaw.cli.common import sandbox_factory

    write_user(USER)
    factory = sandbox_factory(None, load_config(root))
    factory()
    factory()  # a second session: a new sandbox, the same settings
    assert len(built.calls) == 2
    assert all(o.read_only_paths == (Path("/opt/user-docs"),) for _, o in built.calls)
    assert all(o.hidden == (data_dir(), config_dir()) for _, o in built.calls)


def test_eval_uses_the_users_settings(root: Path, built: Built) -> None:
    from xclaw.evals.runner import EvalOptions, _sandbox

    write_user(USER)
    _sandbox(EvalOptions(sandbox="host"))
    assert built.calls[-1][0] == "host" and built.options.run_as == (4242, 4343)


def test_patch_jobs_keep_their_worktrees_visible(root: Path, built: Built) -> None:
    from xclaw.models.scripted import ScriptedModel
    from xclaw.patch.engine import PatchJob
    from xclaw.patch.job import Target

    write_user(USER + "  mode: full\n")
    job = PatchJob(ScriptedModel([]), root, (Target(1, "a.py", "x"),))
    job._sandbox()
    requested, options = built.calls[-1]
    assert requested == "auto"  # checks and git run on this machine
    assert options.run_as == (4242, 4343)
    assert options.hidden == (config_dir(),)  # the worktrees are in the data dir


def test_no_entry_point_builds_a_sandbox_of_its_own() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "xclaw"
    callers = [
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "make_sandbox(" in p.read_text() and p.parent.name != "sandbox"
    ]
    assert callers == []


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)
