"""verification.json travels with the artifact: what verify writes (levels, fidelity, the
digests of the artifact and of the rebuilt image, synth's version, when), that a later
verify compares its result with the record it finds and says what changed, that a
re-export keeps the record, and that the archive carries it."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.export.artifact import ExportOptions, export_run
from synth.formats.schemas import validate
from synth.formats.store import ArtifactDir
from synth.formats.verify import VerifyDocument
from synth.verify.record import changes, verification_record, write_record
from tests.distill_runs import NO_ENGINE, fake_base, manifest
from tests.verify_outcomes import full_verify

DIGEST = "sha256:" + "c" * 64


def _doc(c1: str = "pass", passed: bool = True) -> VerifyDocument:
    doc = {"require": "C1", "passed": passed, "decides": "rebuilt",
           "build": {"image": "synth-rebuilt/t:1", "image_id": "sha256:" + "9" * 64,
                     "artifact_dir": "/a"},
           "reports": {"rebuilt": {"highest": "C1" if c1 == "pass" else "C0",
                                   "passed_levels": ["C0", "C1"], "levels": [
               {"level": "C0", "status": "pass"}, {"level": "C1", "status": c1}]}},
           "fidelity": {"reaches_live_level": passed, "live_highest": "C1",
                        "rebuilt_highest": "C1" if c1 == "pass" else "C0", "gaps": []}}
    return VerifyDocument.from_json(full_verify(doc))


def _artifact(tmp: Path, **fields: Any) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    base = manifest()["base"]
    base["published"]["config_digest"] = DIGEST
    (tmp / "manifest.json").write_text(json.dumps(manifest(base=base, **fields)))
    return tmp


def test_the_record_names_levels_digests_and_when(tmp_path: Path) -> None:
    art = _artifact(tmp_path / "art")
    rec = verification_record(_doc(), ArtifactDir(art))
    assert rec["levels"] == {"C0": "pass", "C1": "pass"}
    assert rec["passed"] is True and rec["fidelity"] is True
    assert rec["image_id"] == "sha256:" + "9" * 64
    assert rec["artifact_sha256"] == hashlib.sha256((art / "manifest.json").read_bytes()
                                                    ).hexdigest()
    assert rec["base_digest"] == DIGEST
    assert rec["gpu_driver"]  # a version, or "none"
    assert set(rec) >= {"date", "synth_version", "docker_version", "architecture"}
    assert validate(rec, "verification") == []


def test_a_second_verify_says_what_changed_and_keeps_the_first(tmp_path: Path) -> None:
    art = _artifact(tmp_path / "art")
    said: list[str] = []
    first = write_record(_doc(), art, said.append)
    assert said == [] and "previous" not in first
    (art / "manifest.json").write_text(json.dumps(manifest(task="other")))  # re-exported
    second = write_record(_doc("fail", passed=False), art, said.append)
    assert second["previous"]["levels"] == {"C0": "pass", "C1": "pass"}
    assert second["previous"]["date"] == first["date"]
    assert "C1: pass -> fail" in second["changes"]
    assert "passed: True -> False" in second["changes"]
    assert any(c.startswith("artifact: another export") for c in second["changes"])
    assert len(said) == 1 and said[0].startswith("Compared with the recorded verification")
    assert "C1: pass -> fail" in said[0]
    assert validate(json.loads((art / "verification.json").read_text()), "verification") == []
    record = ArtifactDir(art).verification()
    assert record is not None and record.levels["C1"] == "fail"
    third = write_record(_doc("fail", passed=False), art, said.append)
    assert third["changes"] == [] and said[-1].endswith("the same result")


def test_changes_leave_out_what_always_differs() -> None:
    from synth.formats.verification import VerificationRecord

    old = VerificationRecord.from_json({
        "format": 1, "date": "2026-01-01T00:00:00Z", "synth_version": "0.1.0", "passed": True,
        "levels": {"C1": "pass"}, "image_id": "sha256:" + "1" * 64,
        "artifact_sha256": "a" * 64, "docker_version": "20.10.24"})
    new = {"levels": {"C1": "pass"}, "passed": True, "fidelity": None, "base_digest": None,
           "synth_version": "0.2.0", "docker_version": "28.2.2", "architecture": "x86_64",
           "gpu_driver": "none", "artifact_sha256": "a" * 64,
           "image_id": "sha256:" + "2" * 64}
    assert changes(old, new) == ["synth: 0.1.0 -> 0.2.0", "docker: 20.10.24 -> 28.2.2"]


def test_an_unreadable_record_is_named_and_replaced(tmp_path: Path) -> None:
    art = _artifact(tmp_path / "art")
    (art / "verification.json").write_text("{not json")
    said: list[str] = []
    rec = write_record(_doc(), art, said.append)
    assert "previous" not in rec and "not readable" in said[0]


def _export(tmp: Path, out: Path, **kw: Any) -> Path:
    run_dir = next(tmp.glob("runs/*/*"), None) or _run(tmp)
    return export_run(ExportOptions(run_dir, out_dir=out, locker=fake_locker, ask_live=False,
                                    save_base=fake_base(run_dir), **kw),
                      Settings.load(artifacts_dir=tmp), NO_ENGINE).artifact_dir


def test_a_re_export_keeps_the_record_and_the_archive_carries_it(tmp_path: Path) -> None:
    art = _export(tmp_path, tmp_path / "out" / "export")
    write_record(_doc(), art, lambda _m: None)
    kept = (art / "verification.json").read_bytes()
    again = _export(tmp_path, tmp_path / "out" / "export", force=True, archive=True)
    assert (again / "verification.json").read_bytes() == kept
    assert "verification.json" not in json.loads((again / "manifest.json").read_text())["files"]
    assert "| `verification.json` |" in (again / "README.md").read_text()
    crate = json.loads((again / "ro-crate-metadata.json").read_text())
    entity = next(e for e in crate["@graph"] if e["@id"] == "verification.json")
    assert entity["sha256"] == hashlib.sha256(kept).hexdigest()
    archive = again.parent / "demo-20261129-101500-a1b2c3.tar.gz"
    with tarfile.open(archive) as tar:
        member = tar.extractfile("demo-20261129-101500-a1b2c3/verification.json")
        assert member is not None and member.read() == kept


def test_a_forged_record_is_not_kept(tmp_path: Path) -> None:
    art = _export(tmp_path, tmp_path / "out" / "export")
    (art / "verification.json").symlink_to("/etc/passwd")
    again = _export(tmp_path, tmp_path / "out" / "export", force=True)
    assert not (again / "verification.json").exists()
