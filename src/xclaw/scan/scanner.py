"""``scan_path``: every file under a folder through every rule, into one sorted report."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from xclaw.scan.context import FileContext, file_kind
from xclaw.scan.exfil_rules import scan_exfil
from xclaw.scan.files import (
    HEAD_BYTES,
    Entry,
    classify_binary,
    link_leaves,
    looks_binary,
    read_head,
    read_text_bytes,
    walk,
)
from xclaw.scan.install_rules import (
    install_files,
    scan_install_script,
    scan_makefile,
    scan_package_json,
    scan_pyproject,
    scan_skill_md,
)
from xclaw.scan.python_rules import scan_python
from xclaw.scan.report import Finding, ScanError, ScanReport, Severity
from xclaw.scan.reverse_shell_rules import scan_reverse_shells
from xclaw.scan.rules import RULES
from xclaw.scan.text_rules import scan_text
from xclaw.scan.unicode_rules import scan_unicode

DEFAULT_MAX_FILE_BYTES = 2_000_000
DEFAULT_MAX_FILES = 5_000
_MANIFESTS = {"package.json", "pyproject.toml"}
_MAKEFILES = {"makefile", "gnumakefile"}


def scan_path(
    path: Path | str,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> ScanReport:
    """Scan a skill or plugin (a folder, or one file) before it is installed.

    Never follows a symbolic link and never reads a binary past its first bytes. Raises
    ``ScanError`` only when ``path`` is missing or not a file or folder; everything else is a
    finding.
    """
    given = Path(path)
    if not given.exists():
        raise ScanError(
            f"Nothing to scan at {given}.",
            hint="Give the folder of the skill or plugin to install.",
        )
    root = given.resolve()
    if root.is_dir():
        entries, over = _collect(root, max_files)
        base = root
    elif root.is_file():
        st = root.stat()
        entries, over = [Entry(root.name, root, "file", st.st_size, st.st_mode)], False
        base = root.parent
    else:
        raise ScanError(f"{given} is neither a file nor a folder.", hint="Give a folder.")
    findings: list[Finding] = []
    if over:
        rule = RULES["limit.files"]
        findings.append(
            Finding(
                ".",
                0,
                0,
                rule.id,
                rule.severity,
                f"The folder holds more than {max_files} files; the rest was not scanned.",
                "",
            )
        )
    files = [e for e in entries if e.kind == "file"]
    manifests = {e.rel: _small_text(e) for e in files if PurePosixPath(e.rel).name in _MANIFESTS}
    installers = install_files(manifests, (e.rel for e in files))
    scanned = 0
    for e in entries:
        if e.kind == "symlink":
            if link_leaves(base, e):
                findings.append(
                    _whole_file(
                        e.rel,
                        "symlink.outside",
                        f"The link points outside the folder ({e.link_target}).",
                    )
                )
            continue
        if e.kind == "special":
            findings.append(_whole_file(e.rel, "file.special", None))
            continue
        try:
            findings.extend(_scan_file(e, e.rel in installers, max_file_bytes))
        except (OSError, RecursionError, MemoryError, ValueError) as exc:
            # Fail closed: a file the rules could not finish is a high finding, not a pass.
            findings.append(
                _whole_file(
                    e.rel,
                    "scan.incomplete",
                    f"The scanner could not finish this file ({type(exc).__name__}).",
                )
            )
        scanned += 1
    return ScanReport(root=str(root), findings=_dedupe(findings), files_scanned=scanned)


def _collect(root: Path, max_files: int) -> tuple[list[Entry], bool]:
    out: list[Entry] = []
    for e in walk(root):
        if len(out) >= max_files:
            return out, True
        out.append(e)
    return out, False


def _small_text(e: Entry) -> str:
    if e.size > 1_000_000:
        return ""
    return read_text_bytes(e.path, 1_000_000).decode("utf-8", errors="replace")


def _whole_file(
    rel: str, rule_id: str, message: str | None, severity: Severity | None = None
) -> Finding:
    rule = RULES[rule_id]
    return Finding(rel, 0, 0, rule.id, severity or rule.severity, message or rule.message, "")


def _cached_bytecode(e: Entry) -> bool:
    """A ``__pycache__/name.cpython-311.pyc`` whose ``name.py`` sits in the folder above."""
    if e.path.parent.name != "__pycache__" or e.path.suffix != ".pyc":
        return False
    return (e.path.parent.parent / (e.path.name.split(".", 1)[0] + ".py")).is_file()


def _scan_file(e: Entry, install: bool, max_file_bytes: int) -> list[Finding]:
    try:
        head = read_head(e.path)
    except OSError as exc:
        return [_whole_file(e.rel, "file.special", f"The file could not be read ({exc.strerror}).")]
    if _cached_bytecode(e):
        return [
            _whole_file(
                e.rel,
                "binary.executable",
                "Cached bytecode of a source file in the "
                "folder; Python may run it instead of the source: delete __pycache__ "
                "before installing.",
                Severity.MEDIUM,
            )
        ]
    if looks_binary(head):
        verdict = classify_binary(e.rel, head, e.mode)
        return [_whole_file(e.rel, verdict[0], verdict[1])] if verdict else []
    verdict = classify_binary(e.rel, head, 0)
    if verdict and verdict[0] == "binary.executable" and not e.rel.endswith((".bin", ".com")):
        return [_whole_file(e.rel, *verdict)]  # a .so or .pyc that happens to hold no NUL yet
    if e.size <= len(head) < HEAD_BYTES:
        raw = head[:max_file_bytes]  # already read whole
    else:
        raw = read_text_bytes(e.path, max_file_bytes)
    ctx = FileContext(
        e.rel, _decode(raw), file_kind(e.rel, raw[:200].decode("latin-1")), install=install
    )
    if e.size > max_file_bytes:
        ctx.emit(
            "limit.file_size",
            0,
            0,
            message=f"The file has {e.size} bytes; only the first {max_file_bytes} were scanned.",
        )
    _apply_rules(ctx)
    return ctx.findings


def _decode(raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    return raw.decode("utf-8", errors="replace")


def _apply_rules(ctx: FileContext) -> None:
    if ctx.kind == "python":
        scan_python(ctx)  # first: on a tie, its finding (more precise message) is the one kept
    scan_text(ctx)
    scan_exfil(ctx)
    scan_reverse_shells(ctx)
    scan_unicode(ctx)
    name = PurePosixPath(ctx.rel).name
    if ctx.install and ctx.kind not in {"python", "doc"}:
        scan_install_script(ctx)
    if name == "package.json":
        scan_package_json(ctx)
    elif name == "pyproject.toml":
        scan_pyproject(ctx)
    elif name.lower() in _MAKEFILES or name.lower().endswith(".mk"):
        scan_makefile(ctx)
    elif name.upper() == "SKILL.MD":
        scan_skill_md(ctx)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (file, line, rule): the most severe one."""
    best: dict[tuple[str, int, str], Finding] = {}
    for f in findings:
        key = (f.file, f.line, f.rule)
        if key not in best or f.severity.rank > best[key].severity.rank:
            best[key] = f
    return sorted(best.values())


__all__ = ["DEFAULT_MAX_FILE_BYTES", "DEFAULT_MAX_FILES", "scan_path"]
