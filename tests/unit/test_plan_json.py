"""plan.json: the BuildPlan and DistillReport an artifact travels with (docs/formats.md).

The schema is checked against the model (same fields, all required), the document
round-trips, a newer format is refused, and the store reads it from an artifact."""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from synth import model
from synth.atomic import dumps_json
from synth.distill.steps import Step, StepBase
from synth.errors import InputFileError
from synth.schemas import load_schema, validate
from synth.store import ArtifactDir

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"

#: schema $defs name -> the model class it describes, and keys beyond the dataclass fields.
DEFS: dict[str, tuple[type[Any], set[str]]] = {
    "plan": (model.BuildPlan, {"format"}),
    "report": (model.DistillReport, {"format"}),
    "apt": (model.AptPlan, set()),
    "deb": (model.DebRecord, set()),
    "env": (model.PythonEnvPlan, set()),
    "native": (model.NativeStep, set()),
    "source": (model.SourcePlan, set()),
    "outcome": (model.CommandOutcome, set()),
}


def golden_doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / "plan.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", sorted(DEFS))
def test_schema_matches_the_model(name: str) -> None:
    cls, extra = DEFS[name]
    schema = load_schema("plan")["$defs"][name]
    fields = {f.name for f in dataclasses.fields(cls)} | extra
    assert set(schema["properties"]) == fields
    assert set(schema["required"]) == fields
    assert schema["additionalProperties"] is False


def test_document_round_trips() -> None:
    doc = golden_doc()
    assert validate(doc, "plan") == []
    plan, report = model.read_plan_document(doc, "plan.json")
    assert plan.native and report.outcomes  # a real plan, not an empty one
    text = (GOLDEN / "plan.json").read_text(encoding="utf-8")
    assert dumps_json(model.plan_document(plan, report)) == text  # byte for byte


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
    assert loaded is not None and loaded[0].task == "demo"
    broken = copy.deepcopy(golden_doc())
    del broken["plan"]["native"]
    (art / "plan.json").write_text(json.dumps(broken))
    with pytest.raises(InputFileError, match=r"plan\.json.*native"):
        ArtifactDir(art).plan()


def test_step_is_a_closed_union_of_every_step_type() -> None:
    assert set(typing.get_args(Step)) == set(StepBase.__subclasses__())
