"""plan.json: the BuildPlan and DistillReport an artifact travels with (docs/formats.md).

The published schema says what the types do (the same fields; required those without a
default; closed), the document round-trips, a newer format is refused, and the store reads
it from an artifact."""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from synth.distill.steps import Step, StepBase
from synth.errors import InputFileError
from synth.formats import plan as model
from synth.formats.export_report import ExportReport
from synth.formats.schemas import load_schema, validate
from synth.formats.store import ArtifactDir
from synth.util.atomic import dumps_json, dumps_plain_bytes

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"

#: The types of plan.json's objects (each is its schema's ``$defs`` entry of that name).
DEFS: tuple[type[Any], ...] = (
    model.BuildPlan, model.DistillReport, model.AptPlan, model.DebRecord, model.PythonEnvPlan,
    model.NativeStep, model.SourcePlan, model.CommandOutcome, model.CarriedFile)


def golden_doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "plan.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("cls", DEFS, ids=lambda c: c.__name__)
def test_schema_matches_the_model(cls: type[Any]) -> None:
    schema = load_schema("plan")["$defs"][cls.__name__]
    fields = msgspec.structs.fields(cls)
    assert set(schema["properties"]) == {f.encode_name for f in fields}
    # Required: what has no default. Among them the formats, never the report's outcomes
    # (an artifact's plan.json leaves them to export-report.json) nor what format 1 did not
    # have (a native step's source).
    required = {f.encode_name for f in fields if f.required}
    assert set(schema.get("required", ())) == required
    assert "outcomes" not in required and "source" not in (
        required if cls is model.NativeStep else ())
    assert cls not in (model.BuildPlan, model.DistillReport) or "format" in required
    assert schema["additionalProperties"] is False


def test_document_round_trips() -> None:
    doc = golden_doc()
    assert validate(doc, "plan") == []
    plan, report = model.read_plan_document(doc, "plan.json")
    assert plan.native and report.warnings  # a real plan, not an empty one
    text = (GOLDEN / "plan.json").read_text(encoding="utf-8")
    assert dumps_json(model.plan_document(plan, report)) == text  # byte for byte


def _types_within(t: Any, seen: set[type[Any]]) -> set[Any]:
    """Every type a field of the Struct ``t`` (and of those its fields hold) may take."""
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        if t in seen:
            return set()
        seen.add(t)
        return set().union(*(_types_within(f.type, seen) for f in msgspec.structs.fields(t)))
    if typing.get_origin(t) is typing.Literal:  # its values' types
        return {type(v) for v in typing.get_args(t)}
    if typing.get_origin(t) is typing.Annotated:
        return _types_within(typing.get_args(t)[0], seen)
    args = [a for a in typing.get_args(t) if a is not Ellipsis]  # tuple[str, ...]
    return set().union(*(_types_within(a, seen) for a in args)) if args else {t}


def test_plan_document_is_plain_by_its_types() -> None:
    """plan.json and the export report are written by msgspec's encoder (dumps_plain_bytes),
    which writes the standard layout for every type but float: no field of the plan or
    the report may hold a float (nor Any, which could)."""
    seen: set[type[Any]] = set()
    leaves = set().union(*(_types_within(t, seen) for t in (
        model.BuildPlan, model.DistillReport, ExportReport)))
    assert model.CommandOutcome in seen and model.NativeStep in seen  # the walk went deep
    assert leaves <= {str, int, bool, type(None)}, leaves
    plan, report = model.read_plan_document(golden_doc(), "plan.json")
    text = (GOLDEN / "plan.json").read_text(encoding="utf-8")
    assert dumps_plain_bytes(model.plan_file(plan, report)) == text.encode("utf-8")


