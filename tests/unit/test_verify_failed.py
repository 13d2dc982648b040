"""A ``synth verify --rebuild`` whose build fails leaves ``verify-failed.json`` (atomically,
with the error and its hint), and ``synth runs list``/``show`` say so instead of
``verify=-``; a later verdict in the same folder removes it (docs/verify.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from distill_runs import NO_ENGINE, make_run_dir

from synth.config import Settings
from synth.errors import BuildError, DiskFullError, UsageError
from synth.formats.schemas import validate
from synth.formats.store import read_verify_failure
from synth.record import runs_view
from synth.verify import command
from synth.verify.command import VerifyOptions, failure_recorded, verify
from synth.verify.outcome import TargetInfo, VerifyOutcome
from tests.verify_outcomes import full_verify

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"


def test_an_artifact_whose_build_fails_leaves_the_record_beside_its_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The golden artifact, checked against its manifest as verify does, then a build (the
    engine's, faked) that fails after writing its log."""
    art = tmp_path / "export"
    shutil.copytree(GOLDEN, art)

    def build(artifact_dir: Path, tag: str, settings: Settings, out_dir: Path,
              *_a: Any, **_k: Any) -> Any:
        (out_dir / "build.log").write_text("#5 ERROR: process did not complete\n")
        raise BuildError("The image build failed (exit 1).")

    monkeypatch.setattr(command, "check_rebuild_space", lambda *_a: None)
    monkeypatch.setattr(command, "prepare_base", lambda *_a, **_k: "present")
    monkeypatch.setattr(command, "rebuild", build)
    with pytest.raises(BuildError):
        verify(VerifyOptions(target=str(art), rebuild=True),
               Settings.load(artifacts_dir=tmp_path), NO_ENGINE, say=lambda _m: None)
    failure = read_verify_failure(tmp_path / "verify" / "verify-failed.json")
    assert failure is not None and failure.status == "build-failed"
    assert failure.log == "build.log" and failure.target.path == str(art)


def test_a_failed_build_leaves_a_record_and_runs_list_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = make_run_dir(tmp_path)
    out = run_dir / "verify"
    out.mkdir()
    # The rebuild stops at the run's export (a fake one, failing as a build would); the
    # live image is not on this engine (there is none).
    monkeypatch.setattr(command, "check_rebuild_space", lambda *_a: None)
    monkeypatch.setattr(command, "_live_image", lambda *_a: None)

    def export(*_a: Any, **_k: Any) -> Any:
        raise BuildError("The image build failed (exit 1).\n#5 ERROR: pip failed",
                         hint="Read build.log; --bundle builds offline.")

    monkeypatch.setattr(command, "artifact_for_run", export)
    with pytest.raises(BuildError):
        verify(VerifyOptions(target=str(run_dir), rebuild=True),
               Settings.load(artifacts_dir=tmp_path), NO_ENGINE, say=lambda _m: None)
    doc = json.loads((out / "verify-failed.json").read_text())
    assert validate(doc, "verify-failed") == []
    assert doc["status"] == "build-failed"
    assert doc["error"] == {"code": 15, "kind": "BuildError",
                            "message": "The image build failed (exit 1).\n#5 ERROR: pip failed",
                            "hint": "Read build.log; --bundle builds offline."}
    assert doc["target"]["kind"] == "run" and "log" not in doc  # no build.log was written
    assert not (out / "verify.json").exists()
    assert [p.name for p in out.iterdir()] == ["verify-failed.json"]  # no temp file left

    row = runs_view.view(run_dir)
    assert "verify=BUILD-FAILED" in runs_view.list_line(row)
    shown = "\n".join(runs_view.show_lines(row))
    assert "verify     BUILD-FAILED" in shown
    assert "BuildError: The image build failed (exit 1)." in shown
    assert "hint: Read build.log; --bundle builds offline." in shown
    assert row["verify_failed"]["status"] == "build-failed"
    assert json.loads(json.dumps(row))["verify_failed"]["kind"] == "BuildError"


def test_the_record_names_the_build_log_and_other_errors_say_error(tmp_path: Path) -> None:
    target = TargetInfo("artifact", tmp_path / "export", "demo")
    (tmp_path / "build.log").write_text("log\n")
    with pytest.raises(BuildError), failure_recorded(tmp_path, target):
        raise BuildError("the build failed (exit 100)")
    failure = read_verify_failure(tmp_path / "verify-failed.json")
    assert failure is not None and failure.log == "build.log"
    assert failure.error.hint is None and failure.target.kind == "artifact"
    with pytest.raises(DiskFullError), failure_recorded(tmp_path, target):
        raise DiskFullError("no room", path=tmp_path)
    failure = read_verify_failure(tmp_path / "verify-failed.json")
    assert failure is not None and failure.status == "error" and failure.log is None
    (tmp_path / "verify-failed.json").unlink()
    with pytest.raises(UsageError), failure_recorded(tmp_path, target):
        raise UsageError("--offline needs a bundle")  # the command line's, not the artifact's
    assert read_verify_failure(tmp_path / "verify-failed.json") is None


def test_a_later_verdict_replaces_the_failure(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    out = run_dir / "verify"
    out.mkdir()
    with pytest.raises(BuildError), failure_recorded(out, TargetInfo("run", run_dir, "demo")):
        raise BuildError("the build failed")
    # An earlier verdict stays on disk, but the failure is the latest: it is what shows.
    (out / "verify.json").write_text(json.dumps(full_verify({
        "format": 1, "decides": "rebuilt", "passed": True, "require": "C1",
        "reports": {"rebuilt": {"target": {"kind": "rebuilt"},
                                "levels": [{"level": "C1", "status": "pass"}]}}})))
    assert "verify=BUILD-FAILED" in runs_view.list_line(runs_view.view(run_dir))
    from synth.pyramid.result import LevelResult, Report

    outcome = VerifyOutcome(VerifyOptions(target=str(run_dir)),
                            TargetInfo("run", run_dir, "demo"), out,
                            {"live": Report({"kind": "live"}, (LevelResult("C1", "pass"),))},
                            "live")
    command._write(outcome, say=lambda _m: None)
    assert not (out / "verify-failed.json").exists()
    row = runs_view.view(run_dir)
    assert row["verify_failed"] is None
    assert "verify[live] PASSED C1=pass" in runs_view.list_line(row)
