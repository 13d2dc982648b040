"""to_json/from_json of the run and artifact files (synth.formats).

Each file's type is decoded from a real document (the golden export's, or a generated run
directory's) and ``Cls.from_json(x.to_json()) == x``; ``to_json`` keeps every key of the
document (RunRecord, Manifest and Claims give back the whole document: ``raw``); the
export report, verify.json and plan.json give back their golden files byte for byte (synth
writes them through these types)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from synth.formats.audit import LINE_TYPES, AuditRecord
from synth.formats.claims import Claims
from synth.formats.export_report import ExportReport
from synth.formats.manifest import Manifest
from synth.formats.plan import (
    PLAN_FORMAT,
    CarriedFile,
    NativeStep,
    plan_document,
    read_plan_document,
)
from synth.formats.run import RunRecord
from synth.formats.schemas import validate
from synth.formats.state import AptState, DiffState, EnvState, Provenance, PythonState
from synth.formats.verify import (
    VerifyArtifactCheck,
    VerifyDocument,
    VerifyExport,
    VerifyGap,
    VerifyTarget,
)
from tests.distill_runs import deb, dist, make_run_dir, system_python, venv
from tests.verify_outcomes import GOLDEN_VERSION, full_outcome, full_verify

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
VERIFY_GOLDEN = GOLDEN.parent / "verify" / "verify.json"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    url = {"url": "file:///workspace", "dir_info": {"editable": True}}
    return make_run_dir(
        tmp_path, [{"command": "pip install -e ."}],
        apt_added={"git": "1:2.39.5-0+deb12u2", "curl": "7.88.1-10+deb12u12"},
        apt_manual=["git"], apt_debs={"git": deb("git", "1:2.39.5-0+deb12u2")},
        python=[system_python(), venv(dists=[dist("demo", "0.1", requested=True,
                                                  direct_url=url), dist("six", "1.16.0")])],
        diff=[("A", "/opt/venv"), ("C", "/root/.bashrc")], env={"HF_HOME": "/data/hf"})


#: file under the run dir -> (class, schema name)
STATES: dict[str, tuple[Any, str]] = {
    "run.json": (RunRecord, "run"),
    "state/python.json": (PythonState, "python-state"),
    "state/apt.json": (AptState, "apt-state"),
    "state/env.json": (EnvState, "env-state"),
    "state/provenance.json": (Provenance, "provenance-state"),
    "state/diff.json": (DiffState, "diff-state"),
}


def _kept(doc: Any, out: Any) -> bool:
    """Every key and value of ``doc`` is in ``out`` (which may add the keys it left out,
    as null or their default)."""
    if isinstance(doc, dict):
        return isinstance(out, dict) and all(k in out and _kept(v, out[k])
                                             for k, v in doc.items())
    if isinstance(doc, list):
        return isinstance(out, list) and len(doc) == len(out) and all(
            _kept(a, b) for a, b in zip(doc, out, strict=True))
    return bool(doc == out and type(doc) is type(out))


@pytest.mark.parametrize("rel", sorted(STATES))
def test_run_files_round_trip(run_dir: Path, rel: str) -> None:
    cls, schema = STATES[rel]
    doc = load(run_dir / rel)
    assert validate(doc, schema) == []
    obj = cls.from_json(doc)
    out = obj.to_json()
    assert cls.from_json(out) == obj
    assert validate(out, schema) == []
    assert _kept(doc, out)


def test_apt_state_without_debs_round_trips(tmp_path: Path) -> None:
    doc = load(make_run_dir(tmp_path, apt_added={"git": "1"}) / "state" / "apt.json")
    state = AptState.from_json(doc)
    assert not state.debs_captured and state.to_json()["debs"] is None
    assert AptState.from_json(state.to_json()) == state


def test_python_state_keeps_the_distributions(run_dir: Path) -> None:
    state = PythonState.from_json(load(run_dir / "state" / "python.json"))
    primary = state.primary_interpreter()
    assert primary is not None and [d.name for d in primary.distributions] == ["demo", "six"]
    assert primary.distributions[0].editable


def test_manifest_round_trips() -> None:
    doc = load(GOLDEN / "manifest.json")
    assert validate(doc, "manifest") == []
    manifest = Manifest.from_json(doc)
    assert manifest.to_json() == doc  # raw is kept whole
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert manifest.files["Dockerfile"] == doc["files"]["Dockerfile"]


def test_export_report_round_trips_byte_for_byte() -> None:
    from synth.util.atomic import dumps_json, dumps_plain_bytes

    text = (GOLDEN / "export-report.json").read_text(encoding="utf-8")
    report = ExportReport.from_json(json.loads(text))
    assert dumps_json(report.to_json()) == text
    assert dumps_plain_bytes(report.encodable()) == text.encode()  # the writer's encoder
    assert ExportReport.from_json(report.to_json()) == report
    assert report.counts.to_json() == json.loads(text)["counts"]


def test_export_report_with_a_bundle_round_trips() -> None:
    doc = load(GOLDEN / "export-report.json")
    doc["bundle"] = {"dir": "vendor", "files": 3, "bytes": 30, "offline": False,
                     "by_kind": {"deb": {"files": 1, "bytes": 10},
                                 "wheel": {"files": 2, "bytes": 20}},
                     "needs_network": ["3.1: git"]}
    assert validate(doc, "export-report") == []
    report = ExportReport.from_json(doc)
    assert report.bundle is not None and report.bundle.by_kind["wheel"].bytes == 20
    assert report.to_json() == doc


def test_export_report_is_made_from_the_plan() -> None:
    plan, distilled = read_plan_document(load(GOLDEN / "plan.json"), "plan.json")
    written = load(GOLDEN / "export-report.json")
    # plan.json leaves the outcomes to the export report; everything else comes from it.
    outcomes = ExportReport.from_json(written).commands
    assert ExportReport.of(plan, msgspec.structs.replace(distilled, outcomes=outcomes)
                           ).to_json() == written


def test_claims_keep_extra_fields_and_read_unknown_as_none() -> None:
    doc = {"python_path": "", "python_version": "3.11.2", "gpu_count": 2,
           "cuda_available": None, "notes": ["a", "b"], "native_modules_built": ["x._ext"],
           "trained_for": "3 epochs"}
    assert validate(doc, "claims") == []
    claims = Claims.from_json(doc)
    assert (claims.python_path, claims.python_version, claims.torch_version) == \
        ("", "3.11.2", None)
    assert claims.gpu_count == 2 and claims.cuda_available is None
    assert claims.notes == ("a", "b")
    assert claims.native_modules_built == ("x._ext",)
    assert claims.extra == {"trained_for": "3 epochs"}
    assert claims.to_json() == doc  # what the agent wrote, extra fields and all
    assert Claims.from_json(claims.to_json()) == claims
    golden = Claims.from_json(load(GOLDEN / "claims.json"))
    assert golden.python_path == "/opt/venv/bin/python" and golden.extra == {}


def test_a_count_written_with_a_fraction_is_not_a_count() -> None:
    """JSON Schema calls ``2.0`` an integer; the claims type, as REB, counts only an
    integer: such claims are refused (C5 fails on them), with the field named."""
    with pytest.raises(msgspec.ValidationError, match=r"\$\.gpu_count"):
        Claims.from_json({"gpu_count": 2.0})


@pytest.mark.parametrize("doc", [
    {"type": "command", "source": "bash-c", "session": "s", "seq": 3, "pid": 10, "ppid": 1,
     "command": "make -j2", "cwd": "/workspace", "cwd_end": "/tmp", "start": 1.5, "end": 2,
     "exit": 2, "pipestatus": [0, 2], "depth": 1, "parent_seq": 2, "incomplete": True},
    {"type": "command", "source": "synth", "session": "s", "seq": 1, "command": "pip freeze",
     "argv": ["pip", "freeze"], "cwd": None, "start": None, "end": None, "exit": None,
     "pipestatus": None, "timed_out": True, "phase": "synth"},
    {"type": "command", "source": "exec-trace", "session": "s", "seq": 9, "pid": 4,
     "path": "/usr/bin/gcc", "argv": ["gcc", "-c"], "command": "gcc -c", "cwd": "/",
     "start": 0, "end": 1, "exit": 0, "pipestatus": None, "pipeline": True},
])
def test_an_audit_record_read_equals_the_one_init_makes(doc: dict[str, Any]) -> None:
    """A line decoded into its source's type holds what the record made in code holds,
    typed alike, and is written back as it was read."""
    got = msgspec.json.decode(json.dumps(doc).encode(), type=LINE_TYPES[doc["source"]])
    made = AuditRecord(**msgspec.structs.asdict(got))
    assert isinstance(got, AuditRecord)
    assert msgspec.structs.astuple(got) == msgspec.structs.astuple(made)
    assert [type(v) for v in msgspec.structs.astuple(got)] == [
        type(v) for v in msgspec.structs.astuple(made)]
    assert type(got.seq) is int and got.command and isinstance(got.argv, tuple)
    assert type(got.start) is float or got.start is None
    assert got.to_json() == {**doc, "start": got.start, "end": got.end}


def test_verify_json_is_written_through_the_document_byte_for_byte() -> None:
    """verify's writer makes verify.json through VerifyDocument; its bytes are the golden
    file's (every section filled), and reading them back gives them again."""
    from synth import __version__
    from synth.util.atomic import dumps_json

    text = VERIFY_GOLDEN.read_text(encoding="utf-8")
    written = full_outcome().document
    assert written["synth_version"] == __version__
    assert dumps_json({**written, "synth_version": GOLDEN_VERSION}) == text
    assert validate(json.loads(text), "verify") == []
    doc = VerifyDocument.from_json(json.loads(text))
    assert dumps_json(doc.to_json()) == text
    assert VerifyDocument.from_json(doc.to_json()) == doc


