"""A replaced framework on a real engine (tasks/mixed-frameworks, ``replaced.sh``): the agent
installs and checks jax 0.7.1, a later install replaces it with 0.7.0 (which still runs the
code), and its claims still say 0.7.1. The export says so loudly (report and terminal), C5
names the stale claim on both images, and the rebuilt image reproduces the replaced jax
faithfully.

One run, one export — ``synth export`` as a user runs it, so its terminal output is read —
and one rebuild: ``verify --rebuild`` (the shared ``verified`` fixture) reuses that export.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "mixed-frameworks"
TRANSCRIPT = "replaced.sh"


@pytest.fixture(scope="module")
def exported(task_run: Callable[[str, str], Path]) -> tuple[Path, str]:
    """(run dir, what `synth export RUN` printed on the terminal); the export lands in the
    run's own ``export/``, where verify --rebuild finds and reuses it."""
    run_dir = task_run(TASK, TRANSCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "export", str(run_dir),
         "--artifacts", str(run_dir.parents[2])],  # runs live at <artifacts>/runs/<task>/<id>
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return run_dir, proc.stderr


@pytest.fixture(scope="module")
def outcome(exported: tuple[Path, str], verified: Callable[..., Any]) -> Any:
    return verified(TASK, TRANSCRIPT)


def _ref(report: dict[str, Any], command: str) -> str:
    refs = [c["ref"] for c in report["commands"] if c["command"] == command]
    assert len(refs) == 1, (command, [c["command"] for c in report["commands"]])
    return str(refs[0])


def levels(doc: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {r["level"]: r for r in doc["reports"][key]["levels"]}


def test_the_export_names_the_replaced_framework(exported: tuple[Path, str]) -> None:
    run_dir, terminal = exported
    report = json.loads((run_dir / "export" / "export-report.json").read_text())
    first = _ref(report, "/opt/venv/bin/pip install --find-links /synth/wheelhouse "
                         '-r requirements.txt torch==2.13.0+cpu "jax[cpu]==0.7.1"')
    later = _ref(report, '/opt/venv/bin/pip install "jax[cpu]==0.7.0"')
    line = (f"a later install replaced the task's main framework: audit {first} installed "
            f"`jax[cpu]==0.7.1`, audit {later} installed `jax[cpu]==0.7.0`; the final state "
            "has jax 0.7.0")
    assert line in report["warnings"], report["warnings"]
    # Only jax: torch is still the CPU build the agent asked for.
    assert [w for w in report["warnings"] if "main framework" in w] == [line]
    assert f"warning: {line}" in terminal, terminal
    manifest = json.loads((run_dir / "export" / "manifest.json").read_text())
    assert line in manifest["warnings"]
    lock = (run_dir / "export" / "requirements.lock").read_text()
    assert "\njax==0.7.0 " in lock and "\njaxlib==0.7.0 " in lock, lock


def test_c5_names_the_stale_claim_and_the_rebuild_is_faithful(outcome: Any) -> None:
    doc = outcome.document
    assert doc["export"]["reused"] is True, doc["export"]  # the one export, above
    for key in ("rebuilt", "live"):
        lv = levels(doc, key)
        assert [lv[x]["status"] for x in ("C0", "C0i", "C1")] == ["pass"] * 3, key
        c5 = lv["C5"]
        assert c5["status"] == "fail", (key, c5)
        assert c5["reason"] == "1 false claim(s): jax_version", (key, c5)
        assert c5["metrics"]["version_hallucinations"] == 1
        checks = {c["field"]: c for c in c5["details"]["checks"]}
        jax = checks["jax_version"]
        # The facts probe read jax from each image: 0.7.0 in both, the rebuilt as the live.
        assert (jax["claimed"], jax["observed"], jax["verdict"]) == (
            "0.7.1", "0.7.0", "hallucination"), (key, jax)
        torch = checks["torch_version"]
        assert (torch["observed"], torch["verdict"]) == ("2.13.0+cpu", "true"), (key, torch)
    md = (outcome.out_dir / "verify.md").read_text()
    assert 'hallucination: jax_version = "0.7.1" (observed "0.7.0")' in md
    fp = doc["fingerprint"]
    assert fp["status"] == "compared" and fp["packages_equal"] is True, fp["summary"]
    assert fp["packages"] == [] and fp["unexplained"] == [], fp["summary"]
    assert doc["fidelity"]["reaches_live_level"] is True, doc["fidelity"]


def test_the_stale_claim_fails_verify_only_when_c5_is_required(outcome: Any) -> None:
    """docs/verify.md, *Exit code*: C5 counts only with ``--require C5``. By default the run
    passes (the code runs, the rebuild is faithful); requiring C5 fails it on this very
    evidence."""
    assert outcome.options.require == "C1"
    assert outcome.exit_code == 0 and outcome.document["passed"] is True
    strict = dataclasses.replace(outcome, options=dataclasses.replace(outcome.options,
                                                                      require="C5"))
    assert strict.exit_code == 1
