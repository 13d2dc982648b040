"""The published JSON Schemas (synth/formats/schemas/*.schema.json) are generated from the
types of synth.formats: each file must be what the types generate now, so a type and its
schema cannot drift apart (``python -m synth.formats.schemas --write`` rewrites them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from synth.formats import claims, manifest, run, verify
from synth.formats.schemas import SCHEMA_NAMES, load_schema, schema_text
from synth.formats.schemas.generate import SPECS, field_comments, generate, render
from synth.formats.store import FILE_KINDS

SCHEMAS = Path(claims.__file__).resolve().parent / "schemas"


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_published_schema_is_what_the_types_generate(name: str) -> None:
    assert schema_text(name) == render(name), (
        f"{name}.schema.json is not what synth.formats' types generate: run "
        "`python -m synth.formats.schemas --write` and say what changed in docs/formats.md")


def test_every_schema_is_generated_and_every_file_kind_has_one() -> None:
    files = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert files == set(SCHEMA_NAMES) == set(SPECS)
    assert {k.schema for k in FILE_KINDS} == set(SCHEMA_NAMES)
    for kind in FILE_KINDS:
        spec = SPECS[kind.schema]
        assert kind.model in (spec.root, *spec.defs.values()), kind.rel


def _objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [o for v in node for o in _objects(v)]
    if not isinstance(node, dict):
        return []
    own = [node] if "properties" in node else []
    return own + [o for v in node.values() for o in _objects(v)]


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schemas_speak_plain_draft_2020_12(name: str) -> None:
    """A nullable value is a type list, a one-value enum a const: no ``anyOf`` of a type
    and null (a validator would name the union, not the field), no OpenAPI keyword."""
    text = schema_text(name)
    assert '"discriminator"' not in text
    for obj in _objects(load_schema(name)):
        for prop in obj["properties"].values():
            branches = prop.get("anyOf", [])
            assert not (branches and all(set(b) == {"type"} for b in branches)), (name, prop)
            assert not (isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1)


def test_descriptions_come_from_the_docstrings_and_field_comments() -> None:
    schema = generate("manifest")
    assert schema["properties"]["files"]["description"] == (
        "sha256 of every file of the artifact, by its path.")
    assert schema["$defs"]["BundleSummary"]["description"].startswith("With `--bundle`:")
    assert field_comments(run.RunRecord)["secret_findings"].startswith("Paths of files")
    # A renamed field's comment describes the key it is written as.
    python = generate("python-state")["$defs"]["Distribution"]["properties"]
    assert python["version"]["description"].startswith("As written, null")


def test_a_rule_the_types_cannot_say_is_in_the_schema_and_enforced() -> None:
    level = generate("verify")["$defs"]["VerifyLevel"]
    assert level["allOf"] == verify.VerifyLevel.SCHEMA_EXTRA["allOf"]  # type: ignore[index]
    with pytest.raises(msgspec.ValidationError, match="`reason` must be a string"):
        msgspec.convert({"level": "C1", "status": "fail", "reason": None, "metrics": {},
                         "details": {}, "seconds": 0}, verify.VerifyLevel)


def test_the_claims_fields_are_the_schemas() -> None:
    """claims.json's fields are declared once for synth: claims.Claims has exactly the
    schema's properties (C5's own list, synth.pyramid.claims, is checked against the schema in
    tests/unit/test_verify_claims.py)."""
    typed = {f.encode_name for f in msgspec.structs.fields(claims.Claims)}
    assert typed == set(load_schema("claims")["properties"])
    assert load_schema("claims")["$defs"]["reb"]["required"] == [
        "python_path", "python_version", "torch_version", "cuda_available", "gpu_count",
        "ddp_expected_ok", "env_tool", "env_name", "notes"]


def test_every_field_of_a_file_is_a_property_of_its_schema() -> None:
    """A field added to a type is in its file's schema (the generator's own guarantee,
    checked once on the richest file)."""
    props = generate("manifest")["properties"]
    assert {f.encode_name for f in msgspec.structs.fields(manifest.Manifest)} == set(props)