def test_verify_document_types_what_readers_use() -> None:
    doc = VerifyDocument.from_json(load(VERIFY_GOLDEN))
    assert (doc.decides, doc.passed, doc.require) == ("rebuilt", False, "C1")
    assert doc.target == VerifyTarget("run", "/artifacts/runs/demo/r1", "demo",
                                      "/artifacts/exports/demo")
    assert sorted(doc.reports) == ["live", "rebuilt"] and doc.deciding is doc.reports["rebuilt"]
    c1 = doc.deciding.get("C1")
    assert c1 is not None and c1.summary == "fail: exit 1"
    assert doc.build is not None and (doc.build.image, doc.build.seconds) == \
        ("synth-rebuilt/demo:1", 12.5)
    assert doc.fidelity is not None and not doc.fidelity.reaches_live_level
    assert doc.fidelity.gaps == (VerifyGap("C1", "pass", "fail: exit 1"),)
    assert doc.fidelity_failed == "gap C1; 1 unexplained difference"
    fp = doc.fingerprint
    assert fp is not None and (fp.status, fp.equal, fp.unexplained) == \
        ("compared", False, ("files: changed /v/x.py",))
    assert fp.raw["differences"][0]["key"] == "/v/x.py"  # the free-form comparison, kept
    assert doc.export == VerifyExport("/artifacts/exports/demo", False,
                                      "no export of this run yet")
    assert doc.artifact_check == VerifyArtifactCheck(("Dockerfile: modified",), True, 1)
    assert doc.scores == {"other": {"score": 1}}


