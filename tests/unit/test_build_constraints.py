"""The lock's installer and build constraints: pure parts (no index, no engine).

What a sdist or a local project declares as build requirements, how the Dockerfile installs
the lock with the hash-pinned uv (index or vendor folder), and which native steps take the
build constraints.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from msgspec import structs
from test_render_golden import _run, fake_locker

from synth.distill.load import load_run
from synth.distill.plan import BuildPlan, NativeStep, distill
from synth.export.build_lock import (
    DEFAULT_BUILD_REQUIRES,
    local_build_requires,
    lock_manifest,
    project_build_requires,
    sdist_build_requires,
)
from synth.export.lock import Lock, LockedPin, LockTarget
from synth.export.render import render_artifact
from synth.formats.plan import DistillReport

PYPROJECT = '[build-system]\nrequires = ["hatchling>=1.20", "hatch-vcs"]\n'


def _tar(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_build_requires_of_pyproject_and_fallback() -> None:
    assert project_build_requires(PYPROJECT) == ["hatchling>=1.20", "hatch-vcs"]
    # setuptools < 70.1 asks for wheel at build time: wheel is constrained too
    assert project_build_requires('[build-system]\nrequires = ["setuptools>=61"]\n') == [
        "setuptools>=61", "wheel"]
    for text in (None, "[project]\nname = 'x'\n", "not toml ["):
        assert project_build_requires(text) == list(DEFAULT_BUILD_REQUIRES)


def test_hatchling_asks_for_editables_and_its_hooks_dependencies() -> None:
    """What hatchling's get_requires_for_build_editable/_wheel return, read from the
    project's configuration (the hooks are never called: they may run its code)."""
    from synth.export.build_lock import HATCHLING_EDITABLE, backend_build_requires

    hatch = ('[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
             '[tool.hatch.build.targets.wheel]\ndependencies = ["cython>=3"]\n'
             '[tool.hatch.build.targets.wheel.hooks.custom]\ndependencies = ["numpy"]\n'
             '[tool.hatch.build.hooks.vcs]\ndependencies = ["hatch-vcs"]\n')
    assert backend_build_requires(hatch, editable=True) == [
        HATCHLING_EDITABLE, "hatch-vcs", "cython>=3", "numpy"]
    assert backend_build_requires(hatch, editable=False) == ["hatch-vcs", "cython>=3", "numpy"]
    # Other backends, and what is not a project's configuration, ask for nothing here.
    for text in (PYPROJECT, '[build-system]\nbuild-backend = "setuptools.build_meta"\n',
                 None, "not toml [", '[build-system]\nbuild-backend = "hatchling.build"\n'
                 '[tool.hatch.build]\ndependencies = "x"\n'):
        assert backend_build_requires(text, editable=False) == [], text


def test_sdist_build_requires_reads_the_top_pyproject() -> None:
    tar = _tar({"pkg-1.0/pyproject.toml": PYPROJECT, "pkg-1.0/sub/pyproject.toml": "x",
                "pkg-1.0/setup.py": ""})
    assert sdist_build_requires(tar) == ["hatchling>=1.20", "hatch-vcs"]
    assert sdist_build_requires(_tar({"docopt-0.6.2/setup.py": ""})) == list(
        DEFAULT_BUILD_REQUIRES)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("pkg-1.0/pyproject.toml", PYPROJECT)
    assert sdist_build_requires(buf.getvalue()) == ["hatchling>=1.20", "hatch-vcs"]


def _locks_with_build(tmp_path: Path) -> tuple[BuildPlan, DistillReport, list[Lock]]:
    plan, report = distill(load_run(_run(tmp_path)))
    build = (LockedPin("setuptools", "80.9.0", ("a" * 64,)), LockedPin("wheel", "0.45.1",
                                                                       ("b" * 64,)))
    locks = [replace(fake_locker(e, None), build=build, sdists=("docopt",))  # type: ignore[arg-type]
             for e in plan.envs]
    return plan, report, locks


