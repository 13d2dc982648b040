"""``--agent auto`` on a real engine: bundled tasks set up to C1 without a transcript.

extras-only declares its dependencies only as pyproject.toml extras; undeclared-dep needs a
repair after its first probe fails (tensorboardX, which requirements.txt omits); numpy-ext
builds a C extension (compilers from apt, a build without isolation). The runs are shared
with the other tests of the session (``task_run(task, "auto")``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.formats.task import load_task
from synth.record.auto.agent import AutoAgent
from synth.record.runner import RunOptions, run_session

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
def probe(command: str) -> str:
    """The statement the agent runs a probe command as."""
    return ("cd /workspace && PATH=/opt/venv/bin:\"$PATH\" timeout 120 bash -c "
            + shlex.quote(command))


def agent_commands(run_dir: Path) -> list[str]:
    """The statements the agent ran, in order (the claims script cut to its first line)."""
    out = []
    for line in (run_dir / "audit.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "command" and rec.get("phase") == "agent":
            out.append(rec["command"].split("\n", 1)[0])
    return out


def assert_set_up(run_dir: Path) -> dict[str, Any]:
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "succeeded", run.get("error")
    assert run["agent"]["kind"] == "auto" and run["agent"]["repair_budget"] == 8
    assert run["claims"]["status"] == "valid"
    claims: dict[str, Any] = json.loads((run_dir / "claims.json").read_text())
    assert claims["python_path"] == "/opt/venv/bin/python"
    assert claims["env_tool"] == "venv" and claims["cuda_available"] is False
    assert "the CPU probe passed" in claims["notes"]
    return claims


def levels(outcome: Any, key: str) -> dict[str, str]:
    return {r["level"]: r["status"] for r in outcome.document["reports"][key]["levels"]}


def test_extras_only_from_its_pyproject_extras_and_rebuilt(
        task_run: Callable[[str, str], Path], verified: Callable[..., Any]) -> None:
    run_dir = task_run("extras-only", "auto")
    assert_set_up(run_dir)
    assert agent_commands(run_dir) == [
        "python3 -m venv /opt/venv",
        "/opt/venv/bin/pip install '.[yaml]'",
        probe("python report.py configs/run.yaml"),
        "/opt/venv/bin/python - <<'PY'",
    ]
    outcome = verified("extras-only", "auto")
    assert outcome.passed, outcome.document["verdict"]
    for key in ("live", "rebuilt"):
        lv = levels(outcome, key)
        assert (lv["C0"], lv["C1"], lv["C5"]) == ("pass", "pass", "pass"), (key, lv)


def test_undeclared_dep_is_repaired_after_its_first_failure_and_rebuilt(
        task_run: Callable[[str, str], Path], verified: Callable[..., Any]) -> None:
    run_dir = task_run("undeclared-dep", "auto")
    claims = assert_set_up(run_dir)
    cpu = load_task(TASKS_DIR / "undeclared-dep").probes.cpu
    assert cpu is not None
    assert agent_commands(run_dir) == [
        "python3 -m venv /opt/venv",
        "/opt/venv/bin/pip install -r requirements.txt",
        probe(cpu.command),
        "/opt/venv/bin/pip install tensorboardX",
        probe(cpu.command),
        "/opt/venv/bin/python - <<'PY'",
    ]
    assert "after 1 repairs: module tensorboardX is missing" in claims["notes"]
    log = (run_dir / "logs" / "agent.log").read_text()
    assert "ModuleNotFoundError: No module named 'tensorboardX'" in log
    outcome = verified("undeclared-dep", "auto")
    assert outcome.passed, outcome.document["verdict"]
    assert levels(outcome, "rebuilt")["C1"] == "pass"


def test_numpy_ext_gets_compilers_and_builds_its_extension(
        task_run: Callable[[str, str], Path], verified: Callable[..., Any]) -> None:
    run_dir = task_run("numpy-ext", "auto")
    assert_set_up(run_dir)
    commands = agent_commands(run_dir)
    assert commands[:2] == ["apt-get update", "DEBIAN_FRONTEND=noninteractive apt-get install "
                            "-y --no-install-recommends gcc libc6-dev python3-dev"]
    assert "/opt/venv/bin/pip install --no-build-isolation ." in commands
    outcome = verified("numpy-ext", "auto", rebuild=False)
    lv = levels(outcome, "live")
    assert (lv["C0"], lv["C0i"], lv["C1"]) == ("pass", "pass", "pass"), lv


def test_the_same_repository_gives_the_same_statements(
        task_run: Callable[[str, str], Path], engine: Any, ca_bundle: Path | None,
        tmp_path: Path) -> None:
    first = task_run("extras-only", "auto")
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle)
    result = run_session(RunOptions(task=load_task(TASKS_DIR / "extras-only"),
                                    agent=AutoAgent(), timeout=600),
                         settings, engine, say=lambda _m: None)
    try:
        assert result.status == "succeeded"
        assert agent_commands(result.run_dir) == agent_commands(first)
        assert (result.run_dir / "claims.json").read_text() == (
            first / "claims.json").read_text()
    finally:
        if result.live_image:
            engine.remove_image(result.live_image)
