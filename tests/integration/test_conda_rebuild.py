"""A conda environment end to end on a real engine, with a real conda-compatible installer.

The bundled task ``conda-env`` (tasks/conda-env): no conda channel is reachable here, so the
task makes its own (its ``channel/make_channel.py``: a Python, pip and a small library,
indexed), which synth makes in the base image and serves on the engine's host address, where
the session's container and the rebuild's build containers reach it (the shared
``task_run`` fixture). The agent does what research agents do: ``conda create`` of a named
environment with python and a library (py-rattler solving against the channel and
linking, conda-meta written as conda writes it), then ``pip install`` inside it, and says
so in its claims. synth must capture the prefix from conda-meta, lock it as ``@EXPLICIT``
``url#sha256`` lines, recreate it in the rebuild from those URLs with no solve, install its
pip layer after it, and verify must find the rebuilt environment equal to the live one
(same packages, builds, files), exporting the same run twice must give the same files, and
``synth diff`` must find the run and its artifact equal in conda packages. Exported with
``--bundle``, the artifact rebuilds with no network (the conda archives and py-rattler in
``vendor/``), and a bundled archive whose bytes changed stops the build.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replayed import rebuilt_offline

from synth.config import Settings
from synth.engine.fingerprint import ImageProbe
from synth.errors import BuildError
from synth.export.artifact import ExportOptions, export_run
from synth.verify.build import build_artifact

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PREFIX = "/opt/conda/envs/research"
LOCK = "conda-opt-conda-envs-research.lock"


def test_a_conda_environment_is_recreated_from_its_lock_with_no_solve(
        engine: Any, task_run: Callable[[str, str], Path], verified: Callable[..., Any],
        marked_ca: tuple[Path | None, bytes], wheelhouse: Path | None,
        tmp_path: Path) -> None:
    run_dir = task_run("conda-env", "good.sh")
    settings = Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=marked_ca[0],
                             wheelhouse=wheelhouse)
    url = _check_capture(run_dir, engine.host_address())
    outcome = verified("conda-env", "good.sh")
    doc = outcome.document
    art = Path(doc["target"]["artifact_dir"])
    # Activated as `conda activate` would: what tinylib's activate.d script sets.
    image_env = engine.client.images.get(doc["build"]["image"]).attrs["Config"]["Env"]
    assert f"TINYLIB_DATA={PREFIX}/share/tinylib" in image_env, image_env
    _check_verify(doc, outcome.exit_code)
    _check_artifact(art, url)
    again = export_run(ExportOptions(run_dir, out_dir=tmp_path / "again"),
                       settings, engine).artifact_dir
    for name in (LOCK, "Dockerfile", "conda-installer.lock", "conda-install.py",
                 "requirements.lock", "plan.json"):
        assert (art / name).read_bytes() == (again / name).read_bytes(), name
    _check_diff(run_dir, art, settings, engine)
    bundled = export_run(ExportOptions(run_dir, out_dir=tmp_path / "bundled", bundle=True),
                         settings, engine).artifact_dir
    # Built with no network: the bundle alone rebuilds the prefix.
    made: list[str] = []
    try:
        _check_offline(bundled, settings, engine, tmp_path, made)
    finally:
        for ref in made:
            engine.remove_image(ref)


def _check_capture(run_dir: Path, host: str) -> str:
    """The live prefix as synth captured it: every package with its archive URL and hash;
    the channel's address."""
    python = json.loads((run_dir / "state" / "python.json").read_text())
    assert python["primary"] == f"{PREFIX}/bin/python"
    env = next(i for i in python["interpreters"] if i["path"] == f"{PREFIX}/bin/python")
    assert env["kind"] == "conda" and env["created_by_agent"] is True
    packages = {p["name"]: p for p in env["conda"]["packages"]}
    assert sorted(packages) == ["pip", "python", "tinylib"]
    found = re.fullmatch(rf"(http://{re.escape(host)}:\d+)/linux-64/python-3.11.2-0_debian12"
                         r"\.tar\.bz2", packages["python"]["url"])
    assert found, packages["python"]["url"]
    assert all(len(p["sha256"]) == 64 for p in packages.values())
    dists = {d["name"]: d for d in env["distributions"]}
    assert dists["six"]["version"] == "1.17.0" and dists["tinylib"]["installer"] == "conda"
    assert env["conda"]["activation"] == [["TINYLIB_DATA", f"{PREFIX}/share/tinylib"]]
    return found.group(1)


