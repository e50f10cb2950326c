"""Secrets never reach what we print, nor the programs a model starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import PreparedCall
from xclaw.redact import (
    MASK,
    LineRedactor,
    is_secret_name,
    load_environment_secrets,
    redact,
    redact_json,
    register_secret,
    scrub_environment,
    secret_values,
)
from xclaw.tools.base import Workspace
from xclaw.tools.registry import ToolRegistry

FAKE_KEYS = [
    "sk-proj-abcdefghijklmnopqrstuvwx1234",
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abcdefghij",
]


@pytest.mark.parametrize("key", FAKE_KEYS)
def test_known_formats_are_masked(key: str) -> None:
    out = redact(f"calling with {key} now")
    assert key not in out and MASK in out


def test_assignments_and_bearer_tokens() -> None:
    text = (
        'OPENAI_API_KEY=abc123secretvalue password: "hunter22" '
        "Authorization: Bearer abcdef123456789"
    )
    out = redact(text)
    assert "abc123secretvalue" not in out and "hunter22" not in out and "abcdef123456789" not in out
    assert out.startswith("OPENAI_API_KEY=")


def test_ordinary_text_is_untouched() -> None:
    text = "built 2 pages into dist/ at http://127.0.0.1:8000/ (token count 12)"
    assert redact(text) == text


def test_scrub_environment_drops_credentials() -> None:
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "x",
        "GITHUB_TOKEN": "y",
        "DB_PASSWORD": "z",
        "HOME": "/root",
    }
    assert scrub_environment(env) == {"PATH": "/bin", "HOME": "/root"}


async def test_programs_never_see_our_keys(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak-0000000000")
    box = coding_registry().bind(Workspace(root))
    prepared = box.prepare(ToolCallPart("c1", "terminal.exec", {"program": "env"}))
    assert isinstance(prepared, PreparedCall)
    result = await box.execute(prepared, lambda stream, text: None)
    assert result.ok and "should-not-leak" not in json.dumps(result.to_dict())
    assert "PATH=" in result.data["stdout"]


def test_env_argument_is_judged_by_policy(root: Path) -> None:
    from xclaw.policy.engine import PolicyEngine
    from xclaw.sandbox.host import HostSandbox

    # On the host a variable that makes git run a command asks; in the sandbox it is contained.
    for sandbox, action in ((HostSandbox(), "ask"), (None, "allow")):
        ws = Workspace(root, sandbox=sandbox)
        box = ToolRegistry(coding_registry()).bind(ws)
        prepared = box.prepare(
            ToolCallPart(
                "c1", "terminal.exec", {"program": "ls", "env": {"GIT_SSH_COMMAND": "touch x"}}
            )
        )
        assert isinstance(prepared, PreparedCall)
        assert PolicyEngine(ws).evaluate(prepared).action == action


# -- every form an attacker tried: each text holds a secret that must not survive -------------
PEM_BODY = "MIIEpAIBAAKCAQEAx7Rq9PlantedRsaBodyLineZZ"
PEM_BODY2 = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUPlantedSsh"
ATTACKS: list[tuple[str, str]] = [
    ('{"api_key": "abcd1234efgh"}', "abcd1234efgh"),
    ('{"password":"hunter2hunter2"}', "hunter2hunter2"),
    ("{'client_secret': 'cs-live-77aa'}", "cs-live-77aa"),
    ('{ "db" : { "auth" : { "password" : "nested-pw-0042" } } }', "nested-pw-0042"),
    ('{\\"access_token\\": \\"escaped-json-tok9\\"}', "escaped-json-tok9"),
    ('"clientSecret": "camelCaseSecret1"', "camelCaseSecret1"),
    ('"password": "cut-off-before-the-quo', "cut-off-before-the-quo"),
    ("OPENAI_API_KEY=abc123secretvalue", "abc123secretvalue"),
    ("export DB_PASS=dbpass-value-77", "dbpass-value-77"),
    ("STRIPE_KEY=stripe-plain-8899", "stripe-plain-8899"),
    ("database:\n  password: yaml-pass-123\n", "yaml-pass-123"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"),
    ('api_key = "quoted with spaces 42"', "quoted with spaces 42"),
    ("X-Api-Key: hdr-key-5566aa", "hdr-key-5566aa"),
    ("Authorization: Bearer opaque-token-881122", "opaque-token-881122"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw=="),
    ('curl -H "authorization: token tok-gh-9911"', "tok-gh-9911"),
    ("https://deploy:url-pass-1234@git.example.com/repo.git", "url-pass-1234"),
    ("postgres://app:pg-pass-5678@db:5432/app", "pg-pass-5678"),
    ("redis://:redis-pass-9012@cache:6379/0", "redis-pass-9012"),
    ("mysql --password hunter2-flag --user root", "hunter2-flag"),
    ("deploy --api-key=flag-key-4455 --verbose", "flag-key-4455"),
    ("curl -u admin:curl-pass-3344 https://x.example", "curl-pass-3344"),
    ("machine api.example.com login me password netrc-pass-77", "netrc-pass-77"),
    (
        "AccountName=acct;AccountKey=azureKey+/abc==;EndpointSuffix=core.windows.net",
        "azureKey+/abc==",
    ),
    (
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nAAAA==\n-----END RSA PRIVATE KEY-----",
        PEM_BODY,
    ),
    (f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n", PEM_BODY),
    (f"-----BEGIN EC PRIVATE KEY-----\r\n{PEM_BODY}\r\n-----END EC PRIVATE KEY-----", PEM_BODY),
    (
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY}\n-----END ENCRYPTED PRIVATE KEY-----",
        PEM_BODY,
    ),
    (f"cut output:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY2}\nAAAAC3Nza", PEM_BODY2),
    (f"{PEM_BODY}\nQUJDREVGR0g=\n-----END RSA PRIVATE KEY-----\n", PEM_BODY),  # head cut off
    (
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + PEM_BODY
        + '\\n-----END PRIVATE KEY-----\\n"}',
        PEM_BODY,
    ),
    (f"x = '-----BEGIN PRIVATE KEY-----\\n{PEM_BODY}\\n-----END PRIVATE KEY-----'", PEM_BODY),
    ("glpat-AbCdEfGhIjKlMnOpQrSt12", "glpat-AbCdEfGhIjKlMnOpQrSt12"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("ASIAQ3EXAMPLEKEY7XYZ", "ASIAQ3EXAMPLEKEY7XYZ"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "dozjgNryP4J3jV"),
]


@pytest.mark.parametrize(
    ("text", "secret"), ATTACKS, ids=[f"attack{i}" for i in range(len(ATTACKS))]
)
def test_attacks_are_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert MASK in out


def test_masking_keeps_the_shape_around_the_secret() -> None:
    assert redact('{"api_key": "abcd1234efgh", "user": "bob"}') == (
        '{"api_key": "[REDACTED]", "user": "bob"}'
    )
    assert redact("https://user:pass12@host/x") == "https://user:[REDACTED]@host/x"
    assert redact("redis://:pass12@h") == "redis://:[REDACTED]@h"
    assert redact("Authorization: Bearer abcdef123456789") == "Authorization: Bearer [REDACTED]"
    pem = (
        f"before\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nafter"
    )
    assert redact(pem) == f"before\n{MASK}\nafter"
    assert redact(f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n\nmore") == MASK  # no END: all of it


HARMLESS = [
    "PWD=/home/x OLDPWD=/home/x/old",
    "keyboard layout us; the key is to iterate; press any key",
    "loading models/tokenizer.json and tokenizer_config.json",
    "commit 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c (HEAD -> main)",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "max_tokens=4096 input_tokens: 1200 token_count: 12 tokens=5",
    "def login(password: str, token: str | None = None) -> bool:",
    'password = os.environ["DB_PASSWORD"]',
    "PASSWORD=${DB_PASSWORD}",
    "if password == confirm:",
    "login(user=user, password=password)",
    "GIT_AUTHOR_NAME=Ada_Lovelace TOKENIZERS_PARALLELISM=false",
    "Bearer authentication is described in RFC 6750",
    "http://localhost:8000/path@v2 and https://example.com/a:b",
    "sort_key=name primary_key: id cache_key=abc123def",
    "token_url: https://auth.example.com/oauth/token",
    '{"password": null, "token": "", "secret": true}',
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    # words ending in "sk"/"rk" before a long name are not OpenAI or Stripe keys
    "chronos-disk-check-20261202T061654Z-b03daf fired",
    "task-runner-blue-green-deploy-2026 flask-sqlalchemy-extension",
    "work_test_integration_suite_nightly and network_live_migration_window",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_an_sk_key_after_an_escape_or_a_separator_is_masked() -> None:
    key = "sk-proj-Q7wErTyUiOpAsDfGhJkLzXcV"
    for text in (json.dumps(f"line\n{key}"), f"x%3D{key}", f"KEY_{key}", f"\t{key}"):
        assert "Q7wErTyUiOpAsDfG" not in redact(text), text


SECRET_ENV = [
    "MYSQL_PWD",
    "DB_PASS",
    "PGPASSWORD",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GITHUB_TOKEN",
    "OPENAI_API_KEY",
    "NPM_CONFIG__AUTH",
    "VAULT_TOKEN",
    "SOME_CREDENTIALS",
    "SENTRY_DSN",
    "smtp_password",
]
PLAIN_ENV = ["PWD", "OLDPWD", "PATH", "HOME", "LANG", "GIT_AUTHOR_NAME", "TOKENIZERS_PARALLELISM"]


def test_secret_names() -> None:
    assert [n for n in SECRET_ENV if not is_secret_name(n)] == []
    assert [n for n in PLAIN_ENV if is_secret_name(n)] == []


def test_scrub_keeps_working_directories() -> None:
    env = {
        "PWD": "/w",
        "OLDPWD": "/v",
        "MYSQL_PWD": "a",
        "PGPASSWORD": "b",
        "AWS_SESSION_TOKEN": "c",
    }
    assert scrub_environment(env) == {"PWD": "/w", "OLDPWD": "/v"}


def test_secret_values_skip_short_values_and_paths(tmp_path: Path) -> None:
    key_file = tmp_path / "sa.json"
    key_file.write_text("{}")
    env = {
        "MYSQL_PWD": "s3cr3tvalue",
        "DB_PASS": "short",
        "PWD": "/home/someone/project",
        "GOOGLE_APPLICATION_CREDENTIALS": str(key_file),
        "PATH": "/usr/bin:/bin",
    }
    assert secret_values(env) == {"s3cr3tvalue"}


@pytest.fixture
def env_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    value = "planted-secret-123"
    monkeypatch.setenv("MYSQL_PWD", value)
    load_environment_secrets()  # a new process reads its environment on first use
    yield value
    monkeypatch.delenv("MYSQL_PWD")
    load_environment_secrets()


def test_environment_values_are_masked_anywhere(env_secret: str) -> None:
    out = redact(f"the db said: {env_secret}; again:{env_secret}!")
    assert env_secret not in out and out.count(MASK) == 2
    assert env_secret not in json.dumps(redact_json({"x": [f"...{env_secret}..."]}))


def test_environment_change_is_seen_after_reload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "reloaded-value-77")
    assert "reloaded-value-77" in redact("v=reloaded-value-77")  # read once: not yet known
    load_environment_secrets()
    assert "reloaded-value-77" not in redact("v=reloaded-value-77")
    monkeypatch.delenv("PGPASSWORD")
    load_environment_secrets()
    assert "reloaded-value-77" in redact("v=reloaded-value-77")


def test_registered_values_are_masked_also_json_escaped() -> None:
    register_secret('reg"istered\\value')
    register_secret("tiny")  # too short to mask safely: ignored
    out = redact(json.dumps({"note": 'x reg"istered\\value y'}))
    assert "istered" not in out and MASK in out
    assert redact("tiny things") == "tiny things"


def test_redact_json_masks_by_key_and_keeps_shape() -> None:
    value = {
        "ok": True,
        "data": {
            "env": {"DEPLOY_TOKEN": "abc", "HOME": "/root"},
            "credentials": {"user": "bob", "n": 3},
            "max_tokens": "4096",
            "items": [{"password": "p1"}, "sk-proj-abcdefghijklmnopqrstuvwx1234"],
        },
    }
    assert redact_json(value) == {
        "ok": True,
        "data": {
            "env": {"DEPLOY_TOKEN": MASK, "HOME": "/root"},
            "credentials": {"user": MASK, "n": 3},
            "max_tokens": "4096",
            "items": [{"password": MASK}, MASK],
        },
    }


def test_line_redactor_masks_keys_split_across_pieces() -> None:
    stream = LineRedactor()
    pieces = [
        "starting\nOPENAI_API_KEY=abc12",
        "3secretvalue\n-----BEGIN RSA PRIV",
        f"ATE KEY-----\n{PEM_BODY[:20]}",
        f"{PEM_BODY[20:]}\nQUJD\n-----END RSA PRIVATE KEY-----\n",
        "done, no newline",
    ]
    lines = [line for p in pieces for line in stream.feed(p)] + stream.flush()
    text = "\n".join(lines)
    assert lines[0] == "starting" and lines[-1] == "done, no newline"
    assert "abc123secretvalue" not in text and PEM_BODY[:12] not in text and "QUJD" not in text
    assert MASK in text


def test_line_redactor_masks_a_cut_key_to_the_end() -> None:
    stream = LineRedactor()
    lines = stream.feed(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY2}\n")
    lines += stream.feed("AAAA\n") + stream.flush()
    assert lines == [MASK]
    assert stream.feed("plain again\n") == ["plain again"]


def test_a_text_found_clean_is_masked_once_its_secret_is_registered() -> None:
    text = "the deploy answered with later-registered-value-91"
    assert redact(text) == text  # clean now, so remembered as clean...
    assert redact(text) == text
    register_secret("later-registered-value-91")  # ...until the known values change
    assert redact(text) == f"the deploy answered with {MASK}"


# -- hints: the variable's name is what the user needs; only a value is ever masked ----------

HINTS = [
    "export OPENAI_API_KEY=... (or put it in the project's .env file).",
    "export ANTHROPIC_API_KEY=…",
    "Set DEEPSEEK_API_KEY=<your key> in .env.",
    "token: <paste it here>",
    "Run `xclaw login`, or set XCLAW_API_KEY=$MY_GATEWAY_KEY.",
]


@pytest.mark.parametrize("hint", HINTS)
def test_placeholders_in_hints_stay_readable(hint: str) -> None:
    assert redact(hint) == hint


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export OPENAI_API_KEY=hunter2-real-value", "hunter2-real-value"),
        ("export OPENAI_API_KEY=...but-this-is-real", "...but-this-is-real"),
        ("Set DEEPSEEK_API_KEY=<unclosed realvalue9", "<unclosed"),
        ("token: sk-proj-abcdefghijklmnopqrstuvwx1234", "sk-proj-abcdefghijklmnopqrstuvwx1234"),
    ],
)
def test_a_real_value_beside_a_name_is_still_masked(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and MASK in out
    assert text.split("=")[0].split(":")[0] in out  # the name itself survives
