"""The published JSON Schemas, made from the types of :mod:`synth.formats`.

msgspec writes each type's schema (``msgspec.json.schema_components``); this module puts the
file's own type at the top and its parts under ``$defs``, adds the descriptions (a class's
docstring, a field's ``#:`` comment) and the rules a type states in ``SCHEMA_EXTRA``, and
writes the result in the plain draft 2020-12 vocabulary: a nullable type as ``"type":
[..., "null"]``, a single-value enum as ``const``, a tagged union (audit.jsonl's command
records) as ``if``/``then`` per tag, so that a validator names the field that is wrong.
``python -m synth.formats.schemas --write`` writes the files; ``--check`` says which differ.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import msgspec

from synth.formats.audit import (
    AUDIT_FORMAT,
    LINE_TYPES,
    AuditHeader,
    AuditUnparsed,
    HookRecord,
    ShellRecord,
    SynthRecord,
    TraceRecord,
)
from synth.formats.claims import Claims, RebReport
from synth.formats.export_report import EXPORT_REPORT_FORMAT, ExportReport
from synth.formats.manifest import MANIFEST_FORMAT, Manifest
from synth.formats.plan import PLAN_FORMAT, PlanDocument
from synth.formats.run import RUN_FORMAT, RunRecord
from synth.formats.state import (
    APT_STATE_FORMAT,
    DIFF_STATE_FORMAT,
    ENV_STATE_FORMAT,
    PROVENANCE_STATE_FORMAT,
    PYTHON_STATE_FORMAT,
    AptState,
    DiffState,
    EnvState,
    Provenance,
    PythonState,
)
from synth.formats.verification import VERIFICATION_FORMAT, VerificationRecord
from synth.formats.verify import (
    KNOWN_SCORES,
    VERIFY_FAILED_FORMAT,
    VERIFY_FORMAT,
    VerifyDocument,
    VerifyFailure,
)
from synth.util.atomic import dumps_json

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_REF = "#/$defs/{name}"


@dataclass(frozen=True)
class Spec:
    """One published schema: its file's type, title and description; more types it
    names under ``$defs`` (by the name readers look them up by)."""

    root: Any
    title: str
    description: str
    defs: Mapping[str, Any] = field(default_factory=dict)


SPECS: Mapping[str, Spec] = {
    "run": Spec(RunRecord, f"synth run.json (format {RUN_FORMAT})",
                "The identity and outcome of one run (docs/formats.md)."),
    "audit-record": Spec(
        None, f"synth audit.jsonl record (format {AUDIT_FORMAT})",
        "One line of audit.jsonl: the header, a command record of any source, or an "
        "unparsed raw line (docs/formats.md).",
        {cls.__name__: cls for cls in (AuditHeader, AuditUnparsed, ShellRecord, HookRecord,
                                       SynthRecord, TraceRecord)}),
    "apt-state": Spec(AptState, f"synth state/apt.json (format {APT_STATE_FORMAT})",
                      "Debian packages: base vs final, added / changed / removed "
                      "(docs/formats.md)."),
    "python-state": Spec(PythonState, f"synth state/python.json (format {PYTHON_STATE_FORMAT})",
                         "Every Python interpreter and environment, with its distributions "
                         "(docs/formats.md)."),
    "diff-state": Spec(DiffState, f"synth state/diff.json (format {DIFF_STATE_FORMAT})",
                       "docker diff of the session container, noise apart (docs/formats.md)."),
    "env-state": Spec(EnvState, f"synth state/env.json (format {ENV_STATE_FORMAT})",
                      "Environment variables the agent left persisted (docs/formats.md)."),
    "provenance-state": Spec(
        Provenance, f"synth state/provenance.json (format {PROVENANCE_STATE_FORMAT})",
        "When each change of the session happened (mtimes read in the container) and the "
        "setuid/setgid files the agent added: the evidence for unaudited changes "
        "(docs/security.md)."),
    "claims": Spec(
        Claims, "claims.json (ResearchEnvBench report.json compatible)",
        "The agent's self-report. Every known field is optional and may be null (unknown); "
        "extra fields are allowed. Profiles ($defs) add rules for a kind of task: `reb`, "
        "ResearchEnvBench's report.json (its required fields and allowed values), used for "
        "tasks imported from REB.", {"reb": RebReport}),
    "verify": Spec(VerifyDocument, f"synth verify.json (format {VERIFY_FORMAT})",
                   "The report of synth verify (docs/verify.md).",
                   {cls.__name__: cls for cls in KNOWN_SCORES.values()}),
    "verify-failed": Spec(VerifyFailure, f"synth verify-failed.json (format "
                          f"{VERIFY_FAILED_FORMAT})",
                          "A synth verify --rebuild that stopped before a verdict: the "
                          "artifact did not build (docs/verify.md)."),
    "manifest": Spec(Manifest, f"synth export manifest.json (format {MANIFEST_FORMAT})",
                     "Identity, hashes and build needs of an exported artifact "
                     "(docs/export.md)."),
    "export-report": Spec(ExportReport,
                          f"synth export-report.json (format {EXPORT_REPORT_FORMAT})",
                          "Every audited command with its decision and reason "
                          "(docs/export.md)."),
    "plan": Spec(PlanDocument, f"synth plan.json (format {PLAN_FORMAT})",
                 "An artifact's plan.json: the frozen BuildPlan and DistillReport it was "
                 "rendered from (docs/formats.md)."),
    "verification": Spec(VerificationRecord,
                         f"synth verification.json (format {VERIFICATION_FORMAT})",
                         "What synth verify --rebuild leaves in the artifact folder it "
                         "rebuilt; it travels with the artifact (docs/verify.md, "
                         "docs/export.md)."),
}


def generate(name: str) -> dict[str, Any]:
    """The schema ``name`` as the types make it."""
    spec = SPECS[name]
    types = [t for t in (spec.root, *spec.defs.values()) if t is not None]
    (top, *_), components = msgspec.json.schema_components(types, ref_template=_REF)
    classes = _classes(types)
    for cls_name, schema in components.items():
        _describe(schema, classes.get(cls_name))
        if "description" in schema:
            schema["description"] = prose(schema["description"])
    renamed = {cls.__name__: key for key, cls in spec.defs.items() if key != cls.__name__}
    defs = {renamed.get(k, k): v for k, v in components.items()}
    if spec.root is not None:  # the file's own object at the top, not a reference to it
        top = defs.pop(top["$ref"].rsplit("/", 1)[1])
        top.pop("title", None)
    else:  # audit.jsonl: a line is one of three records
        top = _audit_line()
    doc = {"$schema": DRAFT, "$id": f"https://synth.invalid/schemas/{name}.schema.json",
           "title": spec.title, "description": spec.description,
           **{k: v for k, v in top.items() if k != "description"}}
    if defs:
        doc["$defs"] = defs
    plain: dict[str, Any] = _plain(_renamed_refs(doc, renamed))
    return plain


def render(name: str) -> str:
    """The published file of schema ``name`` (canonical JSON, as synth writes files)."""
    return dumps_json(generate(name))


# --- descriptions ----------------------------------------------------------------------------

def _classes(types: list[Any]) -> dict[str, type]:
    """Every Struct class among ``types`` and their fields' types, by name."""
    out: dict[str, type] = {}

    def visit(t: Any) -> None:
        for arg in typing.get_args(t):
            visit(arg)
        if isinstance(t, type) and issubclass(t, msgspec.Struct) and t.__name__ not in out:
            out[t.__name__] = t
            for f in msgspec.structs.fields(t):
                visit(f.type)

    for t in types:
        visit(t)
    return out


