"""Keeping the local project and a remote sandbox's working copy in step, failing closed.

The local folder stays the source of truth. Before a command, files that changed here since
the last sync (size and mtime, then sha256) are uploaded and files deleted here are removed
there. After it, files the command created or changed there (the sandbox's listing before
and after the command, then sha256) are written back atomically, except:

* protected files (``xclaw.yaml`` at the root, anything in or named ``.git`` at any depth):
  a command must not be able to plant hooks or agent config on the host;
* entries that would leave the root (``..``, absolute paths elsewhere, symlinks);
* files changed here during the command (a conflict: the local copy wins);
* deletions: reported, never applied. The local copy goes up again before the next command.

Everything not done is said in the notes, so the model knows the two copies differ.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from e2b import AsyncSandbox, CommandExitException, FileNotFoundException
from e2b.sandbox.filesystem.filesystem import EntryInfo, FileType

MAX_FILE_BYTES = 10 * 1024 * 1024
SKIPPED_DIRS = frozenset({"node_modules", ".venv", "__pycache__"})
LIST_DEPTH = 64  # deeper entries are neither listed nor copied back
_BATCH_FILES = 64
_BATCH_BYTES = 16 * 1024 * 1024
_PARALLEL = 8
# httpx rewrites these in multipart file names (HTML5 form encoding), so the sandbox would
# create a different name; such files are skipped rather than renamed.
_UNSENDABLE = frozenset('"\\') | frozenset(chr(c) for c in range(0x20))
_SAMPLES = 5


@dataclass(frozen=True, slots=True)
class Sig:
    """What we know a synced file looks like on this machine."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Listing:
    """The sandbox working copy: regular files by relative path, plus refused entries."""

    files: dict[str, EntryInfo]
    refused: dict[str, str]  # raw path -> reason


class SyncReport:
    """Notes grouped by what happened, so a big ``git commit`` gives one line, not thousands."""

    def __init__(self) -> None:
        self._groups: dict[str, list[str]] = {}
        self._plain: list[str] = []

    def add(self, what: str, path: str) -> None:
        self._groups.setdefault(what, []).append(printable(path))

    def say(self, note: str) -> None:
        self._plain.append(note)

    def notes(self) -> tuple[str, ...]:
        out = list(self._plain)
        for what, paths in self._groups.items():
            shown = ", ".join(sorted(paths)[:_SAMPLES])
            more = f" (+{len(paths) - _SAMPLES} more)" if len(paths) > _SAMPLES else ""
            out.append(f"{what} ({len(paths)}): {shown}{more}")
        return tuple(out)


def is_protected(rel: str) -> bool:
    parts = rel.split("/")
    return rel == "xclaw.yaml" or ".git" in parts


def in_skipped_dir(rel: str) -> bool:
    return any(p in SKIPPED_DIRS for p in rel.split("/")[:-1])