def test_a_minimal_verify_document_round_trips() -> None:
    """Only the required fields (a host verification, nothing rebuilt): nothing is added."""
    level = {"level": "C1", "status": "pass", "reason": None, "metrics": {}, "details": {},
             "seconds": 0.5}
    doc = full_verify({"target": {"kind": "task", "path": "/t", "task": "t"}, "reports": {
        "host": {"target": {"kind": "host"}, "levels": [level], "highest": "C1",
                 "passed_levels": ["C1"]}}})
    assert validate(doc, "verify") == []
    typed = VerifyDocument.from_json(doc)
    assert typed.to_json() == doc
    assert typed.build is None and typed.fingerprint is None and typed.export is None
    error = {**doc, "fingerprint": {"status": "error", "reason": "probe timed out"}}
    fp = VerifyDocument.from_json(error).fingerprint
    assert fp is not None and (fp.equal, fp.reason) == (None, "probe timed out")
    assert VerifyDocument.from_json(error).to_json() == error


def test_a_plan_serialises_its_fields() -> None:
    """BuildPlan.to_json is its fields, tuples as lists: for the golden plan and for one
    with native steps, carried files and more than one environment; read back, equal."""
    from synth.util.atomic import dumps_json

    text = (GOLDEN / "plan.json").read_text(encoding="utf-8")
    plan, report = read_plan_document(json.loads(text), "plan.json")
    assert dumps_json(plan_document(plan, report)) == text
    step = NativeStep(ref="3.0", tool="pip-local", argv=("pip", "install", "."),
                      cwd="/workspace", env=(("CC", "gcc"),), distribution="x==1",
                      check_sha256=("ab" * 32, "/data/f"))
    richer = msgspec.structs.replace(
        plan, native=(step, step), envs=(*plan.envs, *plan.envs),
        carried=(CarriedFile("/opt/v/x.py", "cd" * 32, "x", after_builds=True),))
    for p in (plan, richer):
        doc = p.to_json()
        assert doc["format"] == PLAN_FORMAT and doc["native"] == [
            {**msgspec.structs.asdict(s), "argv": list(s.argv),
             "env": [list(e) for e in s.env],
             "check_sha256": list(s.check_sha256) if s.check_sha256 else None}
            for s in p.native]
        assert read_plan_document(plan_document(p, report), "plan.json")[0] == p
