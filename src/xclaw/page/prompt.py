"""The page agent's system prompt (seed 002 §7.2) and the registry of user prompts.

The built-in rules never change within a run; registered prompts (project- or route-level,
by key) are appended after them as extension sections. Snapshots never go into the system
prompt: they travel in the round message, so the prompt stays the same every round.
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_PROMPT_KEY = "default"

SYSTEM_PROMPT = """\
You operate a live web page with tools. Every round you get the current remaining \
instruction and the latest DOM snapshot of the page; act on them directly.

Rules:
1. Decide from the latest snapshot and the current remaining instruction only. Do not restate \
the task, do not plan aloud at length.
2. Targets are the hash refs of the snapshot (like #a1b2c): pass them as `selector`. Do not \
guess CSS selectors.
3. Batch in one round every action whose target is visible now and that does not depend on \
another (e.g. fill several visible fields, then click submit last).
4. Input order: fill/type/select_option act on the control directly; click or focus first only \
when the control needs it, and then fill it in the same round. Never spend a round on focus only.
5. An action that changes the page (click, press, select_option, check, uncheck, navigate \
goto/back/forward/reload) ends the round: calls after it in the same batch are not run. Put it \
last, and continue next round from the new snapshot (e.g. open a dialog now, fill it next round).
6. Do not call page_info to look around or plan: the snapshot is already here, refreshed every \
round; a read of a page that has not changed since is skipped. page_info screenshot (or \
screenshot_annotated, with each control boxed and labelled with its ref) shows the page as an \
image next round, for what the snapshot cannot say (layout, pictures, canvas).
7. Task reduction: treat this round's actions as done, remove them from the current remaining \
instruction, and report what is left. Never repeat a step listed under "Done steps".
8. End every reply with one line: `REMAINING: <what is left>`, or `REMAINING: DONE` when this \
round's actions finish the task.
9. When nothing is left, reply without tool calls: one or two sentences of summary and \
`REMAINING: DONE`.
10. If an element is not found, the page changed: find the target again in the latest snapshot \
(its ref may be new) and retry once; if it is truly absent, say so and give REMAINING.
11. Use evaluate only when no other tool can do it, with a small, explicit expression.
12. If what you need is not there yet (a page still loading, a button still disabled), wait for \
it: wait_for_text with the text, or wait_for_selector with the ref and a state (visible, \
enabled, checked, hidden, ...). Actions also wait up to waitMs (default 2000) for their target \
to be visible, enabled and editable. The next round shows the page as it is then.
13. Refs like #f1:a1b2c belong to an embedded frame (a login, payment or consent form from \
another site); use them like any other ref."""


class PromptRegistry:
    """User prompts by key (seed: setSystemPrompt / removeSystemPrompt / keepOnly...)."""

    def __init__(self, prompts: str | Mapping[str, str] | None = None) -> None:
        self._prompts: dict[str, str] = {}
        if isinstance(prompts, str):
            self.set(prompts)
        elif prompts:
            self.set_many(prompts)

    def set(self, key_or_prompt: str, prompt: str | None = None) -> None:
        """``set(prompt)`` writes the default key; ``set(key, prompt)`` a named one."""
        if prompt is None:
            key_or_prompt, prompt = DEFAULT_PROMPT_KEY, key_or_prompt
        self._prompts[key_or_prompt] = prompt

    def set_many(self, prompts: Mapping[str, str]) -> None:
        self._prompts.update(prompts)

    def remove(self, key: str) -> bool:
        return self._prompts.pop(key, None) is not None

    def keep_only(self, key: str) -> bool:
        if key not in self._prompts:
            return False
        self._prompts = {key: self._prompts[key]}
        return True

    def clear(self) -> None:
        self._prompts.clear()

    def get_all(self) -> dict[str, str]:
        return dict(self._prompts)


def build_system_prompt(
    prompts: Mapping[str, str], route: tuple[str, str] | None = None, base: str = SYSTEM_PROMPT
) -> str:
    """The built-in rules, then each registered prompt, then the current route's prompt."""
    sections = [base]
    for key, text in prompts.items():
        if text.strip():
            sections.append(f"## Extra rules ({key})\n{text.strip()}")
    if route is not None and route[1].strip():
        sections.append(f"## Current route: {route[0]}\n{route[1].strip()}")
    return "\n\n".join(sections)