def printable(text: str, limit: int = 200) -> str:
    """A path from the sandbox, safe to show: no control characters, bounded length."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[:limit] + "..."


def remote_rel(workdir: str, path: str) -> str | None:
    """``path`` relative to the working copy, or None when it is not plainly inside it."""
    if not path.startswith(workdir + "/") or "\0" in path:
        return None
    rel = path[len(workdir) + 1 :]
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return rel


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def scan_local(root: Path, report: SyncReport) -> dict[str, os.stat_result]:
    """Regular files under ``root`` that are synced, by relative posix path (no symlinks)."""
    found: dict[str, os.stat_result] = {}
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            with os.scandir(root / rel_dir) as it:
                entries = list(it)
        except OSError:
            report.add("folders that could not be read, not synced", rel_dir + "/")
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                report.add("local symlinks not uploaded", rel)
            elif entry.is_dir():
                if entry.name in SKIPPED_DIRS:
                    report.add("folders not synced", rel + "/")
                else:
                    pending.append(rel)
            elif entry.is_file():
                try:
                    st = entry.stat()
                except OSError:  # removed since the folder was read
                    continue
                if st.st_size > MAX_FILE_BYTES:
                    report.add("files over 10 MB not synced", rel)
                elif _UNSENDABLE.intersection(rel):
                    report.add("files with quotes or control characters not synced", rel)
                else:
                    found[rel] = st
    return found


def safe_target(root: Path, rel: str) -> Path | None:
    """Where ``rel`` may be written, or None when a local symlink or non-folder is in the way."""
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return None
    target = root / rel
    if target.is_symlink() or target.is_dir():
        return None
    return target


def write_atomic(root: Path, rel: str, data: bytes, executable: bool) -> Path | None:
    target = safe_target(root, rel)
    if target is None:
        return None
    current = root
    for part in rel.split("/")[:-1]:  # one at a time so a symlink is never followed
        current = current / part
        try:
            current.mkdir(mode=0o755)
        except FileExistsError:  # also when a parallel write-back just made it
            pass
        if current.is_symlink() or not current.is_dir():
            return None
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
    mode = mode | 0o111 if executable else mode & ~0o111
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".xclaw-sync-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


class WorkingCopy:
    """The sync state of one local root against one sandbox's working copy."""

    def __init__(self, root: Path, workdir: str) -> None:
        self.root = root
        self.workdir = workdir.rstrip("/")
        self.index: dict[str, Sig] = {}  # files both sides agree on, as seen here

    def remote_path(self, local: Path) -> str:
        rel = local.relative_to(self.root).as_posix()
        return self.workdir if rel == "." else f"{self.workdir}/{rel}"

    # -- up ------------------------------------------------------------------------------

    def _plan_push(self, report: SyncReport) -> tuple[list[tuple[str, Sig, bool]], list[str]]:
        local = scan_local(self.root, report)
        changed: list[tuple[str, Sig, bool]] = []
        for rel, st in sorted(local.items()):
            old = self.index.get(rel)
            if old and (old.size, old.mtime_ns) == (st.st_size, st.st_mtime_ns):
                continue
            try:
                sig = Sig(st.st_size, st.st_mtime_ns, sha256_file(self.root / rel))
            except OSError:
                report.add("files that could not be read, not synced", rel)
                continue
            if old and old.sha256 == sig.sha256:
                self.index[rel] = sig
                continue
            changed.append((rel, sig, bool(st.st_mode & 0o100)))
        gone = [rel for rel in self.index if rel not in local]
        return changed, gone

    async def push(self, sbx: AsyncSandbox, report: SyncReport) -> None:
        changed, gone = await asyncio.to_thread(self._plan_push, report)
        batch: list[tuple[str, Sig, bool]] = []
        size = 0
        for item in changed:
            batch.append(item)
            size += item[1].size
            if len(batch) >= _BATCH_FILES or size >= _BATCH_BYTES:
                await self._upload(sbx, batch, report)
                batch, size = [], 0
        if batch:
            await self._upload(sbx, batch, report)
        executables = [rel for rel, _, x in changed if x]
        for i in range(0, len(executables), 100):
            # envd's upload does not carry file modes; `./script` must still run there.
            try:
                await sbx.commands.run(
                    shlex.join(["chmod", "+x", "--", *executables[i : i + 100]]),
                    cwd=self.workdir,
                )
            except CommandExitException:
                for rel in executables[i : i + 100]:
                    report.add("executable bit could not be set in the sandbox", rel)
        for i in range(0, len(gone), _PARALLEL):
            await asyncio.gather(*(self._remove(sbx, rel) for rel in gone[i : i + _PARALLEL]))

    async def _upload(
        self, sbx: AsyncSandbox, batch: list[tuple[str, Sig, bool]], report: SyncReport
    ) -> None:
        def read() -> list[tuple[str, bytes, Sig]]:
            out = []
            for rel, sig, _ in batch:
                try:
                    data = (self.root / rel).read_bytes()
                except OSError:  # removed or locked since the scan
                    report.add("files that could not be read, not synced", rel)
                    continue
                if hashlib.sha256(data).hexdigest() != sig.sha256:  # changed meanwhile
                    sig = Sig(len(data), -1, hashlib.sha256(data).hexdigest())
                out.append((rel, data, sig))
            return out

        loaded = await asyncio.to_thread(read)
        if not loaded:
            return
        await sbx.files.write_files(
            [{"path": f"{self.workdir}/{rel}", "data": data} for rel, data, _ in loaded]
        )
        for rel, _, sig in loaded:
            self.index[rel] = sig

    async def _remove(self, sbx: AsyncSandbox, rel: str) -> None:
        try:
            await sbx.files.remove(f"{self.workdir}/{rel}")
        except FileNotFoundException:
            pass
        self.index.pop(rel, None)

    # -- listing -------------------------------------------------------------------------

    async def listing(self, sbx: AsyncSandbox) -> Listing:
        files: dict[str, EntryInfo] = {}
        refused: dict[str, str] = {}
        for entry in await sbx.files.list(self.workdir, depth=LIST_DEPTH):
            rel = remote_rel(self.workdir, entry.path)
            if rel is None:
                refused[entry.path] = "outside the working copy"
            elif entry.type == FileType.SYMLINK or entry.symlink_target is not None:
                refused[entry.path] = "symlink"
            elif entry.type == FileType.FILE:
                files[rel] = entry
        return Listing(files, refused)

    # -- down ----------------------------------------------------------------------------

    async def pull(
        self, sbx: AsyncSandbox, before: Listing, after: Listing, report: SyncReport
    ) -> None:
        for path, reason in sorted(after.refused.items()):
            if path not in before.refused:
                report.add(f"not copied back ({reason}; refused)", path)
        for rel in sorted(set(before.files) - set(after.files)):
            report.add("deleted in the sandbox; kept here and uploaded again next time", rel)
            self.index.pop(rel, None)
        wanted: list[tuple[str, EntryInfo]] = []
        for rel, entry in sorted(after.files.items()):
            old = before.files.get(rel)
            if old and (old.size, old.modified_time) == (entry.size, entry.modified_time):
                continue
            if in_skipped_dir(rel):
                report.add("files in node_modules/.venv/__pycache__ folders not copied back", rel)
            elif is_protected(rel):
                report.add("protected files changed in the sandbox, not copied back", rel)
                self.index.pop(rel, None)  # put the local version back before the next command
            elif entry.size > MAX_FILE_BYTES:
                report.add("files over 10 MB changed in the sandbox, not copied back", rel)
            else:
                wanted.append((rel, entry))
        for i in range(0, len(wanted), _PARALLEL):
            chunk = wanted[i : i + _PARALLEL]
            await asyncio.gather(*(self._fetch(sbx, rel, e, report) for rel, e in chunk))

    async def _fetch(
        self, sbx: AsyncSandbox, rel: str, entry: EntryInfo, report: SyncReport
    ) -> None:
        buf = bytearray()
        try:
            async with await sbx.files.read(entry.path, format="stream") as stream:
                async for chunk in stream:
                    buf += chunk
                    if len(buf) > MAX_FILE_BYTES:  # grew after the listing: stay bounded
                        report.add("files over 10 MB changed in the sandbox, not copied back", rel)
                        return
        except FileNotFoundException:  # removed after the listing, e.g. by a background job
            report.add("gone from the sandbox before it could be copied back", rel)
            return
        data = bytes(buf)
        note = await asyncio.to_thread(self._write_back, rel, data, bool(entry.mode & 0o100))
        if note:
            report.add(note, rel)

    def _write_back(self, rel: str, data: bytes, executable: bool) -> str | None:
        try:
            return self._write_back_unsafe(rel, data, executable)
        except OSError as err:
            return f"not copied back (could not write here: {err.strerror or err})"

    def _write_back_unsafe(self, rel: str, data: bytes, executable: bool) -> str | None:
        digest = hashlib.sha256(data).hexdigest()
        local = self.root / rel
        old = self.index.get(rel)
        if local.is_file() and not local.is_symlink():
            st = local.stat()
            if sha256_file(local) == digest:
                self.index[rel] = Sig(st.st_size, st.st_mtime_ns, digest)
                return None
            if old is None or (old.size, old.mtime_ns) != (st.st_size, st.st_mtime_ns):
                return "changed here and in the sandbox; the local copy was kept"
        elif local.exists() or local.is_symlink():
            return "not copied back (a local folder or symlink is in the way)"
        target = write_atomic(self.root, rel, data, executable)
        if target is None:
            return "not copied back (a local symlink or file is in the way)"
        st = target.stat()
        self.index[rel] = Sig(st.st_size, st.st_mtime_ns, digest)
        return "copied back from the sandbox"