def test_lock_install_with_build_constraints(tmp_path: Path) -> None:
    plan, report, locks = _locks_with_build(tmp_path)
    files = render_artifact(plan, report, locks)
    docker = files["Dockerfile"]
    assert ("--build-constraints /tmp/synth/build-constraints.lock --require-build-hashes"
            in docker)
    assert ("--mount=type=bind,source=build-constraints.lock,"
            "target=/tmp/synth/build-constraints.lock") in docker
    assert "# 1 sdist (docopt) and the isolated local builds" in docker
    text = files["build-constraints.lock"]
    assert "setuptools==80.9.0 \\\n    --hash=sha256:" + "a" * 64 in text
    assert "# Sdists: docopt" in text
    assert "uv==0.13.9" in files["installer.lock"]
    # the CA bundle stays a secret: never a COPY, never a file of the artifact
    assert "COPY" not in docker.split("# The research code")[0]
    assert "--mount=type=secret,id=cacert,required=false" in docker
    assert "SSL_CERT_FILE=/run/secrets/cacert" in docker
    assert lock_manifest(locks[0])["build_constraints"] == "build-constraints.lock"
    assert lock_manifest(locks[0])["installer"] == "uv==0.13.9"


def test_vendor_source_installs_with_no_index(tmp_path: Path) -> None:
    plan, report, locks = _locks_with_build(tmp_path)
    docker = render_artifact(plan, report, locks, py_source={
        "kind": "vendor", "source": "vendor/python", "dir": "/tmp/synth/vendor"})["Dockerfile"]
    assert "--mount=type=bind,source=vendor/python,target=/tmp/synth/vendor" in docker
    assert ("install-uv.py /tmp/synth/installer.lock /tmp/synth/uv /tmp/synth/vendor "
            "\\\n") in docker  # uv's wheel comes from the vendor folder too
    assert "--offline --no-index --find-links /tmp/synth/vendor" in docker


def test_isolated_local_build_takes_the_constraints(tmp_path: Path) -> None:
    plan, report, locks = _locks_with_build(tmp_path)
    pip = locks[0].env.pip
    step = NativeStep(ref="9.1", tool="pip-local", argv=(*pip, "install", "--no-deps",
                                                         "/workspace"),
                      cwd="/workspace", env=(), distribution="demo==0.0.0", network=True)
    uv_step = structs.replace(step, ref="9.2", tool="uv-local",
                              argv=("uv", "pip", "install", "--python",
                                    "/opt/venv/bin/python", "/workspace"))
    plan = structs.replace(plan, native=(step, uv_step))
    docker = render_artifact(plan, report, locks)["Dockerfile"]
    assert ("grep -o '^[A-Za-z0-9][^ ]*==[^ ]*' /tmp/synth/build-constraints.lock > "
            "/tmp/synth/pip-build-constraints.txt") in docker
    # pip before 25.3 reads PIP_CONSTRAINT into its isolated build, 26.2 on only
    # PIP_BUILD_CONSTRAINT (each ignores the other's variable where it has no such option).
    assert ("PIP_CONSTRAINT=/tmp/synth/pip-build-constraints.txt "
            "PIP_BUILD_CONSTRAINT=/tmp/synth/pip-build-constraints.txt "
            "/opt/venv/bin/python -m pip install --no-deps /workspace") in docker
    assert "UV_BUILD_CONSTRAINT=/tmp/synth/build-constraints.lock " in docker
    # the source's own pyproject says what the isolated build needs
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    assert local_build_requires(plan, locks[0].env, src) == [
        "hatchling>=1.20", "hatch-vcs"] * 2  # the pip step and the uv step of this env
    assert local_build_requires(plan, locks[0].env, None) == list(DEFAULT_BUILD_REQUIRES) * 2
    # An editable install by hatchling needs editables too, which [build-system] omits.
    (src / "pyproject.toml").write_text(PYPROJECT + 'build-backend = "hatchling.build"\n')
    editable = structs.replace(step, argv=(*pip, "install", "--no-deps", "-e", "/workspace"))
    assert local_build_requires(structs.replace(plan, native=(editable,)), locks[0].env,
                                src) == ["hatchling>=1.20", "hatch-vcs", "editables~=0.3"]


