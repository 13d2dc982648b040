"""Verdicts on tasks/optional-extras (real engine): optional imports do not fail a working
setup, an import that raises is named with its file:line, and the export carries what
patched.sh changed (a file in site-packages, a source edit) so the rebuilt image fails alike.

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
    # C5 checks env_tool and env_name against /opt/venv (a venv: true) and lists the
    # free text it did not check.
    c5 = levels(doc, "rebuilt")["C5"]
    env = {c["field"]: c["verdict"] for c in c5["details"]["checks"]
           if c["kind"] == "environment"}
    assert env == {"env_tool": "true", "env_name": "true"}, c5["details"]["checks"]
    assert {u["field"] for u in c5["details"]["not_checked"]} == {"notes"}
    assert "not checked: notes" in md
    # This real export is what exporting again would write: a second verify reuses it.
    from synth.verify.rebuild import reusable_export

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


def test_the_export_carries_what_the_agent_changed(verified: Callable[..., Any]) -> None:
    """patched.sh's `sed -i` in site-packages is carried (hash-checked after the lock), its
    source edit is in source/ and source.patch, its no-op ninja build is dropped: the rebuilt
    image fails the import check exactly as the live one, and fidelity finds no difference."""
    outcome = verified(TASK, "patched.sh")
    doc = outcome.document
    assert levels(doc, "rebuilt")["C0i"]["status"] == "fail"
    assert levels(doc, "rebuilt")["C0i"]["reason"] == levels(doc, "live")["C0i"]["reason"]
    fp = doc["fingerprint"]
    assert fp["patched"] == [] and fp["unexplained"] == [], fp
    assert doc["fidelity"]["reaches_live_level"] is True
    assert outcome.exit_code == 1  # the environment is broken, live and rebuilt alike
    art = Path(doc["build"]["artifact_dir"])
    attrs = "/opt/venv/lib/python3.11/site-packages/attrs/__init__.py"
    carried = (art / "carried" / attrs.lstrip("/")).read_text()
    assert carried.startswith('raise RuntimeError("attrs was patched by the agent")')
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["carried"] == [attrs] and manifest["missing"] == []
    src = manifest["source"]
    assert (src["dirty"], src["patch"], src["changed"], src["from_final_workspace"]) == (
        True, "source.patch", ["M\trequirements-serve.txt"], True)
    assert (art / "source" / "requirements-serve.txt").read_text().startswith(
        "# flask pinned by the agent\n")
    assert "+# flask pinned by the agent\n" in (art / "source.patch").read_text()
    dockerfile = (art / "Dockerfile").read_text()
    assert f'COPY ["carried{attrs}", "{attrs}"]' in dockerfile
    assert "sha256sum -c /tmp/synth/carried.sha256" in dockerfile
    assert "ninja" not in dockerfile.split("requirements.lock", 1)[1]
    report = json.loads((art / "export-report.json").read_text())
    ninja = [c for c in report["commands"] if c["command"] == "/opt/venv/bin/ninja"]
    assert [(c["decision"], c["reason"]) for c in ninja] == [
        ("dropped", "built nothing: no file under /workspace/native changed in the final "
         "state")]
