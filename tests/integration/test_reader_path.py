"""The reader's path: a copy of the artifact folder, built with the plain docker CLI as its
README says, then the README's check command run in the built image. Reuses the session's
verified numpy-ext artifact (its no-cache rebuild leaves BuildKit's cache warm, and
published its base, ``localhost/synth/python:bookworm``, on the engine). The archive alone,
with each builder and no network: tests/integration/test_reader_archive.py."""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DOCKER = "/usr/bin/docker"


def readme_line(readme: str, start: str) -> str:
    """The first line of a code block in the README that starts with ``start``."""
    line = next((ln for ln in readme.splitlines() if ln.startswith(start)), None)
    assert line is not None, f"README has no line starting {start!r}"
    return line.split("   #")[0].strip()


def test_reader_builds_and_checks_with_plain_docker(
    engine: Any, verified: Callable[..., Any], marked_ca: tuple[Path | None, bytes],
    wheelhouse: Path | None, tmp_path: Path,
) -> None:
    outcome = verified("numpy-ext", "good.sh")
    assert outcome.passed, outcome.document["reports"]["rebuilt"]  # synth's own rebuild
    art = tmp_path / "artifact"
    shutil.copytree(outcome.document["target"]["artifact_dir"], art)
    manifest = json.loads((art / "manifest.json").read_text())
    if manifest["wheel_files"]:  # "copy those wheels into wheelhouse/", as the README says
        assert wheelhouse is not None
        (art / "wheelhouse").mkdir()
        for name in manifest["wheel_files"]:
            shutil.copy(wheelhouse / name, art / "wheelhouse" / name)
    readme = (art / "README.md").read_text()
    assert "synth verify . --rebuild" in readme
    assert "verification.json" in readme
    assert "debootstrap --variant=minbase" in readme and "docker import -" in readme
    tag = f"synth-test-reader/numpy-ext:{secrets.token_hex(4)}"
    build = shlex.split(readme_line(readme, "DOCKER_BUILDKIT=1 docker build"))
    assert build[:3] == ["DOCKER_BUILDKIT=1", "docker", "build"]
    argv = [DOCKER, *build[2:]]
    argv[argv.index("numpy-ext:rebuilt")] = tag
    ca, _marker = marked_ca
    if ca is not None:  # the optional secret the README shows
        argv[2:2] = ["--secret", f"id=cacert,src={ca}"]
    try:
        proc = subprocess.run(argv, cwd=art, capture_output=True, text=True, timeout=1500,
                              env={"DOCKER_BUILDKIT": "1", "PATH": "/usr/bin:/bin"},
                              check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        labels = engine.image_inspect(tag)["Config"]["Labels"]
        assert labels["org.opencontainers.image.title"] == "numpy-ext"
        assert labels["org.opencontainers.image.base.name"] == "localhost/synth/python:bookworm"
        assert all(k.startswith("org.opencontainers.image.") for k in labels), labels
        for start in ("docker run --rm numpy-ext:rebuilt", "docker run --rm -w"):
            run = shlex.split(readme_line(readme, start))
            run[run.index("numpy-ext:rebuilt")] = tag
            res = subprocess.run([DOCKER, *run[1:]], capture_output=True, text=True,
                                 timeout=600, check=False)
            assert res.returncode == 0, (run, res.stdout[-2000:], res.stderr[-2000:])
    finally:
        subprocess.run([DOCKER, "rmi", "-f", tag], capture_output=True, check=False)


@pytest.fixture(autouse=True)
def _docker_cli() -> None:
    if not Path(DOCKER).exists():
        pytest.skip(f"{DOCKER} is not installed")
