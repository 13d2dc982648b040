"""A paper's reader, years later: the published archive alone, a fresh engine, no synth,
no network. One README command each: load the base, build, run the task's check.

The shared numpy-ext ``good.sh`` run is exported with ``--archive --bundle`` (the base
image and every .deb and wheel inside) and the ``.tar.gz`` unpacked into a new folder.
Each builder the README names and this machine has then follows the README from there
(tests/fresh_engines.py: a Docker daemon of its own with no image and no network, a PATH
without synth; Podman and Buildah on a storage of their own, containers on no network):

- Docker 20.10's CLI, BuildKit built in: ``DOCKER_BUILDKIT=1 docker build``;
- Docker 28's CLI without buildx: ``DOCKER_BUILDKIT=1`` is refused ("the buildx component is
  missing"), the README's legacy line builds ``Dockerfile.legacy``;
- Podman (``podman load``, ``podman build --format docker``, ``podman run``) and Buildah.

Docker with the buildx plugin is not installable here (Debian 12 has no docker-buildx).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fresh_engines import fresh_dockerd, podman_env, podman_reset

from synth.config import Settings
from synth.engine.base import Engine
from synth.export.artifact import ExportOptions, export_run
from synth.export.metadata import CitationOptions

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DOCKER_20 = "/usr/bin/docker"
DOCKER_28 = "/usr/local/bin/docker"
IMAGE = "numpy-ext:rebuilt"


def readme_line(readme: str, start: str) -> str:
    """The first line of a README code block that starts with ``start``, its note cut."""
    line = next((ln for ln in readme.splitlines() if ln.startswith(start)), None)
    assert line is not None, f"README has no line starting {start!r}"
    return line.split("   #")[0].strip()


def sh(line: str, cwd: Path, env: dict[str, str], timeout: int = 1800
       ) -> subprocess.CompletedProcess[str]:
    """One README line as a reader's shell runs it (``VAR=value cmd …`` included)."""
    words = shlex.split(line)
    assigns = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        assigns[name] = value
    return subprocess.run(words, cwd=cwd, env={**env, **assigns}, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def archive_folder(task_run: Callable[[str, str], Path], marked_ca: tuple[Path | None, bytes],
                   wheelhouse: Path | None, engine: Engine,
                   tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The numpy-ext run's published archive, unpacked where nothing else is."""
    run_dir = task_run("numpy-ext", "good.sh")
    out = tmp_path_factory.mktemp("published")
    settings = Settings.load(artifacts_dir=out, ca_bundle=marked_ca[0], wheelhouse=wheelhouse)
    citation = CitationOptions(authors=("Ada Lovelace <ada@example.org>",), license="MIT")
    result = export_run(ExportOptions(run_dir, out_dir=out / "export", archive=True,
                                      bundle=True, citation=citation), settings, engine)
    assert result.archive is not None
    assert not any("is not carried" in w for w in result.warnings), result.warnings
    reader = tmp_path_factory.mktemp("reader")
    subprocess.run(["tar", "-xzf", str(result.archive)], cwd=reader, check=True)  # as a reader
    (folder,) = reader.iterdir()
    return folder


def _manifest(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "manifest.json").read_text()))


@pytest.fixture(scope="module")
def fresh_docker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    if not Path(DOCKER_20).exists():
        pytest.skip(f"{DOCKER_20} (Debian's docker.io) is not installed")
    with fresh_dockerd(tmp_path_factory.mktemp("dockerd")) as env:
        yield env


def _docker(env: dict[str, str], cli: str, home: Path) -> dict[str, str]:
    """``env`` with ``docker`` on its PATH being ``cli``."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "docker").unlink(missing_ok=True)
    (bin_dir / "docker").symlink_to(cli)
    return {**env, "PATH": f"{bin_dir}:{env['PATH']}"}


def _labels(env: dict[str, str], cli: str) -> dict[str, str]:
    out = subprocess.run([cli, "image", "inspect", "--format", "{{json .Config.Labels}}", IMAGE],
                         env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout) or {})


def test_docker_builtin_buildkit_from_the_archive_alone(
        archive_folder: Path, fresh_docker: dict[str, str], tmp_path: Path) -> None:
    readme = (archive_folder / "README.md").read_text()
    env = _docker(fresh_docker, DOCKER_20, tmp_path)
    assert shutil.which("synth", path=env["PATH"]) is None
    assert subprocess.run(["docker", "images", "-q"], env=env, capture_output=True, text=True,
                          check=True).stdout == ""  # a fresh engine: nothing in it
    pub = _manifest(archive_folder)["base"]["published"]
    load = readme_line(readme, "docker load -i ")
    assert sh(load, archive_folder, env).returncode == 0
    got = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", pub["ref"]],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert got == pub["config_digest"]  # the digest the Dockerfile and README name
    build = readme_line(readme, "DOCKER_BUILDKIT=1 docker build")
    assert "--network none" in build
    proc = sh(build, archive_folder, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = sh(readme_line(readme, f"docker run --rm {IMAGE}"), archive_folder, env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    labels = _labels(env, DOCKER_20)
    assert labels and all(k.startswith("org.opencontainers.image.") for k in labels), labels
    assert labels["org.opencontainers.image.base.digest"] == pub["config_digest"]
    assert labels["org.opencontainers.image.licenses"] == "MIT"


def test_docker_without_buildx_builds_the_legacy_dockerfile(
        archive_folder: Path, fresh_docker: dict[str, str], tmp_path: Path) -> None:
    if not Path(DOCKER_28).exists():
        pytest.skip(f"{DOCKER_28} (a Docker 23+ CLI without buildx) is not installed")
    readme = (archive_folder / "README.md").read_text()
    env = _docker(fresh_docker, DOCKER_28, tmp_path)
    assert sh(readme_line(readme, "docker load -i "), archive_folder, env).returncode == 0
    # What the issue saw: BuildKit asked for, and no buildx to give it.
    refused = sh(readme_line(readme, "DOCKER_BUILDKIT=1 docker build"), archive_folder, env)
    assert refused.returncode != 0 and "buildx" in refused.stderr + refused.stdout
    legacy = readme_line(readme, "DOCKER_BUILDKIT=0 docker build -f Dockerfile.legacy")
    proc = sh(legacy, archive_folder, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = sh(readme_line(readme, f"docker run --rm {IMAGE}"), archive_folder, env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    labels = _labels(env, DOCKER_28)
    assert all(k.startswith("org.opencontainers.image.") for k in labels), labels


@pytest.mark.parametrize("builder", ["podman", "buildah"])
def test_podman_and_buildah_from_the_archive_alone(
        archive_folder: Path, builder: str, tmp_path: Path) -> None:
    if shutil.which(builder) is None or shutil.which("podman") is None:
        pytest.skip(f"{builder} is not installed (apt-get install podman buildah)")
    readme = (archive_folder / "README.md").read_text()
    env = podman_env(tmp_path / builder)
    try:
        load = readme_line(readme, "docker load -i ").replace("docker", "podman", 1)
        assert f"`{load}`" in readme  # the README says it for Podman
        proc = sh(load, archive_folder, env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        proc = sh(readme_line(readme, f"{builder} build --format docker"), archive_folder,
                  env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        run = readme_line(readme, f"docker run --rm {IMAGE}").replace("docker", "podman", 1)
        done = sh(run, archive_folder, env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    finally:
        podman_reset(env)
