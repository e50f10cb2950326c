"""Build the passages of the labelled retrieval set, and resolve the labels' answers to ids.

    python tests/memory/data/build_retrieval_set.py english   # writes english_passages.jsonl
    python tests/memory/data/build_retrieval_set.py label     # fills "relevant" in queries.json
    python tests/memory/data/build_retrieval_set.py vectors   # writes passage_vectors.npz

Chinese passages: the four seed documents (tests/memory/data/seeds, the project's own spec), chunked
at test time with ``xclaw.memory.chunking.chunk_text`` (150 tokens, 30 overlap); they are not
committed. English passages: docstrings of Python standard-library modules (PSF licence),
chunked the same way and committed as english_passages.jsonl, so a Python upgrade that edits a
docstring cannot shift them. A passage id is ``<source>-<sha256(text)[:10]>``: a changed source
makes the labelled ids disappear, which the test reports instead of scoring the wrong text.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ENGLISH = HERE / "english_passages.jsonl"
QUERIES = HERE / "queries.json"
VECTORS = HERE / "passage_vectors.npz"
SIZE, OVERLAP = 150, 30

MODULES = (
    "json argparse logging pathlib subprocess re datetime collections itertools functools heapq "
    "bisect shutil tempfile sqlite3 hashlib hmac secrets random statistics textwrap string "
    "urllib.parse threading queue contextlib dataclasses enum zipfile tarfile gzip base64 uuid "
    "difflib fnmatch glob shlex copy pickle struct decimal fractions math operator weakref abc "
    "configparser csv html ipaddress zlib os time calendar inspect pprint traceback warnings "
    "mimetypes codecs http.cookies email.utils selectors signal"
).split()


def seeds_dir() -> Path:
    """The four seed documents (the project's own spec), copied beside this script so the
    set is the same on every machine; $XCLAW_SEEDS_DIR points elsewhere."""
    env = os.environ.get("XCLAW_SEEDS_DIR")
    folder = Path(env) if env else Path(__file__).resolve().parent / "seeds"
    if not (folder / "003_1bd473b292a2bf2a.txt").is_file():
        raise FileNotFoundError(f"the seed documents are missing from {folder}")
    return folder


def passage_id(source: str, text: str) -> str:
    return f"{source}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]}"


def _chunk(text: str) -> list[str]:
    from xclaw.memory.chunking import chunk_text

    return [s.text for s in chunk_text(text, size=SIZE, overlap=OVERLAP)]


def seed_passages(folder: Path) -> list[dict[str, Any]]:
    out, seen = [], set()
    for path in sorted(folder.glob("0*.txt")):
        source = f"seed{path.name[:3]}"
        for text in _chunk(path.read_text(encoding="utf-8")):
            pid = passage_id(source, text)
            if pid not in seen:  # a repeated snippet is one passage
                seen.add(pid)
                out.append({"id": pid, "source": source, "text": text})
    return out


def _members(mod: Any) -> list[tuple[str, str]]:
    docs = [(mod.__name__, inspect.getdoc(mod) or "")]
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    for name in sorted(names):
        obj = getattr(mod, name, None)
        if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
            continue
        if getattr(obj, "__module__", mod.__name__) not in (mod.__name__, "_" + mod.__name__):
            continue
        docs.append((f"{mod.__name__}.{name}", inspect.getdoc(obj) or ""))
        if inspect.isclass(obj):
            for meth, fn in sorted(vars(obj).items()):
                if not meth.startswith("_") and callable(fn) and getattr(fn, "__doc__", None):
                    docs.append((f"{mod.__name__}.{name}.{meth}", inspect.getdoc(fn) or ""))
    return [(q, d) for q, d in docs if len(d) >= 120]


def english_passages() -> list[dict[str, Any]]:
    out, seen = [], set()
    for name in MODULES:
        mod = importlib.import_module(name)
        for qualname, doc in _members(mod):
            for text in _chunk(f"{qualname}\n{doc}"):
                pid = passage_id("py", text)
                if pid not in seen:
                    seen.add(pid)
                    out.append({"id": pid, "source": "py", "ref": qualname, "text": text})
    return out


def load_english() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ENGLISH.read_text(encoding="utf-8").splitlines()]


def all_passages() -> list[dict[str, Any]]:
    return seed_passages(seeds_dir()) + load_english()


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def label() -> None:
    """Each query names an answer phrase; its relevant passages are those holding it."""
    passages = all_passages()
    labels = json.loads(QUERIES.read_text(encoding="utf-8"))
    bad = 0
    for q in labels["queries"]:
        answer = _norm(q["answer"])
        pool = [p for p in passages if q.get("source") in (None, p["source"])]
        q["relevant"] = [p["id"] for p in pool if answer in _norm(p["text"])]
        if not 1 <= len(q["relevant"]) <= 4:
            bad += 1
            print(
                f"{q['qid']}: {len(q['relevant'])} passages hold {q['answer']!r}", file=sys.stderr
            )
    QUERIES.write_text(json.dumps(labels, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(labels['queries'])} queries labelled, {bad} need a sharper answer phrase")


def vectors() -> None:
    import numpy as np

    from xclaw.memory.embed import default_embedder

    passages = all_passages()
    emb = default_embedder()
    vecs = emb.embed([p["text"] for p in passages])
    ids = np.array([p["id"] for p in passages])
    np.savez_compressed(VECTORS, ids=ids, vectors=vecs.astype(np.float16), model=emb.name)
    print(f"{len(ids)} vectors of {emb.name} written to {VECTORS}")


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "english":
        rows = english_passages()
        ENGLISH.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
        print(f"{len(rows)} English passages written")
    elif what == "label":
        label()
    elif what == "vectors":
        vectors()
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
