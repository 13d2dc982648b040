"""``export --bundle`` and ``verify --rebuild --offline`` on a real engine.

The shared numpy-ext ``good.sh`` run (conftest ``task_run``) is exported with ``--bundle``:
its 42 .debs, its wheels (numpy, setuptools, …) come from the mirror and the index once,
are checked against apt.lock and the requirements lock, and land in ``vendor/``. The
artifact is rebuilt with ``docker build --network none`` and must reach the levels of the
session's online rebuild (conftest ``verified``, shared with other tests). Then one
vendored .deb whose bytes differ fails the build at its first RUN, naming the file.
Two builds in all; the second stops at the first RUN.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.errors import BuildError
from synth.export.artifact import ExportOptions, export_run
from synth.verify.build import build_artifact
from synth.verify.command import VerifyOptions, verify

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "numpy-ext"


def _levels(doc: dict[str, Any]) -> dict[str, str]:
    return {r["level"]: r["status"] for r in doc["reports"]["rebuilt"]["levels"]}


def test_a_bundle_rebuilds_offline_and_a_changed_file_fails_naming_it(
    task_run: Callable[[str, str], Path], verified: Callable[..., Any],
    marked_ca: tuple[Path | None, bytes], wheelhouse: Path | None, engine: Any,
    tmp_path: Path,
) -> None:
    run_dir = task_run(TASK, "good.sh")
    settings = Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=marked_ca[0],
                             wheelhouse=wheelhouse)
    result = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "art", bundle=True), settings, engine)
    art = result.artifact_dir
    manifest = json.loads((art / "manifest.json").read_text())
    apt = json.loads((run_dir / "state" / "apt.json").read_text())
    b = manifest["bundle"]
    assert b["offline"] is True and b["needs_network"] == []
    assert b["by_kind"]["deb"]["files"] == len(apt["debs"]) > 0
    assert b["by_kind"]["wheel"]["files"] >= 1
    assert any(p.startswith("vendor/wheels/numpy-") for p in manifest["files"])
    assert b["bytes"] == sum((art / p).stat().st_size for p in manifest["files"]
                             if p.startswith("vendor/"))
    assert json.loads((art / "export-report.json").read_text())["bundle"] == b

    # Re-exported: byte-identical (the fetches come from the cache by hash).
    again = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "again", bundle=True), settings, engine).artifact_dir
    assert (again / "manifest.json").read_bytes() == (art / "manifest.json").read_bytes()

    offline = verify(VerifyOptions(target=str(art), rebuild=True, offline=True,
                                   out_dir=tmp_path / "v"), settings, engine, say=lambda _m: None)
    try:
        doc = offline.document
        assert doc["build"]["offline"] is True
        from synth.formats.schemas import validate

        assert validate(doc, "verify") == [] and validate(manifest, "manifest") == []
        got = _levels(doc)
        assert got["C0"] == "pass" and got["C1"] == "pass", got
        online = _levels(verified(TASK, "good.sh").document)
        assert got == online
    finally:
        engine.remove_image(offline.document["build"]["image"])

    # One vendored .deb's bytes differ from apt.lock: the offline build fails naming it.
    bad = tmp_path / "bad"
    shutil.copytree(art, bad)
    victim = next(p for p in sorted((bad / "vendor" / "debs").iterdir())
                  if p.name.startswith("gcc_"))
    data = victim.read_bytes()
    victim.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(BuildError) as err:
        build_artifact(bad, "synth-test/durable-bundle:bad", settings, network="none",
                       log_path=tmp_path / "bad.log")
    assert f"{victim.name}: FAILED" in err.value.message, err.value.message
    assert "differ from the sha256 apt.lock records" in err.value.message


@pytest.mark.parametrize("task", ["uv-project", "poetry-project", "conda-env"])
def test_a_tool_made_environment_rebuilds_offline_from_its_bundle(
    task: str, task_run: Callable[[str, str], Path], verified: Callable[..., Any],
    marked_ca: tuple[Path | None, bytes], wheelhouse: Path | None, engine: Any,
    tmp_path: Path,
) -> None:
    """A uv project's and a poetry project's .venv and a conda prefix, from the bundle alone:
    built with no network, the same levels as the online rebuild, the same packages as the
    live image."""
    run_dir = task_run(task, "good.sh")
    settings = Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=marked_ca[0],
                             wheelhouse=wheelhouse)
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "art", bundle=True),
                     settings, engine).artifact_dir
    bundle = json.loads((art / "manifest.json").read_text())["bundle"]
    assert bundle["offline"] is True and bundle["needs_network"] == [], bundle
    offline = verify(VerifyOptions(target=str(art), rebuild=True, offline=True, live=True,
                                   out_dir=tmp_path / "v"), settings, engine,
                     say=lambda _m: None)
    try:
        doc = offline.document
        assert doc["build"]["offline"] is True
        got = _levels(doc)
        assert got["C1"] == "pass", got
        assert got == _levels(verified(task, "good.sh").document)
        assert doc["fingerprint"]["packages_equal"] is True, doc["fingerprint"]["summary"]
    finally:
        engine.remove_image(offline.document["build"]["image"])
