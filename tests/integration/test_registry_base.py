"""A base image that came from a registry, on a real engine and a real local registry.

Debian's ``docker-registry`` (the CNCF distribution registry) serves 127.0.0.1 (docker
treats 127.0.0.0/8 as an insecure registry by default, so plain HTTP works). A copy of the
synth base under its own image ID (one label added, same layers: the shared base must
not gain RepoDigests, which every other run would then record) is pushed there, removed
locally and pulled back, so the task's base really comes from the registry. A tiny task
run on it records the repo digest; its export renders ``FROM 127.0.0.1:PORT/name@sha256:…``;
``synth verify --rebuild``, with neither the tag nor the digest left locally, builds it
(the registry's log shows the build asking for the manifest by that digest) and passes
C0/C1.
One short session, one small build.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.export.artifact import ExportOptions, export_run
from synth.verify.command import VerifyOptions, parse_levels, verify

pytestmark = [pytest.mark.docker]

REPO = "synth-test/registry-base"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _docker(*args: str, timeout: int = 600) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    assert proc.returncode == 0, f"docker {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``127.0.0.1:PORT|LOG``: Debian's docker-registry, serving a temporary folder, and its
    log (every request, at level info)."""
    exe = shutil.which("docker-registry")
    if exe is None:
        pytest.skip("Debian's docker-registry is not installed (apt-get install "
                    "docker-registry; .ci/run does)")
    root = tmp_path_factory.mktemp("registry")
    port = _free_port()
    (root / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    log = (root / "registry.log").open("w")
    proc = subprocess.Popen([exe, "serve", str(root / "config.yml")], stdout=log, stderr=log)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail(f"docker-registry did not answer on 127.0.0.1:{port}: "
                        + (root / "registry.log").read_text()[-2000:])
        yield f"127.0.0.1:{port}|{root / 'registry.log'}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def registry_base(registry: str, base_image: str, engine: Any) -> Iterator[str]:
    """``127.0.0.1:PORT/synth-test/registry-base:bookworm``, pulled from the registry."""
    ref = f"{registry.partition('|')[0]}/{REPO}:bookworm"
    subprocess.run(["docker", "build", "-q", "-t", ref, "-"], check=True, text=True,
                   capture_output=True, timeout=300,
                   input=f"FROM {base_image}\nLABEL synth.test.registry-base=1\n")
    refs = [ref]
    try:
        _docker("push", ref)
        _docker("rmi", ref)  # gone locally: the run's base comes from the registry
        assert not engine.image_exists(ref)
        _docker("pull", ref)
        refs += json.loads(_docker("image", "inspect", "--format", "{{json .RepoDigests}}", ref))
        yield ref
    finally:
        for r in refs:
            subprocess.run(["docker", "rmi", r], capture_output=True, check=False, timeout=120)


def _task(tmp: Path, base: str) -> Path:
    task = tmp / "registry-task"
    (task / "repo").mkdir(parents=True)
    (task / "agents").mkdir()
    (task / "repo" / "hello.py").write_text("import json\n\nprint(json.dumps({'ok': 1}))\n")
    (task / "agents" / "good.sh").write_text("ls /workspace\n")
    (task / "task.toml").write_text(
        f'name = "registry-task"\nbase_image = "{base}"\n[repo]\npath = "repo"\n'
        '[probes.cpu]\ncommand = "python3 hello.py"\n'
        '[not_applicable]\nC2 = "cpu"\nC3 = "cpu"\nC4 = "cpu"\n')
    return task


def test_a_registry_base_is_pinned_by_digest_and_rebuilds(
    registry_base: str, registry: str, engine: Any, ca_bundle: Path | None,
    tmp_path: Path,
) -> None:
    from synth.formats.task import load_task
    from synth.record.agents import ReplayAgent
    from synth.record.runner import RunOptions, run_session

    registry, _, log = registry.partition("|")
    digests = json.loads(_docker("image", "inspect", "--format", "{{json .RepoDigests}}",
                                 registry_base))
    assert len(digests) == 1 and digests[0].startswith(f"{registry}/{REPO}@sha256:")
    digest = digests[0].split("@", 1)[1]
    settings = Settings.load(artifacts_dir=tmp_path / "artifacts", ca_bundle=ca_bundle)
    task = load_task(_task(tmp_path, registry_base))
    result = run_session(RunOptions(task=task, agent=ReplayAgent(task.agents_dir / "good.sh"),
                                    timeout=600),
                         settings, engine, say=lambda _m: None)
    try:
        run = json.loads((result.run_dir / "run.json").read_text())
        assert run["base_image"]["repo_digests"] == digests
        art = export_run(ExportOptions(
            result.run_dir, out_dir=tmp_path / "art"), settings, engine).artifact_dir
        dockerfile = (art / "Dockerfile").read_text()
        assert f"\nFROM {registry}/{REPO}@{digest}\n" in dockerfile
        manifest = json.loads((art / "manifest.json").read_text())
        assert manifest["base_image"]["digest"] == digest
        assert manifest["base"]["repo_digests"] == digests
        # Neither the tag nor the digest is left locally: the build resolves the base
        # from the registry by its digest.
        _docker("rmi", registry_base)  # the repo's last tag: its digest goes with it
        assert not engine.image_exists(digests[0])
        logged = Path(log).stat().st_size
        said: list[str] = []
        outcome = verify(VerifyOptions(target=str(art), rebuild=True, out_dir=tmp_path / "v",
                                       levels=parse_levels("C0,C1")), settings, engine,
                         say=said.append)
        engine.remove_image(outcome.document["build"]["image"])
        assert "Base image: pinned by registry digest" in said
        with Path(log).open(encoding="utf-8", errors="replace") as fh:
            fh.seek(logged)
            assert f"/v2/{REPO}/manifests/{digest}" in fh.read()  # the build asked for it
        levels = {r["level"]: r["status"] for r in outcome.document["reports"]["rebuilt"]["levels"]}
        assert levels["C0"] == "pass" and levels["C1"] == "pass", levels
    finally:
        if result.live_image:
            engine.remove_image(result.live_image)