def _describe(schema: dict[str, Any], cls: type | None) -> None:
    """The class's ``SCHEMA_EXTRA`` and its fields' ``#:`` comments, into its schema."""
    if cls is None:
        return
    extra = getattr(cls, "SCHEMA_EXTRA", None)
    if extra:
        schema.update(extra)
    comments = field_comments(cls)
    props = schema.get("properties") or {}
    for f in msgspec.structs.fields(cls):
        prop = props.get(f.encode_name)
        if prop is None:
            continue
        if typing.get_origin(f.type) is typing.Annotated:  # msgspec lets its own keys win
            for meta in f.type.__metadata__:
                prop.update(getattr(meta, "extra_json_schema", None) or {})
        text = comments.get(f.name)
        if text and "description" not in prop:
            prop["description"] = prose(text)


_ROLE = re.compile(r":\w+:`~?([^`]+)`")


def prose(text: str) -> str:
    """A docstring or comment as one line of Markdown-ish text: reST's ````x```` and
    ``:role:`x``` as ```x```."""
    return _ROLE.sub(r"`\1`", " ".join(text.split()).replace("``", "`"))


_FIELD = re.compile(r"^    (\w+)\s*:")


@cache
def field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment above each field of ``cls`` and of the classes it inherits from."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not issubclass(klass, msgspec.Struct) or klass is msgspec.Struct:
            continue
        comment: list[str] = []
        for line in inspect.getsource(klass).splitlines():
            text = line.strip()
            if text.startswith("#:"):
                comment.append(text[2:].strip())
                continue
            match = _FIELD.match(line)
            if match and comment:
                out[match.group(1)] = " ".join(comment)
            comment = []
    return out


