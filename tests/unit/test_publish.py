"""``synth export --archive``: the same run gives the same archive bytes; the SBOM and the
RO-Crate inside validate (CycloneDX's own JSON schema validator; RO-Crate's required
entities, read back with the ``rocrate`` library)."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from distill_runs import NO_ENGINE
from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.export.artifact import ExportOptions, ExportResult, export_run


def _export(tmp: Path, run_dir: Path, name: str) -> ExportResult:
    return export_run(ExportOptions(
        run_dir, out_dir=tmp / name / "export", locker=fake_locker, ask_live=False,
        archive=True), Settings.load(artifacts_dir=tmp), NO_ENGINE)


def test_two_archive_exports_have_the_same_sha256(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    a, b = _export(tmp_path, run_dir, "a"), _export(tmp_path, run_dir, "b")
    assert a.archive is not None and b.archive is not None
    assert a.archive.name == "demo-20261129-101500-a1b2c3.tar.gz"
    assert a.archive.read_bytes() == b.archive.read_bytes()
    digest = hashlib.sha256(a.archive.read_bytes()).hexdigest()
    assert a.archive_sha256 == digest
    assert (a.archive.parent / (a.archive.name + ".sha256")).read_text() == \
        f"{digest}  {a.archive.name}\n"
    with tarfile.open(a.archive) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names[0] == "demo-20261129-101500-a1b2c3"
    assert names[1:] == sorted(names[1:])
    assert {m.uid for m in members} == {0} and {m.uname for m in members} == {""}
    epoch = json.loads((a.artifact_dir / "manifest.json").read_text())["archive"][
        "source_date_epoch"]
    assert epoch == 1795947400  # 2026-11-29T10:16:40Z, the run's end
    assert {m.mtime for m in members} == {epoch}
    assert "demo-20261129-101500-a1b2c3/sbom.cdx.json" in names
    assert "demo-20261129-101500-a1b2c3/ro-crate-metadata.json" in names
    # gzip header: no name, mtime 0
    head = a.archive.read_bytes()[:10]
    assert head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"


def test_sbom_validates_and_lists_every_component(tmp_path: Path) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    text = (art / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    comps = {c["purl"]: c for c in json.loads(text)["components"]}
    gcc = comps["pkg:deb/debian/gcc@4:12.2.0-3?arch=amd64"]
    assert gcc["hashes"][0]["alg"] == "SHA-256" and len(gcc["hashes"][0]["content"]) == 64
    assert "pkg:deb/debian/git@1:2.39.5-0%2Bdeb12u2" in comps  # pinned, no hash recorded
    assert comps["pkg:pypi/numpy@2.3.5"]["hashes"]
    assert "pkg:pypi/torch@2.13.0%2Bcpu" in comps


def test_ro_crate_has_its_required_entities(tmp_path: Path) -> None:
    from rocrate.rocrate import ROCrate

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    doc = json.loads((art / "ro-crate-metadata.json").read_text())
    graph = {e["@id"]: e for e in doc["@graph"]}
    meta = graph["ro-crate-metadata.json"]
    assert meta["about"] == {"@id": "./"}
    assert meta["conformsTo"]["@id"].startswith("https://w3id.org/ro/crate/1.")
    root = graph["./"]
    assert root["@type"] == "Dataset"
    assert root["name"] and root["description"] and root["datePublished"].startswith("2026-11-29")
    assert root["mainEntity"] == {"@id": "Dockerfile"}
    parts = {p["@id"] for p in root["hasPart"]}
    assert {"Dockerfile", "apt.lock", "manifest.json", "sbom.cdx.json", "task.toml",
            "source/"} <= parts
    for part in parts:  # every data entity is in the folder
        assert (art / part).exists(), part
    inputs = [e for e in doc["@graph"] if e["@id"].startswith("#input-")]
    assert {e["name"] for e in inputs} >= {"run.json", "audit.jsonl"}
    assert graph["#export"]["@type"] == "CreateAction"
    crate = ROCrate(str(art))  # the library reads it back
    assert crate.root_dataset["name"] == root["name"]
    assert crate.mainEntity.id == "Dockerfile"


def test_manifest_with_archive_validates(tmp_path: Path) -> None:
    from synth.formats.schemas import validate

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    assert validate(json.loads((art / "manifest.json").read_text()), "manifest") == []
