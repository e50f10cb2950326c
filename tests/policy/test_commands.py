"""Command classification: which program + argv forms ask, and under which narrow rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from xclaw.core.tooling import Risk
from xclaw.policy.commands import (
    arguments_reaching_outside,
    classify_command,
    normalize_program,
)
from xclaw.policy.launchers import launch_chain


def verdict(line: list[str]) -> tuple[str, Risk, str]:
    v = classify_command(line[0], line[1:])
    return v.action, v.risk, v.rule


def asks(line: list[str]) -> bool:
    return classify_command(line[0], line[1:]).action == "ask"


@pytest.mark.parametrize(
    ("program", "name"),
    [
        ("/usr/bin/rm", "rm"),
        ("rm.exe", "rm"),
        ("RM.EXE", "rm"),
        ("C:\\Windows\\System32\\cmd.exe", "cmd"),
        ("./node_modules/.bin/vite", "vite"),
        ("npm.cmd", "npm"),
    ],
)
def test_program_basename_is_normalised(program: str, name: str) -> None:
    assert normalize_program(program) == name


# --- safe commands stay silent ---


@pytest.mark.parametrize(
    "line",
    [
        ["npm", "run", "build"],
        ["npm", "install"],
        ["python3", "build.py"],
        ["python3", "-m", "pytest", "-c", "pytest.ini"],  # -c after -m belongs to pytest
        ["python", "script.py", "-c", "config.yaml"],  # -c after the script is the script's
        ["git", "status"],
        ["git", "-C", "sub", "log", "--oneline"],
        ["git", "-c", "user.name=x", "commit", "-m", "push it"],
        ["git", "config", "user.email", "me@example.com"],
        ["ls", "-la"],
        ["node", "server.js", "-p", "3000"],
        ["bash", "scripts/test.sh"],
        ["chmod", "-x", "run.sh"],
        ["chmod", "755", "run.sh"],
        ["curl", "-sSL", "-o", "out.html", "https://example.com"],
        ["curl", "-X", "GET", "https://example.com"],
        ["wget", "https://example.com/file.tar.gz"],
        ["cargo", "build", "--release"],
        ["docker", "build", "-t", "app", "."],
        ["kubectl", "get", "pods"],
        ["terraform", "plan"],
        ["find", ".", "-name", "*.py", "-exec", "grep", "-l", "x", "{}", ";"],
        ["git", "clean", "-n"],
        ["nice", "-n", "5", "make"],
        ["env", "FOO=1", "pytest"],
        ["command", "-v", "rm"],
        ["vercel", "dev"],
        ["perl", "script.pl"],
    ],
)
def test_safe_commands_are_allowed(line: list[str]) -> None:
    action, risk, _ = verdict(line)
    assert action == "allow"
    assert risk is Risk.EXECUTE


def test_plain_rm_of_named_files_is_a_write() -> None:
    assert verdict(["rm", "file.txt"]) == ("allow", Risk.WRITE, "rm")
    assert verdict(["rm", "--", "-rf"]) == ("allow", Risk.WRITE, "rm")  # a file named -rf


# --- destructive ---


@pytest.mark.parametrize(
    "line",
    [
        ["rm", "-r", "build"],
        ["rm", "-R", "build"],
        ["rm", "-f", "x"],
        ["rm", "-rf", "x"],
        ["rm", "-fr", "x"],
        ["rm", "-vrf", "x"],
        ["rm", "--recursive", "x"],
        ["rm", "--force", "x"],
        ["rm", "--rec", "x"],  # getopt accepts unambiguous prefixes
        ["/usr/bin/rm", "-rf", "/"],
        ["RM.EXE", "-rf", "x"],
    ],
)
def test_recursive_or_forced_rm_asks(line: list[str]) -> None:
    assert verdict(line) == ("ask", Risk.DESTRUCTIVE, "rm")


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["sudo", "ls"], "sudo"),
        (["su", "-"], "su"),
        (["doas", "ls"], "doas"),
        (["pkexec", "ls"], "pkexec"),
        (["runas", "/user:admin", "cmd"], "runas"),
        (["chmod", "-R", "777", "."], "chmod -R"),
        (["chown", "--recursive", "me", "."], "chown -R"),
        (["chgrp", "-vR", "staff", "."], "chgrp -R"),
        (["dd", "if=/dev/zero", "of=disk.img"], "dd"),
        (["mkfs.ext4", "/dev/sdb1"], "mkfs"),
        (["mkfs", "-t", "ext4", "x"], "mkfs"),
        (["shred", "secret"], "shred"),
        (["wipefs", "-a", "/dev/sdb"], "wipefs"),
        (["git", "clean", "-fdx"], "git clean"),
        (["git", "reset", "--hard", "HEAD~1"], "git reset"),
        (["find", ".", "-delete"], "find -delete"),
        (["find", ".", "-exec", "rm", "-rf", "{}", "+"], "rm"),
    ],
)
def test_destructive_commands_ask(line: list[str], rule: str) -> None:
    assert verdict(line) == ("ask", Risk.DESTRUCTIVE, rule)


# --- inline code ---


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["sh", "-c", "make"], "sh -c"),
        (["sh", "-c", "echo $HOME > f"], "sh -c"),
        (["sh", "-c", "echo hi | tee f"], "sh -c"),
        (["sh", "-c", "cat > f <<EOF\nhi\nEOF"], "sh -c"),
        (["sh", "-c", "echo hi > *.txt"], "sh -c"),
        (["bash", "-c", "x"], "bash -c"),
        (["bash", "-lc", "x"], "bash -c"),
        (["bash", "-o", "pipefail", "-c", "x"], "bash -c"),
        (["bash", "+e", "-c", "x"], "bash -c"),
        (["zsh", "-c", "x"], "zsh -c"),
        (["dash", "-c", "x"], "dash -c"),
        (["ksh", "-c", "x"], "ksh -c"),
        (["fish", "-c", "x"], "fish -c"),
        (["fish", "--command=x"], "fish -c"),
        (["python", "-c", "print(1)"], "python -c"),
        (["python3", "-c", "1"], "python -c"),
        (["python3.11", "-c", "1"], "python -c"),
        (["/usr/bin/python3", "-I", "-c", "1"], "python -c"),
        (["python3", "-W", "ignore", "-c", "1"], "python -c"),
        (["python3", "-Bc", "1"], "python -c"),
        (["node", "-e", "1"], "node -e"),
        (["node", "--eval", "1"], "node -e"),
        (["node", "--eval=1"], "node -e"),
        (["node", "-p", "1"], "node -e"),
        (["node", "--print", "1"], "node -e"),
        (["node", "-pe", "1"], "node -e"),
        (["node", "-r", "ts-node/register", "-e", "1"], "node -e"),
        (["deno", "eval", "1"], "deno eval"),
        (["bun", "-e", "1"], "bun -e"),
        (["bun", "--print", "1"], "bun -e"),
        (["perl", "-e", "1"], "perl -e"),
        (["perl", "-E", "say 1"], "perl -e"),
        (["perl", "-lne", "print"], "perl -e"),
        (["perl", "-I", "lib", "-e", "1"], "perl -e"),
        (["perl", "-MData::Dumper", "-e", "1"], "perl -e"),
        (["ruby", "-e", "1"], "ruby -e"),
        (["ruby", "-r", "json", "-e", "1"], "ruby -e"),
        (["php", "-r", "echo 1;"], "php -r"),
        (["pwsh", "-c", "Get-Process"], "pwsh -c"),
        (["pwsh", "-Command", "x"], "pwsh -c"),
        (["powershell.exe", "-NoProfile", "-EncodedCommand", "AAAA"], "pwsh -c"),
        (["powershell", "Remove-Item", "x"], "pwsh -c"),
        (["cmd", "/c", "del", "x"], "cmd"),
        (["cmd.exe", "/C", "dir"], "cmd"),
        (["cmd"], "cmd"),
        (["npx", "-c", "rm -rf x"], "npx -c"),
        (["git", "submodule", "foreach", "rm -rf x"], "git submodule foreach"),
        (["git", "rebase", "-x", "make", "main"], "git rebase --exec"),
        (["git", "-c", "core.pager=sh -c x", "log"], "git -c"),
        (["git", "-c", "alias.p=!rm -rf x", "p"], "git -c"),
        (["git", "config", "alias.p", "!rm -rf x"], "git -c"),
        (["git", "config", "--local", "core.hooksPath", "hooks"], "git -c"),
    ],
)
def test_inline_code_asks(line: list[str], rule: str) -> None:
    v = classify_command(line[0], line[1:])
    assert (v.action, v.risk, v.rule) == ("ask", Risk.DESTRUCTIVE, rule)
    assert v.reason


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["bash"], "bash -c"),
        (["sh", "-s", "arg"], "sh -c"),
        (["bash", "-i"], "bash -c"),
        (["python3"], "python -c"),
        (["python3", "-"], "python -c"),
        (["python3", "-u"], "python -c"),
        (["python3", "-i", "x.py"], "python -c"),
        (["node"], "node -e"),
        (["node", "-"], "node -e"),
        (["perl"], "perl -e"),
        (["ruby"], "ruby -e"),
        (["deno"], "deno eval"),
        (["deno", "run", "-"], "deno eval"),
        (["pwsh"], "pwsh -c"),
        (["pwsh", "-NoProfile"], "pwsh -c"),
        (["env", "python3"], "python -c"),
    ],
)
def test_interpreter_reading_code_from_stdin_asks(line: list[str], rule: str) -> None:
    v = classify_command(line[0], line[1:])
    assert (v.action, v.rule) == ("ask", rule)
    assert "standard input" in v.reason or "inline" in v.reason


@pytest.mark.parametrize(
    "line",
    [
        ["python3", "--version"],
        ["python3", "-V"],
        ["node", "-v"],
        ["bash", "--version"],
        ["perl", "-v"],
        ["deno", "--version"],
        ["pwsh", "-Version"],
    ],
)
def test_interpreter_version_queries_are_allowed(line: list[str]) -> None:
    assert not asks(line)


def test_pwsh_running_a_script_file_is_allowed() -> None:
    assert not asks(["pwsh", "-File", "build.ps1"])
    assert not asks(["pwsh", "build.ps1"])
    assert not asks(["pwsh", "-NoProfile", "/work/x/build.ps1", "-Target", "ci"])
    assert not asks(["pwsh", "-ExecutionPolicy", "Bypass", "-File", "b.ps1"])
    assert asks(["pwsh", "-ExecutionPolicy", "Bypass", "b.ps1"])


# --- wrappers ---


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["env", "FOO=1", "rm", "-rf", "x"], "rm"),
        (["env", "-i", "FOO=1", "BAR=2", "rm", "-rf", "x"], "rm"),
        (["env", "-u", "HOME", "rm", "-rf", "x"], "rm"),
        (["env", "-", "rm", "-rf", "x"], "rm"),
        (["env", "--", "rm", "-rf", "x"], "rm"),
        (["env", "-S", "rm -rf x"], "rm"),
        (["env", "--split-string=bash -c x"], "bash -c"),
        (["/usr/bin/env", "python3", "-c", "1"], "python -c"),
        (["nice", "-n", "5", "bash", "-c", "x"], "bash -c"),
        (["nice", "-5", "rm", "-rf", "x"], "rm"),
        (["nice", "--adjustment=5", "sudo", "ls"], "sudo"),
        (["timeout", "5", "sudo", "ls"], "sudo"),
        (["timeout", "-s", "KILL", "-k", "1", "5s", "rm", "-rf", "x"], "rm"),
        (["timeout", "--signal=TERM", "5", "python3", "-c", "1"], "python -c"),
        (["nohup", "rm", "-rf", "x"], "rm"),
        (["xargs", "rm", "-rf"], "rm"),
        (["xargs", "-0", "-n", "1", "rm", "-rf"], "rm"),
        (["command", "rm", "-rf", "x"], "rm"),
        (["exec", "-a", "name", "rm", "-rf", "x"], "rm"),
        (["time", "-o", "t.txt", "rm", "-rf", "x"], "rm"),
        (["stdbuf", "-oL", "bash", "-c", "x"], "bash -c"),
        (["ionice", "-c", "3", "rm", "-rf", "x"], "rm"),
        (["setsid", "-f", "sudo", "x"], "sudo"),
        (["busybox", "sh", "-c", "x"], "sh -c"),
        (["env", "nice", "timeout", "5", "nohup", "rm", "-rf", "x"], "rm"),
        (["npx", "-y", "vercel", "--prod"], "vercel"),
    ],
)
def test_wrappers_are_unwrapped(line: list[str], rule: str) -> None:
    v = classify_command(line[0], line[1:])
    assert v.action == "ask"
    assert v.rule == rule


def test_wrapped_safe_command_is_allowed() -> None:
    assert not asks(["timeout", "60", "npm", "test"])
    assert not asks(["env", "CI=1", "NODE_ENV=test", "npm", "test"])
    assert not asks(["xargs", "-0", "grep", "-l", "x"])
    assert not asks(["nice"])
    assert not asks(["env"])


def test_code_running_environment_variables_ask() -> None:
    v = classify_command("env", ["GIT_SSH_COMMAND=sh -c x", "git", "fetch"])
    assert (v.action, v.rule) == ("ask", "env GIT_SSH_COMMAND")
    assert asks(["env", "LD_PRELOAD=./x.so", "ls"])


def test_deep_wrapper_nesting_asks() -> None:
    assert asks(["nohup"] * 20 + ["ls"])


# --- external ---


@pytest.mark.parametrize(
    "line",
    [
        ["git", "push"],
        ["git", "push", "origin", "main", "--force"],
        ["git", "-C", "sub", "push"],
        ["git", "-c", "user.name=x", "push"],
        ["git", "--git-dir=.git", "push"],
        ["git", "--git-dir", ".git", "--work-tree", ".", "push"],
        ["git", "--no-pager", "-p", "push"],
        ["/usr/bin/git", "push"],
        ["git.exe", "push"],
        ["env", "GIT_TRACE=1", "git", "push"],
    ],
)
def test_git_push_with_any_global_options_asks(line: list[str]) -> None:
    assert verdict(line) == ("ask", Risk.EXTERNAL, "git push")


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["npm", "publish"], "npm publish"),
        (["npm", "--registry", "https://r.example", "publish"], "npm publish"),
        (["yarn", "publish"], "yarn publish"),
        (["yarn", "npm", "publish"], "yarn npm publish"),
        (["pnpm", "publish", "--access", "public"], "pnpm publish"),
        (["twine", "upload", "dist/*"], "twine upload"),
        (["cargo", "publish"], "cargo publish"),
        (["gem", "push", "x.gem"], "gem push"),
        (["poetry", "publish", "--build"], "poetry publish"),
        (["uv", "publish"], "uv publish"),
        (["docker", "push", "me/app"], "docker push"),
        (["docker", "image", "push", "me/app"], "docker image push"),
        (["gh", "release", "create", "v1"], "gh release create"),
        (["vercel"], "vercel"),
        (["vercel", "deploy", "--prod"], "vercel"),
        (["netlify", "deploy", "--prod"], "netlify deploy"),
        (["fly", "deploy"], "fly deploy"),
        (["flyctl", "deploy"], "fly deploy"),
        (["kubectl", "apply", "-f", "k8s.yaml"], "kubectl apply"),
        (["kubectl", "delete", "pod", "x"], "kubectl delete"),
        (["terraform", "apply"], "terraform apply"),
        (["terraform", "destroy", "-auto-approve"], "terraform destroy"),
        (["ssh", "host", "ls"], "ssh"),
    ],
)
def test_publish_and_deploy_ask_external(line: list[str], rule: str) -> None:
    assert verdict(line) == ("ask", Risk.EXTERNAL, rule)


def test_cargo_run_arguments_after_dashdash_are_not_subcommands() -> None:
    assert not asks(["cargo", "run", "--", "publish"])


# --- uploads ---


@pytest.mark.parametrize(
    "line",
    [
        ["curl", "-T", "f", "https://x"],
        ["curl", "--upload-file", "f", "https://x"],
        ["curl", "-d", "a=1", "https://x"],
        ["curl", "-sd", "a=1", "https://x"],
        ["curl", "--data", "a=1", "https://x"],
        ["curl", "--data-binary", "@f", "https://x"],
        ["curl", "--data-urlencode", "a=1", "https://x"],
        ["curl", "-F", "f=@x", "https://x"],
        ["curl", "--json", "{}", "https://x"],
        ["curl", "-X", "POST", "https://x"],
        ["curl", "-XPUT", "https://x"],
        ["curl", "--request", "delete", "https://x"],
        ["curl", "--request=PATCH", "https://x"],
        ["wget", "--post-data=a=1", "https://x"],
        ["wget", "--method=PUT", "https://x"],
        ["wget", "--method", "DELETE", "https://x"],
    ],
)
def test_uploads_ask_sensitive(line: list[str]) -> None:
    action, risk, rule = verdict(line)
    assert (action, risk) == ("ask", Risk.SENSITIVE)
    assert rule == line[0]


# --- arguments reaching outside the root ---


def test_arguments_reaching_outside(root: Path, tmp_path: Path) -> None:
    (root / "src").mkdir()
    assert arguments_reaching_outside(["-la", "src", "./src", "src/../src"], root) == []
    out = arguments_reaching_outside(
        ["cat", "/etc/hostname", "../sibling", "--out=/tmp/x", "~/notes", "/dev/null"], root
    )
    assert out == ["/etc/hostname", "../sibling", "--out=/tmp/x", "~/notes"]
    # The root's own absolute path is inside.
    assert arguments_reaching_outside([str(root / "src")], root) == []


def test_redirect_like_arguments_reaching_outside(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    words = [f"@{other}/args", f"-d@{other}/body", f"f=<{other}/x", f"file://{other}/x"]
    assert arguments_reaching_outside(words, root) == words
    (root / "args.txt").write_text("-O2\n")
    inside = ["@args.txt", "@types/node", "-F", "f=@args.txt", f"file://{root}/args.txt"]
    assert arguments_reaching_outside(inside, root) == []
    assert arguments_reaching_outside(["file://[broken"], root) == []


# --- what find and xargs run once per file ---


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (["find", ".", "-name", "*.tmp", "-exec", "rm", "{}", "+"], "rm"),
        (["find", ".", "-execdir", "rm", "{}", ";"], "rm"),
        (["find", ".", "-ok", "rm", "{}", ";"], "rm"),
        (["find", ".", "-exec", "/bin/rm", "--", "{}", "+"], "rm"),
        (["find", ".", "-exec", "unlink", "{}", ";"], "unlink"),
        (["find", ".", "-exec", "nice", "rm", "{}", "+"], "rm"),
        (["xargs", "rm"], "rm"),
        (["xargs", "-0", "rm", "--"], "rm"),
        (["nice", "xargs", "-n1", "rm"], "rm"),
        (["timeout", "5", "xargs", "rm"], "rm"),
        (["find", ".", "-exec", "xargs", "rm", ";"], "rm"),
        (["find", ".", "-exec", "sh", "-c", 'echo "$1"', "_", "{}", ";"], "sh -c"),
        (["find", ".", "-execdir", "bash", "-c", "mv $0 $0.bak", "{}", ";"], "bash -c"),
        (["xargs", "sh", "-c", "cat"], "sh -c"),
        (["xargs", "-I{}", "python3", "-c", "print('{}')"], "python -c"),
        (["xargs", "env"], "env"),  # the program to run comes from the input
    ],
)
def test_programs_run_once_per_file_ask_like_rm_rf(line: list[str], rule: str) -> None:
    v = classify_command(line[0], line[1:])
    # Not "code a sandbox contains": every file given is at stake, so it asks in every mode.
    assert (v.action, v.risk, v.rule, v.runs_code) == ("ask", Risk.DESTRUCTIVE, rule, False)


@pytest.mark.parametrize(
    "line",
    [
        ["find", ".", "-name", "*.py", "-exec", "grep", "-l", "x", "{}", "+"],
        ["find", ".", "-type", "f", "-exec", "sha256sum", "{}", ";"],
        ["find", ".", "-exec", "ls", "-l", "{}", ";"],
        ["xargs", "-0", "wc", "-l"],
        ["xargs"],
        ["find", ".", "-name", "*.tmp"],
    ],
)
def test_reading_per_file_is_allowed(line: list[str]) -> None:
    assert not asks(line)


def test_find_with_several_asking_actions_names_no_single_rule() -> None:
    v = classify_command("find", [".", "-exec", "rm", "{}", "+", "-exec", "sh", "-c", "x", ";"])
    assert (v.action, v.risk, v.rule) == ("ask", Risk.DESTRUCTIVE, "find -exec")
    assert "rm" in v.reason and "sh -c" in v.reason
    v = classify_command("find", [".", "-delete", "-exec", "sh", "-c", "x", ";"])
    assert (v.action, v.rule) == ("ask", "find -exec")


# --- known forms inside shell code ---


@pytest.mark.parametrize(
    ("line", "rule", "risk"),
    [
        (["sh", "-c", "make && rm -rf build"], "sh -c", Risk.DESTRUCTIVE),
        (["bash", "-ec", "cd web; npm publish"], "bash -c", Risk.EXTERNAL),
        (["bash", "-c", "git push origin main"], "bash -c", Risk.EXTERNAL),
        (["sh", "-c", "FOO=1 sudo make install"], "sh -c", Risk.DESTRUCTIVE),
        (["bash", "-c", "if true; then rm -r x; fi"], "bash -c", Risk.DESTRUCTIVE),
        (["sh", "-c", "ls *.log | xargs rm"], "sh -c", Risk.DESTRUCTIVE),
        (["zsh", "-c", "find . -delete"], "zsh -c", Risk.DESTRUCTIVE),
        (["sh", "-c", "rm -rf $(cat list) 2>/dev/null"], "sh -c", Risk.DESTRUCTIVE),
        (["env", "bash", "-c", "(cd x && rm -rf y)"], "bash -c", Risk.DESTRUCTIVE),
        (["sh", "-c", "sh -c 'rm -rf x'"], "sh -c", Risk.DESTRUCTIVE),
    ],
)
def test_known_forms_inside_shell_code_ask_outside_the_sandbox_too(
    line: list[str], rule: str, risk: Risk
) -> None:
    v = classify_command(line[0], line[1:])
    # The shell's rule, so granting "rm" alone never lets the rest of the code run.
    assert (v.action, v.risk, v.rule, v.runs_code) == ("ask", risk, rule, False)
    assert "in inline code" in v.reason


@pytest.mark.parametrize(
    "script",
    [
        "make && ./a.out",
        "for f in *.txt; do wc -l $f; done",
        "echo 'rm -rf x'",  # quoted: an argument of echo, no command
        "echo 'unclosed",
        "rm build/out.o",
    ],
)
def test_ordinary_shell_code_stays_code_a_sandbox_contains(script: str) -> None:
    v = classify_command("bash", ["-c", script])
    assert (v.action, v.rule, v.runs_code) == ("ask", "bash -c", True)


def test_launch_chain_finds_each_program_and_where_it_is_written() -> None:
    chain = launch_chain("env", ["A=1", "nice", "-n", "5", "./x", "arg"])
    assert [(layer.word, layer.at, layer.many) for layer in chain] == [
        ("env", None, False),
        ("nice", 1, False),
        ("./x", 4, False),
    ]
    chain = launch_chain("find", [".", "-exec", "./t", "{}", ";"])
    assert [(layer.word, layer.at, layer.many) for layer in chain] == [
        ("find", None, False),
        ("./t", 2, True),
    ]
    chain = launch_chain("env", ["-S", "A=1 ./y z"])
    assert [(layer.word, layer.at) for layer in chain] == [
        ("env", None),
        ("env", None),
        ("./y", None),
    ]
    assert chain[-1].args == ["z"]


# --- inline code that hides nothing: labelled by what it does ---


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("echo hi > notes.txt", "writes notes.txt"),
        ("echo a >> a.txt 2>/dev/null; cat a.txt > 'b c.txt'", "writes a.txt, b c.txt"),
        ("printf x &> out.log", "writes out.log"),
        ("echo hi", "running read-only commands only"),
        ("ls -la && echo done >&2", "running read-only commands only"),
    ],
)
def test_plain_inline_code_asks_for_what_it_does(script: str, says: str) -> None:
    """`sh -c 'echo hi > notes.txt'` still asks (the same rule, the same grant; a sandbox
    still contains it), as running a command that writes that file, not as destructive."""
    v = classify_command("sh", ["-c", script])
    assert (v.action, v.risk, v.rule, v.runs_code) == ("ask", Risk.EXECUTE, "sh -c", True)
    assert says in v.reason and "sh -c" in v.reason


@pytest.mark.parametrize(
    "script",
    [
        "echo $(id) > f",  # a substitution runs code
        "echo `id` > f",
        "echo hi > $HOME/f",  # an expansion: the target is not visible
        "echo hi > ~/f",
        "cat <<EOF > f\nx\nEOF",  # a here-document
        "echo hi > >(sh)",  # a process substitution
        "echo hi | sh",  # not a reader
        "echo \\$x > f",
        "echo hi >",  # a redirection without its target
        "touch f",
    ],
)
def test_inline_code_that_could_hide_anything_stays_destructive(script: str) -> None:
    v = classify_command("sh", ["-c", script])
    assert (v.action, v.risk) == ("ask", Risk.DESTRUCTIVE), script


def test_plain_inline_code_under_xargs_is_still_a_bulk_action() -> None:
    v = classify_command("xargs", ["sh", "-c", "echo hi > f"])
    assert (v.action, v.risk) == ("ask", Risk.DESTRUCTIVE)


def test_the_engine_names_the_write_and_a_sandbox_contains_it(root: Path) -> None:
    from test_command_paths import Calls

    host = Calls(root, host=True).decide("sh", "-c", "echo hi > notes.txt")
    # host mode: a command no sandbox contains, which writes notes.txt; "allow for task"
    # grants the same rule as before ("sh -c"), so the next such call does not ask again
    assert (host.action, host.risk) == ("ask", Risk.EXECUTE)
    assert "writes notes.txt" in host.reason
    assert host.grant is not None and host.grant.value == "sh -c"
    assert Calls(root, host=False).decide("sh", "-c", "echo hi > notes.txt").action == "allow"