def test_sdist_pins_sets_aside_each_pin_without_a_wheel(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from synth.export import build_lock
    from synth.export.lock import LockTarget

    _plan, _report, locks = _locks_with_build(tmp_path)
    lock = replace(locks[0], pins=(*locks[0].pins, LockedPin("docopt", "0.6.2", ("c" * 64,)),
                                   LockedPin("Future", "1.0.0", ("d" * 64,))))
    asked: list[list[str]] = []

    def fake(env: object, target: object, reqs: list[str], **kw: object) -> object:
        asked.append(sorted(reqs))
        msg = {"docopt==0.6.2": "hint: Wheels are required for `docopt` because building "
               "from source is disabled", "Future==1.0.0": "Because future==1.0.0 has no "
               "usable wheels and you require future==1.0.0"}
        for spec, text in msg.items():
            if spec in reqs:
                return subprocess.CompletedProcess([], 1, "", text)
        return subprocess.CompletedProcess([], 0, "", "")

    monkeypatch.setattr(build_lock, "_compile", fake)
    target = LockTarget("3.11", "x86_64-manylinux_2_36", None, None)
    assert build_lock.sdist_pins(lock, target) == ["docopt", "future"]
    assert len(asked) == 3 and "docopt==0.6.2" not in asked[-1]


def test_an_sdist_is_built_again_with_the_backend_that_built_it_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pdm built asciitree's sdist in isolation with the newest setuptools (its WHEEL says
    84.2.1) while the environment's own is 78.1.0: the rebuild takes 84.2.1 for it, or its
    metadata differs (seen on aics-cytoparam). Two sdists built with two versions: neither
    is pinned (one build environment holds one), and the lock does not fail."""
    from synth.export import build_lock
    from synth.export.lock import LockTarget

    _plan, _report, locks = _locks_with_build(tmp_path)
    lock = replace(locks[0], pins=(LockedPin("asciitree", "0.3.3", ("c" * 64,)),
                                   LockedPin("setuptools", "78.1.0", ("d" * 64,))))
    asked: list[list[str]] = []
    monkeypatch.setattr(build_lock, "sdist_pins", lambda *_a: ["asciitree"])
    monkeypatch.setattr(build_lock, "_sdist_bytes", lambda *_a: _tar(
        {"asciitree-0.3.3/PKG-INFO": "x"}))  # no pyproject: PEP 517's fallback
    monkeypatch.setattr(build_lock, "lock_build",
                        lambda _l, _t, reqs: asked.append(list(reqs)) or ())
    target = LockTarget("3.11", "x86_64-manylinux_2_36", None, None)
    uv = LockedPin("uv", "0.13.9", ("e" * 64,))
    build_lock.complete_lock(lock, target, installer=lambda: uv,
                             backends={"asciitree": "setuptools==84.2.1"})
    assert asked[-1] == ["setuptools>=40.8.0", "wheel", "setuptools==84.2.1"]
    build_lock.complete_lock(lock, target, installer=lambda: uv)
    assert asked[-1] == ["setuptools>=40.8.0", "wheel"]
    assert build_lock.agreeing(["setuptools>=40.8.0", "setuptools==84.2.1", "wheel",
                                "setuptools==80.0.0", "hatchling==1.27.0"]) == [
        "setuptools>=40.8.0", "wheel", "hatchling==1.27.0"]


def test_a_bundled_isolated_local_build_takes_its_build_requirements_from_the_vendor(
        tmp_path: Path) -> None:
    from synth.export import bundle
    plan, report, locks = _locks_with_build(tmp_path)
    step = NativeStep(ref="9.1", tool="pip-local",
                      argv=(*locks[0].env.pip, "install", "--no-deps", "-e", "/workspace"),
                      cwd="/workspace", env=(), distribution="demo==0.0.0", network=True)
    plan = structs.replace(plan, native=(step,))
    summary = bundle.summary([], plan, locks)
    assert summary["offline"] is True and summary["needs_network"] == []
    docker = render_artifact(plan, report, locks, bundle=summary)["Dockerfile"]
    assert "--mount=type=bind,source=vendor/wheels,target=/synth/vendor/wheels" in docker
    assert ("PIP_CONSTRAINT=/tmp/synth/pip-build-constraints.txt PIP_BUILD_CONSTRAINT="
            "/tmp/synth/pip-build-constraints.txt PIP_NO_INDEX=1 "
            "PIP_FIND_LINKS=/synth/vendor/wheels ") in docker
    # without build constraints the same step still needs the network, and says so
    bare = [replace(lk, build=()) for lk in locks]
    assert bundle.summary([], plan, bare)["needs_network"] == ["9.1: pip-local"]


@pytest.mark.parametrize("line", [
    "-i http://127.0.0.1:9/simple", "--index-url=http://evil/simple", "-r /etc/shadow",
    "-e /root", "demo @ file:///etc/passwd", "demo @ https://evil.example/d.tar.gz",
    "numpy\n-r /etc/shadow", "", "not a requirement!"])
def test_what_the_run_declares_never_reaches_the_locker_as_an_option(line: str) -> None:
    """A build requirement comes from the repository's pyproject.toml, a pin from the run's
    final state: the agent's. A requirements file reads `-r FILE` or `-i URL` as options
    (a host file read, another index asked), so only PEP 508 names and versions pass."""
    from synth.errors import LockError
    from synth.export.lock import checked_pin, checked_requirement

    with pytest.raises(LockError):
        checked_requirement(line, "a build requirement")
    name, _, version = line.partition("==")
    with pytest.raises(LockError):
        checked_pin(name or line, version or "1.0", "state/python.json")
    assert checked_requirement("setuptools>=61; python_version > '3.8'", "x").startswith(
        "setuptools")
    assert checked_pin("torch", "2.13.0+cpu", "x") == "torch==2.13.0+cpu"


def test_a_local_index_is_never_given_to_the_locker(tmp_path: Path) -> None:
    from synth.errors import LockError
    from synth.export.lock import _compile_argv

    _plan, _report, locks = _locks_with_build(tmp_path)
    env = structs.replace(locks[0].env, index_url="file:///etc")
    target = LockTarget("3.11", "x86_64-manylinux_2_36", None, None)
    with pytest.raises(LockError, match="not an http"):
        _compile_argv("uv", env, target, tmp_path / "pins.in")


def test_the_installer_is_locked_once_per_index_and_target(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Environments with the same indexes and target share one installer pin (one locker
    call); another index asks again; a lock with nothing to install asks none."""
    from types import SimpleNamespace

    from test_project_locks import _env

    from synth.export import artifact

    asked: list[str] = []

    def lock_installer(env: object, _target: LockTarget) -> LockedPin:
        asked.append(env.index_url)  # type: ignore[attr-defined]
        return LockedPin("uv", "0.1", ("a" * 64,))

    def complete(lock: Lock, _t: LockTarget, _local: object, *, installer: object,
                 backends: object = None) -> Lock:
        if not lock.pins:
            return lock
        return replace(lock, installer=installer())  # type: ignore[operator]

    monkeypatch.setattr(artifact, "lock_installer", lock_installer)
    monkeypatch.setattr(artifact, "complete_lock", complete)
    monkeypatch.setattr(artifact, "local_build_requires", lambda *_a: [])
    monkeypatch.setattr(artifact, "lock_env", lambda env, _t, locker: Lock(
        env=env, pins=tuple(LockedPin(n, v, ("b" * 64,)) for n, v in env.pins),
        locker=locker))
    envs = (_env("/workspace/.venv", (("six", "1.17.0"),)),
            _env("/opt/tool", (("attrs", "26.1.0"),)),
            structs.replace(_env("/opt/other", (("six", "1.17.0"),)),
                            index_url="https://mirror.example/simple"),
            _env("/opt/empty", ()))
    plan = SimpleNamespace(envs=envs, conda=(), glibc="2.36")
    locks = artifact.lock_plan(plan, None, None, "uv")  # type: ignore[arg-type]
    assert asked == ["https://pypi.org/simple", "https://mirror.example/simple"]
    assert [lk.env.prefix for lk in locks] == [e.prefix for e in envs]
    assert [lk.installer is not None for lk in locks] == [True, True, True, False]


def test_a_pin_no_cached_index_page_lists_is_asked_again_with_a_refresh() -> None:
    """uv said "there is no version of grpcio==1.85.4" for a pin the run had just
    installed from the index (a stale or half-written page of uv's cache, seen in the
    suite): one retry with --refresh-package; any other failure, or another locker, none."""
    import subprocess

    from synth.export.lock import refreshed

    argv = ["/x/bin/uv", "pip", "compile", "--no-build", "/tmp/pins.in"]
    failed = subprocess.CompletedProcess(argv, 1, "", "  cause: Because there is no version "
                                         "of grpcio==1.85.4 and you require grpcio==1.85.4")
    assert refreshed(argv, failed) == ["/x/bin/uv", "pip", "compile", "--no-build",
                                       "--refresh-package", "grpcio", "/tmp/pins.in"]
    assert refreshed(refreshed(argv, failed) or [], failed) is None  # once
    assert refreshed(["pip-compile", "/tmp/pins.in"], failed) is None
    other = subprocess.CompletedProcess(argv, 1, "", "error: Failed to fetch: connection")
    assert refreshed(argv, other) is None
    assert refreshed(argv, subprocess.CompletedProcess(argv, 0, "", "")) is None
