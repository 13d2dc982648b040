"""A git checkout the agent adds a file to and edits (real engine): the artifact carries both
with source.patch against the commit, and the rebuilt image's /workspace, .git included,
equals the live one — export used to write the edits' git blobs into source/.git, and
fidelity then failed every such checkout (seen on cocoapi and x-transformers). The agent
also writes a file-system monitor and a filter driver into /workspace/.git/config: neither
runs on the host during export or verify."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.formats.task import load_task
from synth.record.agents import ReplayAgent
from synth.record.runner import RunOptions, run_session
from synth.verify.command import VerifyOptions, verify

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _origin(path: Path) -> str:
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (path / "tinymodel").mkdir()
    (path / "tinymodel" / "__init__.py").write_text("VERSION = 'pinned'\n")
    (path / "run.py").write_text("import tinymodel\nprint('version', tinymodel.VERSION)\n")
    git("add", "-A")
    git("commit", "-q", "-m", "pinned")
    return git("rev-parse", "HEAD")


def test_a_checkout_the_agent_changed_rebuilds_equal_to_live(
    engine: Any, base_image: str, ca_bundle: Path | None, tmp_path: Path
) -> None:
    commit = _origin(tmp_path / "origin")
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "task.toml").write_text(
        'name = "git-edit"\nbase_image = "synth/python:bookworm"\n'
        f'[repo]\nurl = "file://{tmp_path / "origin"}"\ncommit = "{commit}"\n'
        '[probes.cpu]\ncommand = "python3 run.py"\ntimeout = 60\n'
        '[not_applicable]\nC2 = "no GPU code"\nC3 = "no GPU code"\nC4 = "no GPU code"\n')
    script = tmp_path / "edit.sh"
    # A hostile agent's git configuration: each would run a command on the host if a host
    # git took /workspace/.git as its repository (export's patch, verify's re-export).
    marker = tmp_path / "host-ran-agent-git-config"
    hostile = f"touch {marker}"
    script.write_text(
        "cd /workspace && sed -i 's/pinned/edited/' tinymodel/__init__.py\n"
        "printf 'seed: 1\\n' > /workspace/config.yaml\n"
        f"printf '[core]\\n\\tfsmonitor = \"{hostile}\"\\n[filter \"x\"]\\n"
        f"\\tclean = {hostile}\\n\\tsmudge = {hostile}\\n' >> /workspace/.git/config\n"
        "printf '*.py filter=x\\n' > /workspace/.gitattributes\n"
        "cd /workspace && python3 run.py\n")
    settings = Settings.load(artifacts_dir=tmp_path / "artifacts", ca_bundle=ca_bundle)
    result = run_session(RunOptions(task=load_task(task_dir), agent=ReplayAgent(script),
                                    timeout=600),
                         settings, engine, say=lambda _m: None)
    outcome = None
    try:
        assert result.status == "succeeded"
        outcome = verify(VerifyOptions(target=str(result.run_dir), rebuild=True,
                                       out_dir=tmp_path / "verify"), settings, engine,
                         say=lambda _m: None)
        doc = outcome.document
        artifact = Path(doc["target"]["artifact_dir"])
        patch = (artifact / "source.patch").read_text()
        assert "+seed: 1" in patch and "+VERSION = 'edited'" in patch
        assert (artifact / "source" / "config.yaml").is_file()
        fp = doc["fingerprint"]
        assert fp["status"] == "compared"
        assert not [d for d in fp["differences"] if d["section"] == "workspace"], fp
        assert fp["unexplained"] == [], fp["unexplained"]
        assert doc["fidelity"]["reaches_live_level"] is True, doc["fidelity"]
        rebuilt = {r["level"]: r["status"] for r in doc["reports"]["rebuilt"]["levels"]}
        assert rebuilt["C1"] == "pass"
        assert outcome.exit_code == 0
        assert not marker.exists(), "a host git ran a command from the agent's .git/config"
    finally:
        if outcome is not None and outcome.document.get("build"):
            engine.remove_image(outcome.document["build"]["image"])
        if result.live_image:
            engine.remove_image(result.live_image)
