"""The llama.cpp server process: ``python -m xclaw.models.local._child SETTINGS_JSON``.

``xllamacpp.Server`` runs llama.cpp's HTTP server in threads of the process that builds it, and
installs its own SIGINT/SIGTERM handlers there, so it gets a process of its own. Protocol with
the parent (``server.LlamaServer``): one JSON line on stdout, ``{"ready": URL}`` once the model
is loaded or ``{"error": TEXT}``; llama.cpp's log goes to stderr. The server stops when stdin
reaches end of file: the parent closed it, or the parent died, so no server outlives xclaw.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _params(xllamacpp: Any, settings: dict[str, Any]) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = settings["model"]
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # llama.cpp binds a free port and reports it: no race for one
    params.n_ctx = int(settings["n_ctx"])
    params.n_predict = int(settings["max_tokens"])  # the server's cap on one reply
    params.n_parallel = 1
    params.cpuparams.n_threads = int(settings["threads"])
    params.cpuparams_batch.n_threads = int(settings["threads"])
    params.use_jinja = True  # the model's own chat template, with its tool-call format
    params.sampling.temp = float(settings["temperature"])
    params.sampling.seed = int(settings["seed"])
    return params


def main(argv: list[str]) -> int:
    settings = json.loads(argv[1])
    try:
        import xllamacpp  # type: ignore[import-untyped]  # a Cython module without stubs

        server = xllamacpp.Server(_params(xllamacpp, settings))
    except Exception as err:  # noqa: BLE001 - reported to the parent, which raises a coded error
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)
        return 1
    print(json.dumps({"ready": server.listening_address}), flush=True)
    sys.stdin.read()  # blocks until end of file
    del server  # terminates llama.cpp's loop and joins its threads
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
