"""Real-engine steps the end-to-end tests share: a transcript replayed and verified, an
artifact rebuilt offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.formats.task import Task
from synth.record.agents import ReplayAgent
from synth.record.runner import RunOptions, RunResult, run_session
from synth.verify.command import VerifyOptions, verify
from synth.verify.outcome import VerifyOutcome


def replay_and_verify(task: Task, script: Path, settings: Settings, engine: Any,
                      out_dir: Path, made: list[str]) -> tuple[RunResult, VerifyOutcome]:
    """``script`` replayed as ``task``'s agent (the run must succeed), then ``verify
    --rebuild --live`` of the run into ``out_dir``; the live and rebuilt images are added to
    ``made``, for removal."""
    result = run_session(RunOptions(task=task, agent=ReplayAgent(script), timeout=900),
                         settings, engine, say=lambda _m: None)
    assert result.status == "succeeded", (result.status, result.run_dir)
    made.append(str(result.live_image))
    outcome = verify(VerifyOptions(target=str(result.run_dir), rebuild=True, live=True,
                                   out_dir=out_dir), settings, engine, say=lambda _m: None)
    if outcome.document.get("build"):
        made.append(outcome.document["build"]["image"])
    return result, outcome


def rebuilt_offline(art: Path, settings: Settings, engine: Any, out_dir: Path,
                    made: list[str]) -> None:
    """``verify --rebuild --offline`` of a bundled artifact: built with no network, C1 passes
    (the image is added to ``made``, for removal)."""
    doc = verify(VerifyOptions(target=str(art), rebuild=True, offline=True, out_dir=out_dir),
                 settings, engine, say=lambda _m: None).document
    made.append(doc["build"]["image"])
    assert doc["build"]["offline"] is True
    levels = {r["level"]: r["status"] for r in doc["reports"]["rebuilt"]["levels"]}
    assert levels["C1"] == "pass", levels