def _check_verify(doc: dict[str, Any], exit_code: int) -> None:
    rebuilt = {r["level"]: r for r in doc["reports"]["rebuilt"]["levels"]}
    live = {r["level"]: r for r in doc["reports"]["live"]["levels"]}
    assert live["C1"]["status"] == "pass", live["C1"]
    assert rebuilt["C1"]["status"] == "pass", rebuilt["C1"]
    assert doc["fidelity"]["reaches_live_level"] is True, json.dumps(doc["fidelity"])[:3000]
    assert not doc["fidelity"].get("failures"), doc["fidelity"]
    assert doc["fingerprint"]["status"] == "compared"
    assert doc["fingerprint"]["packages_equal"] is True, doc["fingerprint"]["summary"]
    # The agent's conda claims are checked against the rebuilt prefix, and hold.
    checks = {c["field"]: c for c in rebuilt["C5"]["details"]["checks"]}
    assert (checks["env_tool"]["verdict"], checks["env_tool"]["observed"]) == ("true", "conda")
    assert (checks["env_name"]["verdict"], checks["env_name"]["observed"]) == ("true", PREFIX)
    assert exit_code == 0


def _check_artifact(art: Path, url: str) -> None:
    lock = (art / LOCK).read_text().splitlines()
    body = lock[lock.index("@EXPLICIT") + 1:]
    assert [line.split("#")[0] for line in body] == [
        f"{url}/linux-64/{fn}" for fn in ("pip-23.0.1-py_0.tar.bz2",
                                           "python-3.11.2-0_debian12.tar.bz2",
                                           "tinylib-1.1-py_0.tar.bz2")]
    assert all(len(line.split("#")[1]) == 64 for line in body)
    # Recreated from the lock with no solve, before the pip layer, which holds only six.
    docker = (art / "Dockerfile").read_text()
    assert docker.index("conda-install.py") < docker.index(f"--python {PREFIX}/bin/python")
    pins = [line.split("==")[0] for line in (art / "requirements.lock").read_text().splitlines()
            if "==" in line and not line.startswith("#")]
    assert pins == ["six"]


def _check_offline(art: Path, settings: Settings, engine: Any, tmp_path: Path,
                   made: list[str]) -> None:
    manifest = json.loads((art / "manifest.json").read_text())
    kinds = manifest["bundle"]["by_kind"]
    assert manifest["bundle"]["offline"] is True
    assert kinds["conda"]["files"] == 3, kinds
    assert any(p.startswith("vendor/wheels/py_rattler-0.28.0-") for p in manifest["files"])
    assert "SYNTH_CONDA_PKGS=/synth/vendor/conda" in (art / "Dockerfile").read_text()
    rebuilt_offline(art, settings, engine, tmp_path / "offline", made)
    # One bundled archive's bytes differ from the lock: the build stops, naming it.
    bad = tmp_path / "bad"
    shutil.copytree(art, bad)
    victim = bad / "vendor" / "conda" / "tinylib-1.1-py_0.tar.bz2"
    data = victim.read_bytes()
    victim.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(BuildError) as err:
        build_artifact(bad, "synth-test/conda-env:bad", settings, network="none",
                       log_path=tmp_path / "bad.log")
    assert "tinylib-1.1-py_0.tar.bz2 does not match its sha256" in err.value.message, \
        err.value.message


def _check_diff(run_dir: Path, art: Path, settings: Settings, engine: Any) -> None:
    from synth.compare.diff import diff_sides
    from synth.compare.load import SideLoader

    loader = SideLoader(settings, images=ImageProbe(engine))
    conda = diff_sides(loader.load(str(run_dir)), loader.load(str(art))).section("conda")
    assert conda.status == "equal", conda.items
