"""The Changes view in real headless Chromium: a real change job (the patch engine on a
scripted model, in a real git repository) is listed, its diff shown line by line as text,
applied from the page (the file changes on disk, hashes verified), then reverted."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect
from test_review import CHANGED, ORIGINAL, make_job, make_repo
from test_web_ui import APPROVED, TOKEN, chromium, log_in, serving

from xclaw.patch import JobStore

pytestmark = pytest.mark.timeout(120)


async def test_review_and_apply_a_change_job(root: Path) -> None:
    make_repo(root)
    job_id = await make_job(root)
    target = root / "app.py"
    async with serving(root, APPROVED) as gw, chromium() as browser:
        page = await browser.new_page()
        await log_in(page, gw, TOKEN)
        await expect(page.locator("#chat-view")).to_be_visible()
        await page.locator("#open-changes").click()
        await expect(page.locator("#messages")).to_be_hidden()
        item = page.locator(f'.job-item[data-job-id="{job_id}"]')
        await expect(item).to_contain_text("review")
        await item.click()

        detail = page.locator("#job-detail")
        await expect(detail).to_have_attribute("data-status", "review")
        await expect(page.locator(".diff-del")).to_have_text("-    return 'hello'\n")
        await expect(page.locator(".diff-add")).to_have_text("+    return 'hi'\n")
        await expect(page.locator(".diff-hunk")).to_have_count(1)
        lines = len(JobStore().load(job_id).diff.splitlines())
        await expect(page.locator("#job-diff span.diff-line")).to_have_count(lines)
        await expect(page.locator("#job-diff *")).to_have_count(lines)  # text only, no markup
        await expect(page.locator(".job-file")).to_contain_text("app.py")
        await expect(page.locator(".job-file")).to_contain_text("holds the original")
        await expect(page.locator("#job-revert")).to_be_disabled()
        assert target.read_text() == ORIGINAL  # nothing written before Apply

        await page.locator("#job-apply").click()
        await expect(page.locator("#job-result")).to_contain_text("Applied: app.py")
        await expect(detail).to_have_attribute("data-status", "applied")
        await expect(page.locator(".job-file")).to_contain_text("holds the job's result")
        assert target.read_text() == CHANGED
        assert JobStore().load(job_id).status == "applied"
        await expect(item).to_contain_text("applied")

        # edited meanwhile: the revert is refused and says why; the file keeps the edit
        target.write_text(CHANGED + "# mine\n")
        await page.locator("#job-revert").click()
        await expect(page.locator("#job-result")).to_contain_text("PATCH_CONFLICT")
        await expect(page.locator("#job-result")).to_have_class("job-result error")
        assert target.read_text() == CHANGED + "# mine\n"

        target.write_text(CHANGED)
        await page.locator("#job-revert").click()
        await expect(page.locator("#job-result")).to_contain_text("Reverted: app.py")
        await expect(detail).to_have_attribute("data-status", "reverted")
        assert target.read_text() == ORIGINAL

        await page.locator("#close-changes").click()
        await expect(page.locator("#composer-input")).to_be_visible()
