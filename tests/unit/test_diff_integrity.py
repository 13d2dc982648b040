"""``synth diff`` compares everything a run and an artifact carry — claims field by field,
provenance (risks, unaudited changes, trust problems), locks (pins and hashes), files by
digest — and never says "equal" about a corrupted or missing input: a file the store
refuses, or an artifact whose files do not match its manifest, is "could not compare"
(exit 2) naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.export.artifact import ExportOptions, export_run
from synth.formats import artifact_files
from tests.distill_runs import NO_ENGINE
from tests.fuzz_inputs import run_cli


def _artifact(tmp_path: Path) -> tuple[Path, Path]:
    run_dir = _run(tmp_path)
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "a", locker=fake_locker,
                                   ask_live=False),
                     Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    return run_dir, art


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def _remanifest(art: Path) -> None:
    """What a forger does: the manifest rewritten to match the changed files."""
    manifest = json.loads((art / "manifest.json").read_text())
    manifest["files"] = artifact_files.digests(art, skip=("manifest.json",))
    (art / "manifest.json").write_text(json.dumps(manifest))


def _diff(a: Path, b: Path) -> tuple[int, dict[str, object], str]:
    code, out, err = run_cli("diff", str(a), str(b), "--json")
    doc = json.loads(out)
    sections = {s["name"]: s for s in doc["result"]["sections"]} if "result" in doc else {}
    return code, sections, (doc.get("error") or {}).get("message", "") + err


def _keys(section: object) -> list[tuple[str, str]]:
    assert isinstance(section, dict)
    return [(i["kind"], i["key"]) for i in section["items"]]


def test_copies_are_equal_and_every_section_is_there(tmp_path: Path) -> None:
    run_dir, art = _artifact(tmp_path)
    code, sections, _ = _diff(art, _copy(art, tmp_path / "copy"))
    assert code == 0
    for name in ("claims", "provenance", "locks", "files"):
        assert sections[name]["status"] == "equal", name
    code, sections, _ = _diff(run_dir, _copy(run_dir, tmp_path / "runs2" / run_dir.name))
    assert code == 0 and sections["claims"]["status"] == "equal"


def test_a_claim_changed_in_a_copy_is_a_difference(tmp_path: Path) -> None:
    run_dir, _art = _artifact(tmp_path)
    copy = _copy(run_dir, tmp_path / "other" / run_dir.name)
    (copy / "claims.json").write_text(json.dumps({"python_path": "/usr/bin/python3",
                                                  "cuda_available": True}))
    code, sections, _ = _diff(run_dir, copy)
    assert code == 1
    assert _keys(sections["claims"]) == [("added", "cuda_available"),
                                         ("changed", "python_path")]
    (copy / "claims.json").unlink()
    code, sections, _ = _diff(run_dir, copy)
    assert code == 1 and ("changed", "claims.json") in _keys(sections["claims"])


def test_a_corrupted_or_refused_input_cannot_be_compared(tmp_path: Path) -> None:
    run_dir, art = _artifact(tmp_path)
    bad_run = _copy(run_dir, tmp_path / "bad" / run_dir.name)
    (bad_run / "claims.json").write_text("{not json")
    code, _, message = _diff(run_dir, bad_run)
    assert code == 2 and "could not compare" in message and "claims.json" in message
    (bad_run / "claims.json").write_text("{}")
    (bad_run / "state" / "provenance.json").write_text("[]")
    code, _, message = _diff(run_dir, bad_run)
    assert code == 2 and "provenance.json" in message

    for damage, named in (("plan.json", "plan.json (modified)"),
                          ("requirements.lock", "requirements.lock (modified)"),
                          ("notes.txt", "notes.txt (not in the manifest)"),
                          ("claims.json", "claims.json (missing)")):
        copy = _copy(art, tmp_path / f"art-{damage}")
        target = copy / damage
        if damage == "claims.json":
            target.unlink()
        else:
            with target.open("a") as fh:
                fh.write("\n")
        code, _, message = _diff(art, copy)
        assert code == 2 and "could not compare" in message and named in message, message


def test_forged_copies_differ_where_they_were_changed(tmp_path: Path) -> None:
    """Changes a forger carried into the manifest still show: each in its section, and the
    files of two copies of one export are compared file by file."""
    _run_dir, art = _artifact(tmp_path)
    locks = _copy(art, tmp_path / "locks")
    lock = locks / "requirements.lock"
    text = lock.read_text()
    lock.write_text(text.replace("--hash=sha256:", "--hash=sha256:0", 1))
    _remanifest(locks)
    code, sections, _ = _diff(art, locks)
    assert code == 1
    assert len(_keys(sections["locks"])) == 1
    assert _keys(sections["locks"])[0][1].startswith("requirements.lock: ")
    assert ("changed", "requirements.lock") in _keys(sections["files"])

    prov = _copy(art, tmp_path / "prov")
    plan = json.loads((prov / "plan.json").read_text())
    plan["report"]["risks"] = ["LD_PRELOAD=/tmp/x.so persisted"]
    plan["report"]["unaudited"] = []
    (prov / "plan.json").write_text(json.dumps(plan))
    _remanifest(prov)
    code, sections, _ = _diff(art, prov)
    assert code == 1
    assert ("added", "risk: LD_PRELOAD=/tmp/x.so persisted") in _keys(sections["provenance"])

    bare = _copy(art, tmp_path / "bare")
    (bare / "manifest.json").unlink()
    code, _, message = _diff(art, bare)
    assert code == 2 and "manifest.json: missing" in message


def test_two_runs_files_are_shown_not_counted(tmp_path: Path) -> None:
    """Every rendered file names its run: two runs' artifacts differ there by nature, so
    the files section informs and the content sections decide."""
    run_dir, art = _artifact(tmp_path)
    other = _copy(run_dir, tmp_path / "runs" / "demo" / "20261130-000000-bbbbbb")
    record = json.loads((other / "run.json").read_text())
    record["run_id"] = other.name
    (other / "run.json").write_text(json.dumps(record))
    art2 = export_run(ExportOptions(other, out_dir=tmp_path / "b", locker=fake_locker,
                                    ask_live=False),
                      Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    code, sections, _ = _diff(art, art2)
    assert sections["files"]["status"] == "info"
    assert ("changed", "Dockerfile") in _keys(sections["files"])
    for name in ("claims", "provenance", "locks", "python", "apt", "env"):
        assert sections[name]["status"] == "equal", name
    # (the one difference counted: the image's description LABEL names its run)
    assert code == 1 and {n for n, s in sections.items() if s["status"] == "differ"} == \
        {"dockerfile"}
