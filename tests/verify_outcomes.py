"""verify.json for tests: :func:`full_outcome`, a ``synth verify`` outcome with every
section filled (tests/golden/verify/verify.json is its document, as the writer made it
before ``VerifyDocument``), and :func:`full_verify`, a schema-valid document around the
parts a test cares about."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from synth.formats.verify import VERIFY_FORMAT
from synth.pyramid.result import LevelResult, Report
from synth.verify.outcome import (
    ArtifactCheck,
    BuildInfo,
    ExportUse,
    FidelityVerdict,
    FingerprintOutcome,
    TargetInfo,
    VerifyOptions,
    VerifyOutcome,
)

#: The synth_version the golden document carries (the test sets the running one's aside).
GOLDEN_VERSION = "0.0.0+golden"


def full_outcome(root: Path = Path("/artifacts")) -> VerifyOutcome:
    """Rebuilt and live reports, export, artifact check, build, a compared fingerprint,
    failed fidelity and a scoring's section."""
    c0 = LevelResult("C0", "pass", None, {"import_statements": 4, "missing_statements": 0},
                     {"missing": []}, 0.25)
    c5 = LevelResult("C5", "fail", "1 false claim", {
        "hallucinations": 1, "path_hallucinations": 0, "version_hallucinations": 1,
        "capability_hallucinations": 0, "unverifiable": 0, "unknown": 0},
        {"checks": [{"field": "torch_version", "verdict": "hallucination", "claimed": "2.1",
                     "observed": "2.0", "note": ""}], "not_checked": []}, 1.5)
    rebuilt = Report({"kind": "rebuilt", "image": "synth-rebuilt/demo:1",
                      "python": "/v/bin/python"},
                     (c0, LevelResult("C1", "fail", "exit 1", seconds=2.0),
                      LevelResult("C2", "not_applicable", "no GPU code"), c5))
    live = Report({"kind": "live", "image": "synth-live/demo:1", "python": "/v/bin/python"},
                  (c0, LevelResult("C1", "pass", seconds=1.25)))
    art = root / "exports" / "demo"
    comparison = {"equal": False, "packages_equal": True, "native_equal": True,
                  "content_equal": False, "differences": [
                      {"section": "files", "kind": "changed", "key": "/v/x.py", "a": "1",
                       "b": "2", "detail": "", "explained": None}]}
    return VerifyOutcome(
        VerifyOptions(target=str(root / "runs" / "demo" / "r1"), rebuild=True, live=True),
        TargetInfo("run", root / "runs" / "demo" / "r1", "demo"), root / "out",
        {"rebuilt": rebuilt, "live": live}, "rebuilt",
        export=ExportUse(art, False, "no export of this run yet"),
        artifact_check=ArtifactCheck({"Dockerfile": "ab"}, ("Dockerfile: modified",), True),
        build=BuildInfo("synth-rebuilt/demo:1", "sha256:1", 12.5, art),
        fingerprint=FingerprintOutcome(
            "compared", comparison=comparison, unexplained=("files: changed /v/x.py",),
            summary=("1 file differs",)),
        fidelity=FidelityVerdict("C1", "C0", ({"level": "C1", "live": "pass",
                                               "rebuilt": "fail: exit 1"},),
                                 "compared", ("gap C1", "1 unexplained difference")),
        scores={"other": {"score": 1}})


def full_verify(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A schema-valid verify.json around the parts a test cares about."""
    reports = {
        key: {"highest": None, **report, "target": {"kind": key, **report.get("target", {})},
              "levels": [{"details": {}, "metrics": {}, "seconds": 0.0,
                          "reason": None if lv["status"] == "pass" else "", **lv}
                         for lv in report["levels"]]}
        for key, report in doc["reports"].items()}
    return {"format": VERIFY_FORMAT, "build": None, "decides": next(iter(reports)),
            "fidelity": None, "fingerprint": None, "levels_selected": [], "passed": True,
            "require": "C1", "synth_version": "0.1.0", "target": {"kind": "run", "path": "/x"},
            **doc, "reports": reports}
