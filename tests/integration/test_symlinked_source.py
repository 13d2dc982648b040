"""A repository holding symlinks (real engine): a file link, a folder link, a link into a
subfolder, a dangling one and one that leaves the repository. Export used to hash a file
link's target while verify hashed the link's text, so every `verify --rebuild` of such an
artifact was refused ("source/…yaml: modified") and nothing was ever rebuilt."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.engine.base import ContainerSpec
from synth.export.artifact import ExportOptions, export_run
from synth.formats import artifact_files
from synth.formats.task import load_task
from synth.record.agents import ReplayAgent
from synth.record.runner import RunOptions, run_session
from synth.verify.command import VerifyOptions, verify

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LINKS = {"model.yaml": "configs/base.yaml", "cfg": "configs", "x.yaml": "configs/deep/x.yaml",
         "gone.yaml": "configs/missing.yaml", "host-data": "/srv/shared-datasets"}


def _repo(root: Path) -> None:
    (root / "configs" / "deep").mkdir(parents=True)
    (root / "configs" / "base.yaml").write_text("lr: 0.1\n")
    (root / "configs" / "deep" / "x.yaml").write_text("depth: 3\n")
    for name, target in LINKS.items():
        (root / name).symlink_to(target)
    (root / "run.py").write_text(
        "import pathlib\n"
        "print(pathlib.Path('model.yaml').read_text(), pathlib.Path('cfg/deep/x.yaml')"
        ".read_text())\n")


def _files(root: Path) -> dict[str, bytes]:
    return {e.rel: (e.target.encode() if e.kind == "link" else e.path.read_bytes())
            for e in artifact_files.walk(root) if e.kind != "dir"}


def test_a_symlinked_repository_exports_identically_and_rebuilds(
    engine: Any, base_image: str, ca_bundle: Path | None, tmp_path: Path
) -> None:
    task_dir = tmp_path / "task"
    _repo(task_dir / "repo")
    (task_dir / "task.toml").write_text(
        f'name = "linked"\nbase_image = "{base_image}"\n[repo]\npath = "repo"\n'
        '[probes.cpu]\ncommand = "python3 run.py"\ntimeout = 60\n'
        '[not_applicable]\nC2 = "no GPU code"\nC3 = "no GPU code"\nC4 = "no GPU code"\n')
    script = tmp_path / "setup.sh"
    script.write_text("cd /workspace && python3 run.py\n")
    settings = Settings.load(artifacts_dir=tmp_path / "artifacts", ca_bundle=ca_bundle)
    result = run_session(RunOptions(task=load_task(task_dir), agent=ReplayAgent(script),
                                    timeout=600),
                         settings, engine, say=lambda _m: None)
    assert result.status == "succeeded"
    one = export_run(ExportOptions(
        result.run_dir, out_dir=tmp_path / "one" / "art", archive=True), settings, engine)
    two = export_run(ExportOptions(
        result.run_dir, out_dir=tmp_path / "two" / "art", archive=True), settings, engine)
    assert _files(one.artifact_dir) == _files(two.artifact_dir)
    assert one.archive_sha256 == two.archive_sha256
    # Every link is carried as a link, in source/ and in the archive.
    source = one.artifact_dir / "source"
    assert {n: str((source / n).readlink()) for n in LINKS} == LINKS
    assert one.archive is not None
    with tarfile.open(one.archive) as tar:
        members = {m.name.split("/", 1)[-1]: m for m in tar.getmembers()}
    assert {n: members[f"source/{n}"].linkname for n in LINKS
            if members[f"source/{n}"].issym()} == LINKS
    # The link that leaves the repository is reported, not followed.
    assert any("source/host-data -> /srv/shared-datasets" in w for w in one.warnings), \
        one.warnings

    outcome = verify(VerifyOptions(target=str(one.artifact_dir), rebuild=True,
                                   out_dir=tmp_path / "verify"), settings, engine,
                     say=lambda _m: None)
    doc = outcome.document
    try:
        assert doc["artifact_check"]["problems"] == [], doc["artifact_check"]
        rebuilt = {r["level"]: r["status"] for r in doc["reports"]["rebuilt"]["levels"]}
        assert rebuilt["C1"] == "pass", doc["reports"]["rebuilt"]
        image = doc["build"]["image"]
        with engine.container(ContainerSpec(image=image, network=False,
                                            labels={"synth.temporary": "1"})) as c:
            res = c.exec(["sh", "-c", "cd /workspace && for f in " + " ".join(LINKS)
                          + "; do printf '%s=%s\\n' \"$f\" \"$(readlink \"$f\")\"; done"])
        assert dict(line.split("=", 1) for line in res.stdout.split()) == LINKS
    finally:
        if doc.get("build"):
            engine.remove_image(doc["build"]["image"])
