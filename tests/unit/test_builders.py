"""Which builders a machine has and what each cannot do (``synth doctor``, the artifact
README's one line per builder): docker CLIs told apart by buildx and version, Podman and
Buildah by their ``--version`` (stand-in executables on a PATH of their own)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.config import Settings
from synth.engine import build
from synth.engine.build import READER_BUILDS, find_builders
from synth.engine.doctor import builders_check


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def _docker(version: str, buildx: bool) -> str:
    return (f'case "$1" in version) echo {version};; buildx) exit {0 if buildx else 1};; '
            'esac\n')


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(build, "_CANDIDATES", ("docker",))
    return tmp_path


def test_docker_28_without_buildx_is_the_legacy_builder(bin_dir: Path) -> None:
    _tool(bin_dir, "docker", _docker("28.2.2", buildx=False))
    (found,) = find_builders()
    assert (found.kind, found.version) == ("legacy", "28.2.2")
    assert found.cannot is not None and "Dockerfile.legacy" in found.cannot
    check = builders_check(Settings.load(artifacts_dir=bin_dir))
    assert check.status == "warn" and "no RUN --mount" in check.detail
    assert check.fix is not None and "buildx" in check.fix


@pytest.mark.parametrize(("version", "buildx", "kind"), [
    ("20.10.24+dfsg1", False, "builtin"), ("28.2.2", True, "buildx"), ("20.10.24", True,
                                                                       "buildx")])
def test_buildkit_capable_docker_clis(bin_dir: Path, version: str, buildx: bool,
                                      kind: str) -> None:
    _tool(bin_dir, "docker", _docker(version, buildx))
    (found,) = find_builders()
    assert found.kind == kind and found.cannot is None
    assert READER_BUILDS[kind][1] in found.describe()


def test_podman_and_buildah_are_reported_with_their_commands(bin_dir: Path) -> None:
    _tool(bin_dir, "docker", _docker("28.2.2", buildx=False))
    _tool(bin_dir, "podman", 'echo "podman version 4.3.1"\n')
    _tool(bin_dir, "buildah", 'echo "buildah version 1.28.2 (image-spec 1.1.0-rc2)"\n')
    found = {b.kind: b.version for b in find_builders()}
    assert found == {"legacy": "28.2.2", "podman": "4.3.1", "buildah": "1.28.2"}
    check = builders_check(Settings.load(artifacts_dir=bin_dir))
    assert check.status == "ok"
    assert "podman build --format docker" in check.detail
    assert "DOCKER_BUILDKIT=0 docker build -f Dockerfile.legacy" in check.detail


def test_no_builder_at_all_says_what_to_install(bin_dir: Path) -> None:
    assert find_builders() == []
    check = builders_check(Settings.load(artifacts_dir=bin_dir))
    assert check.status == "warn" and check.fix is not None
    assert os.environ["PATH"] == str(bin_dir)
