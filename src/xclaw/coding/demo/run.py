"""``xclaw demo``: the seed 000 §14.4 scenario, driven by a ScriptedModel, no key needed."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Literal

from xclaw.coding.agent import Agent
from xclaw.core.events import EventBus
from xclaw.core.sandbox import Sandbox
from xclaw.core.state import RunResult
from xclaw.models.scripted import ScriptedModel, load_script
from xclaw.models.text.model import TextProtocolModel

DEMO_TASK = (
    "Create a small multi-page website in this empty folder with a build step. Build it, "
    "serve it locally and confirm it answers, then add a contact section to the about page, "
    "rebuild, and make sure the build passes and the page is served."
)


def script_path() -> Path:
    return Path(str(resources.files("xclaw.coding.demo").joinpath("script.yaml")))


def prepare_dir(directory: Path | None) -> Path:
    if directory is None:
        return Path(tempfile.mkdtemp(prefix="xclaw-demo-"))
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise FileExistsError(f"{directory} is not empty; the demo needs an empty folder")
    return directory


async def run_demo(
    directory: Path,
    bus: EventBus,
    model: ScriptedModel | TextProtocolModel | None = None,
    sandbox: Sandbox | None = None,
) -> tuple[RunResult, ScriptedModel | TextProtocolModel]:
    """Run the demo task; ``model`` replaces the native scripted model (e.g. the XML one).

    In a sandbox nothing of the script asks; in host mode (no sandbox could work) the
    script's own commands — ours, not a model's — are approved, and the caller says so.
    """
    if model is None:
        model = ScriptedModel(load_script(script_path()), name="scripted demo")
    host = sandbox is not None and sandbox.mode == "host"
    approval: Literal["deny", "allow"] = "allow" if host else "deny"
    agent = Agent(model, directory, approval=approval, bus=bus, sandbox=sandbox)
    result = await agent.run(DEMO_TASK)
    return result, model
