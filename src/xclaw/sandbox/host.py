"""``host`` mode: commands run as xclaw's own user, unconfined.

Chosen explicitly, or when bubblewrap cannot work (always with a warning). The allow-list
policy then asks before anything but known read-only commands; the environment is still the
allow-list of ``sandbox.env``.
"""

from __future__ import annotations

from xclaw.core.sandbox import Mode
from xclaw.sandbox.base import CommandRequest, Launch
from xclaw.sandbox.env import child_environment
from xclaw.sandbox.proctree import TAG_VAR


class HostSandbox:
    mode: Mode = "host"

    def __init__(self, env_passthrough: tuple[str, ...] = (), reason: str = "") -> None:
        self.env_passthrough = env_passthrough
        self.reason = reason  # why host mode: "chosen" or what made bubblewrap fail

    def launch(self, request: CommandRequest, *, tag: str, network: bool = False) -> Launch:
        env = child_environment(request.env, passthrough=self.env_passthrough)
        env[TAG_VAR] = tag
        argv = (request.program, *request.argv)
        return Launch(request.executable, argv, env, request.cwd)

    async def publish(self, url: str) -> str:
        return url

    async def close(self) -> None:
        return None