# --- the plain vocabulary --------------------------------------------------------------------

#: Keywords that only constrain a value of one JSON type.
_TYPED = {
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "string": {"pattern", "minLength", "maxLength", "format"},
    "array": {"items", "prefixItems", "minItems", "maxItems"},
    "object": {"properties", "required", "additionalProperties", "propertyNames",
               "minProperties", "maxProperties"},
    "boolean": set(), "null": set(),
}


def _plain(node: Any) -> Any:
    """``node`` with nullable unions as type lists, one-value enums as ``const``, and
    empty ``required`` lists left out."""
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _plain(v) for k, v in node.items()}
    if node.get("required") == []:
        del node["required"]
    if isinstance(node.get("enum"), list) and len(node["enum"]) == 1:
        node["const"] = node.pop("enum")[0]
    merged = _merged_union(node.get("anyOf"))
    if merged is not None:
        del node["anyOf"]
        node = {**merged, **node}
    return node


def _merged_union(branches: Any) -> dict[str, Any] | None:
    """``anyOf`` branches as one schema, where that says the same: each branch one JSON
    type (or ``null`` with enums of values) whose other keywords apply to that type only."""
    if not isinstance(branches, list) or not all(isinstance(b, dict) for b in branches):
        return None
    if all(set(b) <= {"enum", "const"} or b == {"type": "null"} for b in branches):
        values: list[Any] = []
        for b in branches:
            values += [None] if b == {"type": "null"} else b.get("enum", [b.get("const")])
        return {"enum": values}
    types: list[str] = []
    merged: dict[str, Any] = {}
    for b in branches:
        kind = b.get("type")
        rest = set(b) - {"type"}
        if not isinstance(kind, str) or kind in types or not rest <= _TYPED.get(kind, set()):
            return None
        if rest & set(merged):
            return None
        types.append(kind)
        merged.update({k: b[k] for k in rest})
    return {"type": types, **merged}


def _renamed_refs(node: Any, renamed: Mapping[str, str]) -> Any:
    if not renamed:
        return node
    if isinstance(node, list):
        return [_renamed_refs(v, renamed) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _renamed_refs(v, renamed) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[1] in renamed:
        out["$ref"] = _REF.format(name=renamed[ref.rsplit("/", 1)[1]])
    return out


def _audit_line() -> dict[str, Any]:
    """One line of audit.jsonl: its ``type`` picks the header, an unparsed line or a
    command record, whose ``source`` picks the command's schema (as the store reads it:
    :data:`synth.formats.audit.LINE_TYPES`), each an ``if``/``then`` so that a validator
    names the field that is wrong."""
    by_type = [("header", "AuditHeader"), ("unparsed", "AuditUnparsed")]
    rules: list[dict[str, Any]] = [
        {"if": {"properties": {"type": {"const": kind}}}, "then": {"$ref": _REF.format(name=n)}}
        for kind, n in by_type]
    rules.append({"if": {"properties": {"type": {"const": "command"}}},
                  "then": {"required": ["source"]}})
    rules += [{"if": {"properties": {"type": {"const": "command"}, "source": {"const": tag}},
                      "required": ["source"]},
               "then": {"$ref": _REF.format(name=cls.__name__)}}
              for tag, cls in LINE_TYPES.items()]
    return {"type": "object", "required": ["type"],
            "properties": {"type": {"enum": ["header", "command", "unparsed"]},
                           "source": {"enum": list(LINE_TYPES)}},
            "allOf": rules}
