"""The CLI surface: run without a model, tools list, doctor, demo."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from xclaw.cli.app import app


def test_run_without_model_says_so_in_one_line(root: Path) -> None:
    result = CliRunner().invoke(app, ["run", "-C", str(root), "do things"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "MODEL_NOT_CONFIGURED" in lines[0] and "--model" in lines[0]


def test_run_with_unknown_provider_is_clear(root: Path) -> None:
    result = CliRunner().invoke(app, ["run", "-C", str(root), "--model", "nope:x", "t"])
    assert result.exit_code == 2 and "MODEL_PROVIDER_UNKNOWN" in result.stderr


def test_run_with_a_script(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "- tool_calls: [{name: fs.write, arguments: {path: hi.txt, content: hi}}]\n"
        "- text: wrote hi.txt\n"
    )
    result = CliRunner().invoke(
        app, ["run", "-C", str(root), "--model", f"scripted:{script}", "write hi.txt"]
    )
    assert result.exit_code == 0, result.output
    assert (root / "hi.txt").read_text() == "hi"
    assert "fs.write" in result.stdout and "completed" in result.stdout


def test_tools_list_json_has_strict_schemas() -> None:
    result = CliRunner().invoke(app, ["tools", "list", "--json"])
    specs = json.loads(result.stdout)
    names = {s["name"] for s in specs}
    assert {
        "fs.list",
        "fs.read",
        "fs.write",
        "fs.edit",
        "fs.search",
        "terminal.exec",
        "process.start",
        "process.read",
        "process.stop",
        "process.list",
        "project.status",
    } <= names
    assert all(s["parameters"]["additionalProperties"] is False for s in specs)


def test_doctor_reports(root: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", "-C", str(root)])
    assert "git" in result.stdout and "data dir" in result.stdout
    assert result.exit_code == 0


def test_demo_end_to_end(tmp_path: Path) -> None:
    target = tmp_path / "site"
    result = CliRunner().invoke(app, ["demo", "-C", str(target)])
    assert result.exit_code == 0, result.output
    urls = re.findall(r"answered HTTP 200 at (http://127\.0\.0\.1:\d+/)", result.stdout)
    assert urls, result.stdout
    assert "scripted" in result.stdout
    assert (target / "dist" / "about.html").read_text().count("</section>") == 1
    try:  # the server was stopped at the end of the run
        urllib.request.urlopen(urls[0], timeout=2)
        raise AssertionError("the demo server is still running")
    except urllib.error.URLError:
        pass


def test_demo_refuses_a_non_empty_dir(root: Path) -> None:
    (root / "x").write_text("x")
    result = CliRunner().invoke(app, ["demo", "--project", str(root)])
    assert result.exit_code == 2 and "DEMO_DIR_NOT_EMPTY" in result.stderr


def test_demo_with_the_xml_protocol(tmp_path: Path) -> None:
    target = tmp_path / "site-xml"
    result = CliRunner().invoke(app, ["demo", "-C", str(target), "--protocol", "xml"])
    assert result.exit_code == 0, result.output
    assert "rendered as XML text" in " ".join(result.stdout.split())
    assert re.search(r"answered HTTP 200 at http://127\.0\.0\.1:\d+/", result.stdout)
    assert (target / "dist" / "about.html").read_text().count("</section>") == 1


def test_config_show_masks_keys(root: Path) -> None:
    (root / "xclaw.yaml").write_text("model: openai:gpt-4.1\napproval: deny\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\n")
    result = CliRunner().invoke(app, ["config", "show", "-C", str(root)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "model: openai:gpt-4.1" in out and "approval: deny" in out
    assert "OPENAI_API_KEY: (set, 40 chars) from .env" in out
    assert "sk-proj" not in out
