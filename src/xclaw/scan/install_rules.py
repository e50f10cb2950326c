"""What runs at install time, and whether it reaches the network: npm lifecycle scripts
(``json``), pyproject build hooks (``tomllib``), setup.py (``ast``, via python_rules), Makefile
install targets, and SKILL.md ``install`` metadata (``yaml``) and Installation sections.

Makefile and Markdown sections are split by hand: their structure (tab-indented recipes,
headings) is one regular expression each, and no parser we would add reads both."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

import yaml

from xclaw.scan.context import FileContext

NPM_INSTALL_HOOKS = (
    "preinstall",
    "install",
    "postinstall",
    "prepare",
    "preprepare",
    "postprepare",
    "prepublish",
)
NETWORK_TEXT = re.compile(
    r"\bcurl\b|\bwget\b|Invoke-WebRequest|Invoke-RestMethod|\biwr\b|\birm\b|\bgit\s+clone\b"
    r"|https?://|\bfetch\s*\(|require\(\s*['\"](?:node:)?(?:https?|net|http2|dgram|tls)['\"]\)"
    r"|from\s+['\"](?:node:)?(?:https?|net|http2|dgram|tls)['\"]|\baxios\b|\bgot\s*\("
    r"|/dev/tcp/|\bnc\s+-|\bscp\s|\brsync\s.*:|New-Object\s+(?:System\.)?Net\.WebClient",
    re.IGNORECASE,
)
_PACKAGE_MANAGER_URL = re.compile(r"(?:pip|uv|pipx)\s+install\s+[^\n]*(?:git\+|https?://)", re.I)
_INSTALL_NAMES = re.compile(
    r"^(?:setup\.py|hatch_build\.py|install(?:er)?\.(?:sh|bash|ps1|py|js|cmd|bat)"
    r"|setup\.(?:sh|ps1|cmd|bat)|(?:pre|post)install\.\w+|bootstrap\.(?:sh|ps1))$",
    re.IGNORECASE,
)
_RUNNERS = {
    "node",
    "sh",
    "bash",
    "zsh",
    "python",
    "python3",
    "deno",
    "bun",
    "pwsh",
    "tsx",
    "ts-node",
}
_MAKE_INSTALL_TARGETS = {
    "install",
    "setup",
    "deps",
    "bootstrap",
    "all",
    "default",
    "build",
    "postinstall",
    "preinstall",
    "vendor",
}
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_INSTALL_HEADING = re.compile(r"install|set\s*up|setup|bootstrap|prerequisite|安装|配置环境", re.I)


def install_files(manifests: dict[str, str], all_files: Iterable[str]) -> set[str]:
    """Relative paths of files that run at install time: conventional names, plus scripts that
    package.json hooks or pyproject build hooks name. ``manifests``: rel path -> text."""
    files = set(all_files)
    found = {f for f in files if _INSTALL_NAMES.match(PurePosixPath(f).name)}
    for rel, text in manifests.items():
        base = PurePosixPath(rel).parent
        name = PurePosixPath(rel).name
        if name == "package.json":
            for script in _npm_hooks(text).values():
                found |= {str(base / p) for p in _script_files(script)}
        elif name == "pyproject.toml":
            for p in _pyproject_hook_paths(text):
                prefix = str(base / p)
                found |= {f for f in files if f == prefix or f.startswith(prefix.rstrip("/") + "/")}
    return {f for f in found if f in files}


def _npm_hooks(text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in scripts.items() if k in NPM_INSTALL_HOOKS and isinstance(v, str)}


def _script_files(command: str) -> list[str]:
    """``node scripts/setup.js && sh x.sh`` -> the files those runners are given."""
    out = []
    for part in re.split(r"&&|\|\||;|\|", command):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        for i, w in enumerate(words[:-1]):
            if PurePosixPath(w).name in _RUNNERS:
                target = next((x for x in words[i + 1 :] if not x.startswith("-")), None)
                if target:
                    out.append(target.removeprefix("./"))
        if words and "/" in words[0] and not words[0].startswith(("/", "-")):
            out.append(words[0].removeprefix("./"))
    return out


def _pyproject_hook_paths(text: str) -> list[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    paths: list[str] = []
    build = data.get("build-system", {})
    paths += [p for p in build.get("backend-path", []) if isinstance(p, str)]
    hatch = data.get("tool", {}).get("hatch", {}).get("build", {})
    hook_tables = [hatch.get("hooks", {})]
    hook_tables += [
        t.get("hooks", {}) for t in hatch.get("targets", {}).values() if isinstance(t, dict)
    ]
    for hooks in hook_tables:
        custom = hooks.get("custom") if isinstance(hooks, dict) else None
        if isinstance(custom, dict):
            paths.append(str(custom.get("path", "hatch_build.py")))
    return paths


def scan_package_json(ctx: FileContext) -> None:
    for hook, command in _npm_hooks(ctx.text).items():
        if NETWORK_TEXT.search(command) or re.search(r"\bnode\s+-e\b", command):
            line = _line_of(ctx, f'"{hook}"')
            ctx.emit(
                "install.network",
                line,
                message=f"The npm {hook} script reaches the network when the package is installed.",
            )


def scan_pyproject(ctx: FileContext) -> None:
    try:
        data = tomllib.loads(ctx.text)
    except tomllib.TOMLDecodeError:
        return
    for req in data.get("build-system", {}).get("requires", []):
        if isinstance(req, str) and re.search(r"@\s*(?:git\+)?https?://|git\+", req):
            ctx.emit(
                "install.network",
                _line_of(ctx, req[:30]),
                message="A build requirement is fetched from a URL, outside the registry.",
            )


def scan_makefile(ctx: FileContext) -> None:
    target: str | None = None
    for n, line in enumerate(ctx.lines, start=1):
        m = re.match(r"^([A-Za-z0-9_.\-/ ]+?)\s*::?(?!=)", line)
        if m and not line.startswith("\t"):
            target = m.group(1).strip()
            continue
        if line.startswith("\t") and target:
            names = set(target.split())
            if names & _MAKE_INSTALL_TARGETS and NETWORK_TEXT.search(line):
                ctx.emit(
                    "install.network",
                    n,
                    NETWORK_TEXT.search(line).start() + 1,  # type: ignore[union-attr]
                    message=f"The Makefile target {target!r} fetches from the network.",
                )


def scan_install_script(ctx: FileContext) -> None:
    """Non-Python install-time scripts (Python ones go through the ast rules)."""
    for n, line in enumerate(ctx.lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(("#", "//", "REM ")):
            continue
        m = NETWORK_TEXT.search(line) or _PACKAGE_MANAGER_URL.search(line)
        if m:
            ctx.emit(
                "install.network",
                n,
                m.start() + 1,
                message="An install-time script reaches the network.",
            )


def scan_skill_md(ctx: FileContext) -> None:
    body_start = _front_matter(ctx)
    section_level: int | None = None
    for n in range(body_start + 1, len(ctx.lines) + 1):
        line = ctx.lines[n - 1]
        h = _HEADING.match(line)
        if h:
            level = len(h.group(1))
            if section_level is not None and level <= section_level:
                section_level = None
            if section_level is None and _INSTALL_HEADING.search(h.group(2)):
                section_level = level
            continue
        if section_level is None:
            continue
        m = re.search(r"\bcurl\b|\bwget\b|Invoke-WebRequest|\biwr\b|\bgit\s+clone\b", line, re.I)
        m = m or _PACKAGE_MANAGER_URL.search(line)
        if m:
            ctx.emit(
                "install.network",
                n,
                m.start() + 1,
                message="The skill's install section downloads from the network.",
            )


def _front_matter(ctx: FileContext) -> int:
    """Check the YAML front matter's ``install`` entries; return the line where it ends."""
    if not ctx.lines or ctx.lines[0].strip() != "---":
        return 0
    end = next((i for i in range(1, len(ctx.lines)) if ctx.lines[i].strip() == "---"), None)
    if end is None:
        return 0
    try:
        meta = yaml.safe_load("\n".join(ctx.lines[1:end]))
    except yaml.YAMLError:
        return end + 1
    for value in _install_values(meta):
        text = json.dumps(value, ensure_ascii=False)
        download = isinstance(value, dict) and value.get("kind") == "download"
        if download or NETWORK_TEXT.search(text) or _PACKAGE_MANAGER_URL.search(text):
            ctx.emit(
                "install.network",
                _line_of(ctx, "install", stop=end + 1),
                message="The skill's install metadata downloads from a URL.",
            )
            break
    return end + 1


def _install_values(meta: Any) -> Iterable[Any]:
    """Every entry under an ``install`` key anywhere in the front matter."""
    stack = [meta]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "install":
                    yield from (v if isinstance(v, list) else [v])
                else:
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)


def _line_of(ctx: FileContext, needle: str, stop: int | None = None) -> int:
    for n, line in enumerate(ctx.lines[:stop], start=1):
        if needle in line:
            return n
    return 1
