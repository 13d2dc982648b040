"""Every JSON file of a real run, its export and its verification validates against the
schemas in synth/schemas (the session's shared numpy-ext good.sh run and rebuild)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synth.formats.schemas import validate

pytestmark = [pytest.mark.docker, pytest.mark.slow]

STATE = {"apt.json": "apt-state", "python.json": "python-state", "diff.json": "diff-state",
         "env.json": "env-state"}


def check(path: Path, name: str) -> None:
    errors = validate(json.loads(path.read_text(encoding="utf-8")), name)
    assert errors == [], f"{path} against {name}.schema.json:\n" + "\n".join(errors)


def test_real_run_export_and_verify_validate(verified: Callable[..., Any]) -> None:
    outcome = verified("numpy-ext", "good.sh")
    doc = outcome.document
    assert validate(doc, "verify") == []
    check(outcome.out_dir / "verify.json", "verify")

    run_dir = Path(doc["target"]["path"])
    check(run_dir / "run.json", "run")
    lines = (run_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for i, line in enumerate(lines):
        errors = validate(json.loads(line), "audit-record")
        assert errors == [], f"audit.jsonl line {i + 1}:\n" + "\n".join(errors)
    for file, name in STATE.items():
        check(run_dir / "state" / file, name)
    if (run_dir / "claims.json").is_file():
        check(run_dir / "claims.json", "claims")

    artifact = Path(doc["target"]["artifact_dir"])
    check(artifact / "manifest.json", "manifest")
    check(artifact / "export-report.json", "export-report")
    if (artifact / "claims.json").is_file():
        check(artifact / "claims.json", "claims")
