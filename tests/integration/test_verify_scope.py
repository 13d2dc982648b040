"""Verdicts on tasks/optional-extras (real engine): optional imports do not fail a working
setup, an import that raises is named with its file:line, a file patched in site-packages is
named with its distribution.

The good.sh verification (with its one rebuild) is the shared ``verified`` fixture's, the
same one test_verify_tasks uses; patched.sh is verified once with its rebuild (a ~20 s
build: a venv and attrs), shared by the two tests that read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "optional-extras"


def levels(doc: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {r["level"]: r for r in doc["reports"][key]["levels"]}


def test_optional_imports_leave_a_working_setup_passing(verified: Callable[..., Any]) -> None:
    outcome = verified(TASK, "good.sh")
    doc = outcome.document
    assert outcome.exit_code == 0, doc["fidelity"]
    for key in ("rebuilt", "live"):
        lv = levels(doc, key)
        assert [lv[x]["status"] for x in ("C0", "C0i", "C1")] == ["pass"] * 3, key
        c0 = lv["C0"]
        m = c0["metrics"]
        assert m["missing_statements"] == 0 and m["missing_statement_ratio"] == 0.0
        # ResearchEnvBench's metric counts every imported top-level module: not zero here.
        assert m["researchenvbench_missing_top_modules"] >= 5
        assert m["researchenvbench_missing_ratio"] > 0
        classes = {x["module"]: x["class"] for x in c0["details"]["optional_missing"]}
        assert classes["h5py"] == "extra"  # tinystats/io.py, the io extra
        assert classes["matplotlib.pyplot"] == "extra"  # inside plot(), the viz extra
        assert classes["ujson"] == "guarded"
        assert classes["flask"] == classes["wandb"] == "out_of_scope"
        hints = {x["module"]: x for x in c0["details"]["optional_missing"]}
        assert hints["h5py"]["distribution_source"] == "declared in pyproject.toml [io]"
        assert c0["details"]["scope"]["include"] == ["tinystats/*", "run.py"]
        c0i = lv["C0i"]
        assert c0i["metrics"]["modules"] == 5  # tinystats, .core, .fast, .io, run
        assert [r["module"] for r in c0i["details"]["optional_failed"]] == ["tinystats.io"]
    assert doc["fidelity"]["reaches_live_level"] is True
    assert doc["fingerprint"]["unexplained"] == []
    record = json.loads((Path(doc["build"]["artifact_dir"]) / "verification.json").read_text())
    assert record["passed"] is True and record["levels"]["C0i"] == "pass"
    md = (outcome.out_dir / "verify.md").read_text()
    assert "| C0i | imports run | pass | pass |" in md
    assert "ResearchEnvBench missing top-level modules" in md
    # C5 lists the claims fields it did not check (the descriptive ones).
    c5 = levels(doc, "rebuilt")["C5"]
    assert {u["field"] for u in c5["details"]["not_checked"]} == {"env_tool", "env_name",
                                                                  "notes"}
    assert "not checked: env_name, env_tool, notes" in md
    # This real export is what exporting again would write: a second verify reuses it.
    from synth.verify_rebuild import reusable_export

    assert doc["export"]["artifact_dir"] == doc["build"]["artifact_dir"]
    run_dir = Path(doc["target"]["path"])
    found, why = reusable_export(run_dir)
    assert found == Path(doc["build"]["artifact_dir"]), why


def test_an_import_that_raises_is_named(verified: Callable[..., Any]) -> None:
    outcome = verified(TASK, "patched.sh")
    lv = levels(outcome.document, "live")
    assert lv["C0"]["status"] == "pass"  # attrs is on disk: the static check cannot see it
    c0i = lv["C0i"]
    assert c0i["status"] == "fail"
    failed = {r["module"]: r for r in c0i["details"]["failed"]}
    assert set(failed) == {"run", "tinystats", "tinystats.core", "tinystats.fast",
                           "tinystats.io"}
    pkg = failed["tinystats"]
    assert pkg["error_class"] == "RuntimeError"
    assert pkg["message"] == "attrs was patched by the agent"
    assert pkg["where"] == "/opt/venv/lib/python3.11/site-packages/attrs/__init__.py:1"
    assert c0i["reason"] == ("run raises RuntimeError: attrs was patched by the agent at "
                             "/opt/venv/lib/python3.11/site-packages/attrs/__init__.py:1 "
                             "(and 4 more)")
    assert lv["C1"]["status"] == "fail"  # levels are independent: C1 ran too
    assert outcome.exit_code == 1


def test_a_file_patched_in_site_packages_is_named(verified: Callable[..., Any]) -> None:
    """The export does not carry the agent's `sed -i` in site-packages: the rebuilt image
    imports what the live one cannot, and fidelity names the patched file and fails."""
    outcome = verified(TASK, "patched.sh")
    doc = outcome.document
    assert levels(doc, "rebuilt")["C0i"]["status"] == "pass"
    fp = doc["fingerprint"]
    assert [(c["key"], c["b"]) for c in fp["patched"]] == [("attrs: attrs/__init__.py",
                                                            "as RECORD")]
    assert any(line.startswith("patched: patched attrs: attrs/__init__.py")
               for line in fp["unexplained"]), fp["unexplained"]
    fid = doc["fidelity"]
    assert fid["reaches_live_level"] is False and fid["gaps"] == []
    assert outcome.exit_code == 1 and doc["passed"] is False
    md = (outcome.out_dir / "verify.md").read_text()
    assert "DIFFERS patched: patched attrs: attrs/__init__.py" in md
    assert "FAILED: the rebuilt image differs from the live one (differs: patched: " in md
    record = json.loads((Path(doc["build"]["artifact_dir"]) / "verification.json").read_text())
    assert record["passed"] is False and record["fidelity"] is False
