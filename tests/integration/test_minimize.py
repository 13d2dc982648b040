"""``synth minimize`` on a real engine: a planted package nothing imports is left out, the
rest is kept, the minimized artifact passes ``verify --rebuild``, and a second run in the
same folder replays its trials without a rebuild."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.formats.task import load_task
from synth.record.agents import ReplayAgent
from synth.record.runner import RunOptions, run_session
from synth.verify.command import VerifyOptions, verify
from synth.verify.minimize import MinimizeOptions, minimize

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = Path(__file__).resolve().parents[2] / "tasks" / "extras-only"
PLANTED = "/opt/venv/bin/pip install tabulate==0.9.0"


def test_a_planted_package_is_left_out_and_the_rest_kept(
        engine: Any, ca_bundle: Path | None, tmp_path: Path) -> None:
    good = (TASK / "agents" / "good.sh").read_text()
    script = tmp_path / "planted.sh"
    script.write_text(good.replace("/opt/venv/bin/pip install '.[yaml]'\n",
                                   "/opt/venv/bin/pip install '.[yaml]'\n" + PLANTED + "\n"))
    settings = Settings.load(artifacts_dir=tmp_path / "artifacts", ca_bundle=ca_bundle)
    run = run_session(RunOptions(task=load_task(TASK), agent=ReplayAgent(script), timeout=600),
                      settings, engine, say=lambda _m: None)
    try:
        assert run.status == "succeeded"
        said: list[str] = []
        result = minimize(MinimizeOptions(run.run_dir, budget=10), settings, engine, said.append)
        doc = result.document
        assert doc["candidates"] == ["python:pyyaml", "python:tabulate", "python:cfgreport"]
        assert "python:tabulate" in doc["removed"] and doc["kept"] == ["python:pyyaml"]
        assert doc["needed"] == ["python:pyyaml"] and doc["required"] == []
        assert doc["complete"] and doc["original"]["levels"]["C1"] == "pass"
        assert any("needed: C1 no longer pass" in line for line in said)
        assert result.artifact is not None
        lock = (result.artifact / "requirements.lock").read_text()
        pins = [line for line in lock.splitlines() if not line.startswith(("#", " "))]
        assert any(p.startswith("pyyaml==") for p in pins), pins
        assert not [p for p in pins if p.startswith("tabulate")], pins
        # Its header's regenerate command says what was left out.
        assert "--without python:tabulate" in lock.splitlines()[1], lock.splitlines()[:2]
        assert "left out on request" in (result.artifact / "export-report.md").read_text()
        assert json.loads((result.out_dir / "minimize.json").read_text()) == json.loads(
            json.dumps(doc))
        # the minimized artifact passes a verification from scratch
        outcome = verify(VerifyOptions(target=str(result.artifact), rebuild=True,
                                       out_dir=tmp_path / "verify"), settings, engine,
                         say=lambda _m: None)
        assert outcome.passed
        assert outcome.build is not None and outcome.build.no_cache
        engine.remove_image(outcome.build.image)
        # resumed: every trial is read back, none rebuilt
        again: list[str] = []
        second = minimize(MinimizeOptions(run.run_dir, budget=1), settings, engine,
                          again.append)
        assert second.document["removed"] == doc["removed"]
        assert second.document["rebuilds"] == 0
        assert not any(line.startswith("trial ") for line in again)
    finally:
        if run.live_image:
            engine.remove_image(run.live_image)
