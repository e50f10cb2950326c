"""The code blocks of the documentation (README.md, CONTRIBUTING.md, docs/*.md) and their marks.

A block runs as written unless the line above it (blank lines aside) marks it:

- ``<!-- not run: reason -->``: it cannot run here (a real key, a network, a window, a
  long-running server in the foreground); the reason is required;
- ``<!-- run with: NAME -->``: it runs, in an environment the tests provide under that name
  (a local fake behind the model it names, a bridge it talks to, a Playwright page, a session
  its ``ID`` stands for). ``tests/test_docs.py`` holds most of them; ``ELSEWHERE`` names the
  ones that need Chromium, which run with the browser tests.

The reader sees a plain block either way: a mark is an HTML comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")],
    key=lambda p: str(p),
)
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
RUN_WITH = re.compile(r"^<!--\s*run with:\s*([\w-]+)\s*-->$")
FENCE = re.compile(r"^(`{3,})(\w*)\s*$")
SHELL = ("bash", "sh", "shell")  # blocks run by bash; console blocks are transcripts

# Environments that need a real Chromium: they run with the page tests, not in test_docs.py.
ELSEWHERE = {
    "ticket-page": "tests/page/test_docs_examples.py",
    "fake-deepseek-page": "tests/page/test_docs_examples.py",
}


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    not_run: str | None  # the reason, when marked
    run_with: str | None = None  # the environment it runs in, when marked

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        previous = next((x.strip() for x in reversed(lines[:start]) if x.strip()), "")
        not_run, run_with = NOT_RUN.match(previous), RUN_WITH.match(previous)
        found.append(
            Block(
                path,
                start + 1,
                lang,
                "\n".join(body) + "\n",
                not_run[1] if not_run else None,
                run_with[1] if run_with else None,
            )
        )
        i += 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in DOC_FILES for b in blocks(path)]


def marked(name: str) -> list[Block]:
    """The blocks that run in the environment ``name``."""
    return [b for b in all_blocks() if b.run_with == name]


def substitute(code: str, words: dict[str, str]) -> str:
    """``code`` with each placeholder word (``ID``, a default port) replaced, whole words only."""
    for word, value in words.items():
        pattern = rf"(?<![\w-]){re.escape(word)}(?![\w-])"
        code = re.sub(pattern, lambda _, v=value: v, code)
    return code
