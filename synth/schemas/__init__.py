"""JSON Schemas (draft 2020-12) of the JSON files synth writes (docs/formats.md).

``load_schema("run")`` returns the schema of ``run.json``; ``validate(doc, "run")`` the
list of errors (empty when the document is valid), each prefixed with its JSON path.
Names: ``run``, ``audit-record`` (one line of ``audit.jsonl``), ``apt-state``,
``python-state``, ``diff-state``, ``env-state``, ``claims``, ``verify``, ``manifest``,
``export-report``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_NAMES = (
    "run", "audit-record", "apt-state", "python-state", "diff-state", "env-state",
    "claims", "verify", "manifest", "export-report",
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


def validate(doc: Any, name: str) -> list[str]:
    """Validate ``doc`` against schema ``name``: one message per error, ``$.path: message``."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema(name))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{e.json_path}: {e.message}" for e in errors]
