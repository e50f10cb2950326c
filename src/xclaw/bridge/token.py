"""The bridge's bearer token: made once, kept owner-only, never printed again.

The default file is ``<data dir>/bridge/token`` (folder 0700, file 0600). The first start
creates it with ``secrets.token_urlsafe`` and reports ``created=True`` so the command prints
the token that one time; later starts only say where it is. A file given with
``--token-file`` is used if it exists (it must not be readable by others) and created the
same way if not. The token is registered with the redactor, so no error or log shows it.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir
from xclaw.redact import register_secret

__all__ = ["BridgeToken", "default_token_path", "load_or_create_token"]

MIN_TOKEN_CHARS = 16


@dataclass(frozen=True, slots=True)
class BridgeToken:
    value: str
    path: Path
    created: bool  # made by this start: the one time it may be shown

    def __repr__(self) -> str:  # never the value, wherever a token object gets printed
        return f"BridgeToken(path={str(self.path)!r}, created={self.created})"


def default_token_path() -> Path:
    folder = data_dir() / "bridge"
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)
    return folder / "token"


def load_or_create_token(path: Path | None = None) -> BridgeToken:
    """The token in ``path`` (default: ``default_token_path()``), made there if missing."""
    target = path.expanduser() if path is not None else default_token_path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        created = _create(target)
    except FileExistsError:
        created = None
    token = BridgeToken(created or _read(target), target, created is not None)
    register_secret(token.value)
    return token


def _create(path: Path) -> str:
    value = secrets.token_urlsafe(32)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise
    except OSError as err:
        raise _file_error(path, f"cannot be created ({err.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(value + "\n")
    return value


def _read(path: Path) -> str:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise _file_error(path, "is not a regular file")
        if info.st_mode & 0o077:
            raise ConfigError(
                f"The bridge token file {path} can be read by other users.",
                code="BRIDGE_TOKEN_FILE_OPEN",
                hint=f"Run: chmod 600 {path}",
            )
        value = path.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise _file_error(path, f"cannot be read ({err.strerror})") from None
    if len(value) < MIN_TOKEN_CHARS or any(c.isspace() for c in value):
        raise _file_error(path, f"does not hold one token of at least {MIN_TOKEN_CHARS} characters")
    return value


def _file_error(path: Path, what: str) -> ConfigError:
    return ConfigError(
        f"The bridge token file {path} {what}.",
        code="BRIDGE_TOKEN_FILE_INVALID",
        hint="Fix the file, or delete it to have a new token made on the next start.",
    )
