"""The environment a model-run program gets: an allow-list, never xclaw's own environment.

Names pass when they are on the list (or match one of its prefixes) and do not look like
credentials. The model's own ``env`` entries are added as given: they hold only what the model
wrote, never a value of ours.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from xclaw.redact import is_secret_name

ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "CI",
        "PYENV_ROOT",
        "PYENV_VERSION",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "GOROOT",
        "GOPATH",
        "JAVA_HOME",
        "NVM_DIR",
        "NVM_BIN",
        "VIRTUAL_ENV",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    }
)
ALLOWED_PREFIXES = ("LC_",)


def allowed_name(name: str, extra: Iterable[str] = ()) -> bool:
    if is_secret_name(name):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES) or name in set(extra)


def child_environment(
    model_env: Mapping[str, str],
    *,
    base: Mapping[str, str] | None = None,
    passthrough: Iterable[str] = (),
) -> dict[str, str]:
    """Allow-listed variables of ``base`` (xclaw's environment), then the model's ``env``
    (already checked by the command tool for names and loader variables)."""
    source = os.environ if base is None else base
    keep = tuple(passthrough)
    env = {k: v for k, v in source.items() if allowed_name(k, keep)}
    env.setdefault("PATH", os.defpath)
    env.update(model_env)
    return env