def test_artifact_plan_leaves_the_outcomes_to_the_export_report() -> None:
    """Format 2: the artifact's plan.json holds no per-command outcome (so it does not grow
    with the log, nor repeat export-report.json's records); ``--plan``'s document has them,
    and they are the export report's, record for record."""
    doc = golden_doc()
    assert doc["format"] == 2 and "outcomes" not in doc["report"]
    report_doc = json.loads((GOLDEN / "export-report.json").read_text(encoding="utf-8"))
    plan, report = model.read_plan_document(doc, "plan.json")
    assert report.outcomes == ()
    full = ExportReport.from_json(report_doc)
    with_outcomes = json.loads(dumps_json(model.plan_document(
        plan, msgspec.structs.replace(report, outcomes=full.commands), outcomes=True)))
    assert validate(with_outcomes, "plan") == []
    assert with_outcomes["report"]["outcomes"] == report_doc["commands"]
    assert model.read_plan_document(with_outcomes, "--plan")[1].outcomes == full.commands


def test_format_1_with_its_outcomes_is_still_read() -> None:
    """An artifact exported before format 2 repeats the outcomes in plan.json: read alike."""
    doc = golden_doc()
    report_doc = json.loads((GOLDEN / "export-report.json").read_text(encoding="utf-8"))
    doc["format"] = doc["plan"]["format"] = doc["report"]["format"] = 1
    doc["report"]["outcomes"] = report_doc["commands"]
    assert validate(doc, "plan") == []
    plan, report = model.read_plan_document(doc, "plan.json")
    assert msgspec.structs.replace(plan, format=model.PLAN_FORMAT) == model.read_plan_document(
        golden_doc(), "plan.json")[0]
    assert report.outcomes == ExportReport.from_json(report_doc).commands


@pytest.mark.parametrize("where", [(), ("plan",), ("report",)])
def test_newer_format_is_refused(where: tuple[str, ...]) -> None:
    doc = golden_doc()
    holder = doc
    for key in where:
        holder = holder[key]
    holder["format"] = model.PLAN_FORMAT + 1
    with pytest.raises(InputFileError, match="newer than this synth reads"):
        model.read_plan_document(doc, "plan.json")


def test_store_reads_plan_json(tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    assert ArtifactDir(art).plan() is None  # an artifact from before plan.json
    (art / "plan.json").write_text(json.dumps(golden_doc()))
    loaded = ArtifactDir(art).plan()
    assert loaded is not None and loaded.task == "demo"
    broken = copy.deepcopy(golden_doc())
    del broken["plan"]["native"]
    (art / "plan.json").write_text(json.dumps(broken))
    with pytest.raises(InputFileError, match=r"plan\.json.*native"):
        ArtifactDir(art).plan()


def test_step_is_a_closed_union_of_every_step_type() -> None:
    assert set(typing.get_args(Step)) == set(StepBase.__subclasses__())
    # Final, too: distill indexes steps by their exact type (distill.common.StepIndex).
    assert not any(kind.__subclasses__() for kind in StepBase.__subclasses__())


def test_plan_json_does_not_grow_with_the_log(tmp_path: Path) -> None:
    """A run of 2,000 more read-only commands gives the same plan.json, byte for byte: a
    long log's artifact stays within plan.json's read cap (``synth diff`` reads it), and
    its export report lists every command."""
    from distill_runs import NO_ENGINE, cmd, make_run_dir
    from test_render_golden import fake_locker

    from synth.config import Settings
    from synth.export.artifact import ExportOptions, export_run

    setup = [cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install numpy")]
    texts, counts = [], []
    for name, extra in (("short", 1), ("long", 2001)):
        run_dir = make_run_dir(tmp_path / name, setup + [cmd("ls -la")] * extra)
        art = export_run(ExportOptions(
            run_dir, locker=fake_locker, ask_live=False),
            Settings.load(artifacts_dir=tmp_path / name), NO_ENGINE).artifact_dir
        texts.append((art / "plan.json").read_bytes())
        counts.append(len(json.loads((art / "export-report.json").read_bytes())["commands"]))
        assert ArtifactDir(art).plan() is not None
    assert texts[0] == texts[1]
    assert counts == [3, 2003]
