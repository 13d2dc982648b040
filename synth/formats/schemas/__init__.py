"""JSON Schemas (draft 2020-12) of the JSON files synth writes (docs/formats.md).

``load_schema("run")`` returns the schema of ``run.json``; ``validate(doc, "run")`` the
list of errors (empty when the document is valid), each prefixed with its JSON path.
Names: ``run``, ``audit-record`` (one line of ``audit.jsonl``), ``apt-state``,
``python-state``, ``diff-state``, ``env-state``, ``provenance-state``, ``claims``,
``verify``, ``manifest``, ``export-report``, ``plan`` (an artifact's ``plan.json``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from synth.formats.schemas.fastcheck import Unsupported, compile_schema

SCHEMA_NAMES = (
    "run", "audit-record", "apt-state", "python-state", "diff-state", "env-state",
    "provenance-state", "claims", "verify", "manifest", "export-report", "plan",
)


@cache
def _load(name: str) -> str:
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema named {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (a fresh copy)."""
    data: dict[str, Any] = json.loads(_load(name))
    return data


@cache
def _validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(name))


@cache
def _fast(name: str) -> Callable[[Any], bool] | None:
    try:
        return compile_schema(load_schema(name))
    except Unsupported:
        return None


def fast_check(name: str) -> Callable[[Any], bool] | None:
    """The fast yes/no check of schema ``name`` (True: valid), or None where the schema is
    outside its subset. A False is not an error: :func:`validate` then says."""
    return _fast(name)


def validate(doc: Any, name: str) -> list[str]:
    """Validate ``doc`` against schema ``name``: one message per error, ``$.path: message``.

    A fast check (:mod:`synth.formats.schemas.fastcheck`) answers for valid documents; jsonschema
    gives the messages for the others."""
    fast = _fast(name)
    if fast is not None and fast(doc):
        return []
    errors = sorted(_validator(name).iter_errors(doc),
                    key=lambda e: list(map(str, e.absolute_path)))
    return [f"{e.json_path}: {e.message}" for e in errors]
