"""`xclaw tools call` prints the ToolResult: redacted, whatever the tool read or ran.

Planted credential files (a ``.env``, a PEM key, a JSON credentials file, a config with
passwords in URLs, a file holding the value of a secret environment variable) are printed
through ``terminal.exec`` (``cat``) and ``fs.read``. Every planted secret carries the marker
``PLANTED`` and nothing else printed does, so one substring check finds any leak; the printed
JSON must still parse and show the harmless parts of those files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app

MARK = "PLANTED"
ENV_SECRET = "planted-secret-123"  # lower case on purpose: checked on its own
PEM_BODY = [
    "MIIEpAIBAAKCAQEAxPLANTEDrsaBodyLineOneAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "PLANTEDrsaBodyLineTwoBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB==",
]
FILES = {
    ".env": (
        'api_key = "PLANTED-apikey-0001"\n'
        "export DB_PASSWORD=PLANTED-dbpass-0002\n"
        "SECRET_TOKEN: 'PLANTED-yamltoken-0003'\n"
        "DEBUG=true\n"
    ),
    "id_rsa": (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(PEM_BODY)
        + "\n-----END RSA PRIVATE KEY-----\n"
    ),
    "id_ed25519.partial": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktPLANTEDcutOff0004\n"
    ),
    "credentials.json": json.dumps(
        {
            "type": "service_account",
            "client_email": "robot@example.iam.gserviceaccount.com",
            "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvPLANTEDjsonPem0005\n"
            "-----END PRIVATE KEY-----\n",
            "client_secret": "PLANTED-client-0006",
            "nested": {"db": {"password": "PLANTED-nested-0007"}},
        },
        indent=2,
    ),
    "db.conf": (
        "DATABASE_URL=postgres://app:PLANTED-urlpass-0008@db.internal:5432/app\n"
        "cache redis://:PLANTED-redis-0009@cache:6379/0\n"
        "header Authorization: Bearer PLANTED-bearer-0010\n"
    ),
    "notes.txt": f"the mysql password is {ENV_SECRET} (do not share)\n",
    "harmless.txt": (
        "PWD=/home/x\nkeyboard shortcuts\nmodels/tokenizer.json\n"
        "commit 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c\n"
        "id 123e4567-e89b-12d3-a456-426614174000\n"
    ),
}


@pytest.fixture
def planted(root: Path) -> Path:
    for name, text in FILES.items():
        (root / name).write_text(text)
    return root


def invoke(root: Path, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The printed ToolResult, and everything printed (stdout and stderr)."""
    result = CliRunner().invoke(
        app,
        ["tools", "call", name, "--args", json.dumps(args), "-C", str(root), "--approval", "allow"],
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert isinstance(printed, dict) and printed["ok"], result.output
    return printed, result.output


def test_the_planted_files_really_hold_the_secrets(planted: Path) -> None:
    # The check below can fail: without redaction every planted secret is printed.
    text = "".join((planted / n).read_text() for n in FILES)
    assert text.count(MARK) == 12 and ENV_SECRET in text


CREDENTIAL_FILES = [name for name, text in FILES.items() if MARK in text]


@pytest.mark.parametrize("name", CREDENTIAL_FILES)
def test_cat_of_a_credential_file_prints_no_secret(planted: Path, name: str) -> None:
    result, out = invoke(planted, "terminal.exec", {"program": "cat", "argv": [name]})
    assert MARK not in out, out
    assert "[REDACTED]" in result["data"]["stdout"]


@pytest.mark.parametrize("name", CREDENTIAL_FILES)
def test_fs_read_of_a_credential_file_prints_no_secret(planted: Path, name: str) -> None:
    result, out = invoke(planted, "fs.read", {"path": name})
    assert MARK not in out, out
    assert "[REDACTED]" in result["data"]["content"]


def test_all_files_at_once_print_no_secret(planted: Path) -> None:
    _, out = invoke(planted, "terminal.exec", {"program": "cat", "argv": CREDENTIAL_FILES})
    assert MARK not in out, out


def test_harmless_parts_survive(planted: Path) -> None:
    result, _ = invoke(planted, "terminal.exec", {"program": "cat", "argv": ["credentials.json"]})
    stdout = result["data"]["stdout"]
    assert '"type": "service_account"' in stdout
    assert "robot@example.iam.gserviceaccount.com" in stdout
    result, _ = invoke(planted, "terminal.exec", {"program": "cat", "argv": ["db.conf"]})
    stdout = result["data"]["stdout"]
    assert "postgres://app:[REDACTED]@db.internal:5432/app" in stdout
    assert "redis://:[REDACTED]@cache:6379/0" in stdout
    assert "Authorization: Bearer [REDACTED]" in stdout
    result, _ = invoke(planted, "terminal.exec", {"program": "cat", "argv": ["harmless.txt"]})
    assert result["data"]["stdout"] == FILES["harmless.txt"]


def test_environment_secret_is_masked_in_a_fresh_process(planted: Path) -> None:
    """The CLI masks the value of its own secret variables; the child never even sees it."""
    env = {**os.environ, "MYSQL_PWD": ENV_SECRET, "COLUMNS": "200"}
    for name, args in [
        ("terminal.exec", {"program": "cat", "argv": ["notes.txt"]}),
        ("terminal.exec", {"program": "env"}),
        ("fs.read", {"path": "notes.txt"}),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "xclaw", "tools", "call", name, "--args", json.dumps(args)]
            + ["-C", str(planted), "--approval", "allow"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert ENV_SECRET not in proc.stdout + proc.stderr
        if name == "fs.read" or "notes.txt" in args.get("argv", []):
            assert "password is [REDACTED] (do not share)" in proc.stdout
        else:
            assert "MYSQL_PWD" not in result["data"]["stdout"]  # scrubbed from the child


def test_error_messages_are_redacted_and_not_markup(tmp_path: Path) -> None:
    # A path is all the message quotes here; a provider error or a failed URL quotes more.
    missing = tmp_path / "[bold]repo" / "DB_PASSWORD=PLANTED-errpass-0011"
    result = CliRunner().invoke(app, ["tools", "call", "fs.read", "-C", str(missing)])
    assert result.exit_code == 2
    printed = "".join(result.output.split())
    assert MARK not in printed
    assert "PROJECT_NOT_FOUND" in printed and "[bold]repo/DB_PASSWORD=[REDACTED]" in printed
