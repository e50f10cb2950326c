"""The review endpoints over real HTTP: rollback and fork (as the CLI does them, refused while
a turn runs), change jobs shown, applied and reverted in a real git repository with the
patch engine's hash checks, the session timeline that rebuilds tool cards, and auth on each."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_support import AUTH, client, exec_turn, send, serving, until
from typer.testing import CliRunner

from xclaw.cli.app import app as cli
from xclaw.models.scripted import ScriptedModel
from xclaw.patch import JobStore, PatchJob, Target
from xclaw.patch.job import sha256
from xclaw.sandbox.host import HostSandbox
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(60)

FOREIGN = {**AUTH, "Origin": "http://evil.example"}
READ = {
    "text": "Reading it.",
    "tool_calls": [{"id": "call_r", "name": "fs.read", "arguments": {"path": "notes.txt"}}],
}
ORIGINAL = "def greet():\n    return 'hello'\n"
CHANGED = "def greet():\n    return 'hi'\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        env={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin"},
    )


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text(ORIGINAL)
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "init")


async def make_job(root: Path) -> str:
    """A real change job (the patch engine on a scripted model), waiting for review."""
    edit = {"id": "w1", "name": "replace_text", "arguments": {}}
    edit["arguments"] = {"path": "app.py", "oldText": "'hello'", "newText": "'hi'"}
    job = PatchJob(
        ScriptedModel([{"tool_calls": [edit]}, "Done: greet says hi."]),
        root,
        (Target(1, "app.py", "say hi instead of hello", line=2),),
        sandbox=HostSandbox(),
    )
    record = await job.run()
    assert record.status == "review", record.reason
    return record.spec.job_id


async def recorded_session(server: Any) -> str:
    """A finished web session with a read tool call: steps user_input, llm, tool, llm."""
    ws, sid = await client(server)
    await send(ws, type="message", content="read the notes")
    await until(ws, "reply")
    await ws.close()
    return sid


def steps_of(sid: str) -> list[tuple[str, str, str]]:
    return [(s.step_id, s.kind, s.name) for s in open_store().list_steps(sid)]


def items_of(sid: str) -> list[dict[str, Any]]:
    return [i.payload for i in open_store().load_items(sid)]


async def test_timeline_holds_tool_cards(root: Path) -> None:
    (root / "notes.txt").write_text("the notes say 42\n")
    with serving(root, [READ, "They say 42."]) as server:
        sid = await recorded_session(server)
        async with httpx.AsyncClient() as http:
            got = await http.get(f"{server.url}/api/sessions/{sid}", headers=AUTH)
        detail = got.json()
    kinds = [(e["kind"], e.get("role") or e.get("name")) for e in detail["timeline"]]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("tool", "fs.read"),
        ("message", "assistant"),
    ]
    tool = detail["timeline"][2]
    assert tool["callId"] == "call_r" and tool["arguments"] == {"path": "notes.txt"}
    assert tool["result"]["ok"] is True
    assert "the notes say 42" in str(tool["result"])
    assert detail["timeline"][0]["text"] == "read the notes"  # not the task wrapper


async def test_fork_and_rollback_match_the_cli(root: Path) -> None:
    (root / "notes.txt").write_text("n\n")
    with serving(root, [READ, "ok"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            sid = await recorded_session(server)
            steps = steps_of(sid)
            assert len(steps) >= 4, steps
            at = steps[2][0]  # the tool call step

            # fork: the web and the CLI copy the same history
            r = await http.post(f"/api/sessions/{sid}/fork", json={"step": at}, headers=AUTH)
            assert r.status_code == 200, r.text
            web_fork = r.json()["sessionId"]
            assert r.json()["parentId"] == sid and web_fork != sid
            out = CliRunner().invoke(cli, ["fork", sid, at])
            assert out.exit_code == 0, out.output
            found = re.search(r"into (\S+)", out.output)
            assert found
            cli_fork = found.group(1)
            assert steps_of(web_fork) == steps_of(cli_fork) == steps[:3]
            assert items_of(web_fork) == items_of(cli_fork)
            record = open_store().get_session(web_fork)
            assert record is not None and record.parent_id == sid and record.root == str(root)
            listed = (await http.get("/api/sessions", headers=AUTH)).json()
            assert web_fork in [s["id"] for s in listed]

            # rollback: two identical copies, one rewound by the web, one by the CLI
            last = steps[-1][0]
            store = open_store()
            a, b = store.fork(sid, last, "copy-a").id, store.fork(sid, last, "copy-b").id
            r = await http.post(f"/api/sessions/{a}/rollback", json={"step": at}, headers=AUTH)
            assert r.status_code == 200, r.text
            web = r.json()
            out = CliRunner().invoke(cli, ["rollback", b, at])
            assert out.exit_code == 0, out.output
            removed = f"removed {web['removedSteps']} steps and {web['removedItems']} transcript"
            assert removed in out.output
            assert web["removedSteps"] == len(steps) - 2
            assert steps_of(a) == steps_of(b) == steps[:2]
            assert items_of(a) == items_of(b)
            state = open_store().get_session(a)
            assert state is not None and state.state == "paused"

            # refusals: structured, and nothing changed
            bad = await http.post(f"/api/sessions/{sid}/fork", json={"step": "s9999"}, headers=AUTH)
            assert bad.status_code == 404 and bad.json()["code"] == "STEP_NOT_FOUND"
            assert bad.json()["next"]
            for body in ({"step": "../s1"}, {"step": 3}, {}, {"step": "s1", "x": 1}):
                r = await http.post(f"/api/sessions/{sid}/rollback", json=body, headers=AUTH)
                assert r.status_code == 400, body
                assert r.json()["code"] in ("INVALID_REQUEST", "STEP_ID_INVALID")
            for bad_id in ("a.b", "-x", "x" * 120):
                r = await http.post(
                    f"/api/sessions/{bad_id}/rollback", json={"step": at}, headers=AUTH
                )
                assert r.status_code == 404 and r.json()["code"] == "SESSION_NOT_FOUND", bad_id
            # an encoded slash is decoded before routing: no route, nothing done
            r = await http.post("/api/sessions/..%2Fetc/rollback", json={"step": at}, headers=AUTH)
            assert r.status_code in (404, 405)
            assert steps_of(sid) == steps


async def test_a_running_session_refuses_rollback_and_fork(root: Path) -> None:
    with serving(root, [exec_turn("x"), "done"], approval_timeout=30) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            ws, sid = await client(server)
            await send(ws, type="message", content="run it")
            frames = await until(ws, "approval.request")  # the turn waits: it runs
            before = steps_of(sid)
            for action in ("rollback", "fork"):
                r = await http.post(
                    f"/api/sessions/{sid}/{action}", json={"step": "s0001"}, headers=AUTH
                )
                assert r.status_code == 409, r.text
                assert r.json()["code"] == "SESSION_RUNNING"
                assert "Stop" in r.json()["next"]
            assert steps_of(sid) == before
            request_id = frames[-1]["requestId"]
            await send(ws, type="approval.response", requestId=request_id, answer="deny")
            await until(ws, "reply")
            r = await http.post(f"/api/sessions/{sid}/fork", json={"step": "s0001"}, headers=AUTH)
            assert r.status_code == 200, r.text  # the turn is over: allowed now
            await ws.close()


async def test_a_change_job_is_shown_applied_and_reverted(root: Path) -> None:
    make_repo(root)
    job_id = await make_job(root)
    target = root / "app.py"
    with serving(root, ["x"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            jobs = (await http.get("/api/jobs", headers=AUTH)).json()
            assert [j["id"] for j in jobs] == [job_id] and jobs[0]["status"] == "review"
            detail = (await http.get(f"/api/jobs/{job_id}", headers=AUTH)).json()
            assert "-    return 'hello'" in detail["diff"] and "+    return 'hi'" in detail["diff"]
            (state,) = detail["fileStates"]
            assert state["path"] == "app.py" and state["holds"] == "baseline"
            assert state["baseline"] == state["current"] == sha256(ORIGINAL.encode())
            assert state["result"] == sha256(CHANGED.encode())

            r = await http.post(f"/api/jobs/{job_id}/apply", headers=AUTH)
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "applied"
            assert target.read_text() == CHANGED
            assert r.json()["fileStates"][0]["holds"] == "result"
            assert JobStore().load(job_id).status == "applied"
            again = await http.post(f"/api/jobs/{job_id}/apply", headers=AUTH)
            assert again.status_code == 409 and again.json()["code"] == "PATCH_JOB_STATE"

            # fail closed as the CLI does: the file was edited meanwhile, revert writes nothing
            target.write_text(CHANGED + "# mine\n")
            r = await http.post(f"/api/jobs/{job_id}/revert", headers=AUTH)
            assert r.status_code == 409 and r.json()["code"] == "PATCH_CONFLICT", r.text
            assert r.json()["message"] and r.json()["next"]
            assert target.read_text() == CHANGED + "# mine\n"
            assert JobStore().load(job_id).status == "applied"

            target.write_text(CHANGED)
            r = await http.post(f"/api/jobs/{job_id}/revert", headers=AUTH)
            assert r.status_code == 200 and r.json()["status"] == "reverted", r.text
            assert target.read_text() == ORIGINAL
            assert JobStore().load(job_id).status == "reverted"

            for bad in ("ZZZ", "-1", "a" * 80, f"{job_id}.json"):
                r = await http.get(f"/api/jobs/{bad}", headers=AUTH)
                assert r.status_code == 404 and r.json()["code"] == "JOB_NOT_FOUND", bad
                assert (await http.post(f"/api/jobs/{bad}/apply", headers=AUTH)).status_code == 404
            r = await http.post("/api/jobs/..%2F..%2Fjobs/apply", headers=AUTH)  # decoded: no route
            assert r.status_code in (404, 405)


async def test_a_tampered_job_record_is_refused_not_applied(root: Path) -> None:
    make_repo(root)
    job_id = await make_job(root)
    path = JobStore().jobs / f"{job_id}.json"
    stored = json.loads(path.read_text())
    record = stored.get("record", stored)
    record["diff"] += "+    import os; os.system('x')\n"  # a hunk added behind the job's back
    path.write_text(json.dumps(stored))
    with serving(root, ["x"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post(f"/api/jobs/{job_id}/apply", headers=AUTH)
            assert r.status_code == 409 and r.json()["code"] == "PATCH_RECORD_TAMPERED", r.text
    assert (root / "app.py").read_text() == ORIGINAL


async def test_jobs_of_other_projects_are_not_shown(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    make_repo(other)
    job_id = await make_job(other)
    with serving(root, ["x"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.get("/api/jobs", headers=AUTH)).json() == []
            r = await http.get(f"/api/jobs/{job_id}", headers=AUTH)
            assert r.status_code == 404 and r.json()["code"] == "JOB_NOT_FOUND"
            assert (await http.post(f"/api/jobs/{job_id}/apply", headers=AUTH)).status_code == 404
    assert (other / "app.py").read_text() == ORIGINAL


async def test_every_review_endpoint_needs_auth_and_our_origin(root: Path) -> None:
    make_repo(root)
    job_id = await make_job(root)
    with serving(root, ["hello"]) as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            sid = await recorded_session(server)
            before = steps_of(sid)
            gets = ["/api/jobs", f"/api/jobs/{job_id}"]
            posts = [
                f"/api/sessions/{sid}/rollback",
                f"/api/sessions/{sid}/fork",
                f"/api/jobs/{job_id}/apply",
                f"/api/jobs/{job_id}/revert",
            ]
            body = {"step": "s0001"}
            for path in gets:
                assert (await http.get(path)).status_code == 401, path
                wrong = await http.get(path, headers={"Authorization": "Bearer wrong"})
                assert wrong.status_code == 401, path
                assert (await http.get(path, headers=FOREIGN)).status_code == 403, path
            for path in posts:
                for headers, status in (({}, 401), (FOREIGN, 403)):
                    r = await http.post(path, json=body, headers=headers)
                    assert r.status_code == status, (path, r.text)
                    assert r.json() == {"error": status}  # nothing else
            # the browser cookie: a state change needs our Origin with it (no cross-site form)
            assert (await http.post("/auth/session", headers=AUTH)).status_code == 204
            assert (await http.get("/api/jobs")).status_code == 200  # a read: the cookie is enough
            for path in posts:
                assert (await http.post(path, json=body)).status_code == 401, path
                foreign = await http.post(
                    path, json=body, headers={"Origin": "http://evil.example"}
                )
                assert foreign.status_code == 403, path
            assert steps_of(sid) == before and JobStore().load(job_id).status == "review"
            assert (root / "app.py").read_text() == ORIGINAL
            own = {"Origin": server.url}
            r = await http.post(f"/api/sessions/{sid}/fork", json=body, headers=own)
            assert r.status_code == 200, r.text
