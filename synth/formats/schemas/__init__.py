"""JSON Schemas (draft 2020-12) of the JSON files synth writes (docs/formats.md).

The files here are generated from the types of :mod:`synth.formats` (:mod:`.generate`;
``python -m synth.formats.schemas --write`` rewrites them, and a unit test fails when one
is not what the types generate). They are published for readers and tools; synth itself
reads its files through the types (:mod:`synth.formats.store`).

``load_schema("run")`` returns the schema of ``run.json``; ``validate(doc, "run")`` the
list of errors (empty when the document is valid), each prefixed with its JSON path, as
jsonschema words them. Names: ``run``, ``audit-record`` (one line of ``audit.jsonl``),
``apt-state``, ``python-state``, ``diff-state``, ``env-state``, ``provenance-state``,
``claims``, ``verify``, ``verify-failed``, ``manifest``, ``export-report``, ``plan`` (an artifact's
``plan.json``), ``verification`` (an artifact's ``verification.json``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_NAMES = (
    "run", "audit-record", "apt-state", "python-state", "diff-state", "env-state",
    "provenance-state", "claims", "verify", "verify-failed", "manifest", "export-report", "plan",
    "verification",
)


def schema_text(name: str) -> str:
    """The published file of schema ``name``, as shipped."""
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema named {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


@cache
def _load(name: str) -> str:
    return schema_text(name)


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (a fresh copy)."""
    data: dict[str, Any] = json.loads(_load(name))
    return data


@cache
def _validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(name))


def validate(doc: Any, name: str) -> list[str]:
    """Validate ``doc`` against schema ``name`` with jsonschema: one message per error,
    ``$.path: message``, sorted by path (an empty list when it is valid). Where a value
    fits none of its alternatives (a nullable object), the message is the one of the
    alternative it came closest to, at the path of the value that is wrong in it."""
    from jsonschema.exceptions import best_match

    errors = [best_match([e]) if e.context else e for e in _validator(name).iter_errors(doc)]
    errors.sort(key=lambda e: list(map(str, e.absolute_path)))
    return [f"{e.json_path}: {e.message}" for e in errors]
