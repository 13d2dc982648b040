"""A venv on a uv-managed (or pyenv) Python end to end, on a real engine, with the real uv.

No python-build-standalone download is reachable here, so the test makes a build of that
shape (tests/python_build.py) and serves it with a downloads list on the Docker bridge's
gateway, where the session's container, the host's export and the rebuild's build
containers reach it. The agent does what agents told to prefer uv do on a base without the
Python they want: ``uv python install``, ``uv venv -p 3.11`` (uv names its minor-version
link), ``uv pip install``, and a C extension of the repository's (tinyext) built with gcc
against that interpreter. synth must name the build, resolve its archive with its own uv,
check the archive's interpreter against the live one, pin it in managed-python.lock, unpack
it at the same path in the rebuild before making the venv from it, and verify must find the
rebuilt venv equal to the live one, on the same base, the extension compiled again against
the unpacked interpreter byte for byte. Exporting twice gives the same files,
and with ``--bundle`` the archive travels in ``vendor/python`` and rebuilds with no network.
A venv on a Python at pyenv's path is rebuilt on python-build-standalone's build of the same
version at that path, found with the exporting user's uv settings, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from python_build import ARCHIVE, KEY, build_python, write_downloads
from replayed import rebuilt_offline, replay_and_verify

from synth.config import Settings
from synth.engine.file_server import serve_folder
from synth.export.artifact import ExportOptions, export_run
from synth.export.build_lock import uv_version
from synth.formats.task import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = Path(__file__).resolve().parent.parent / "data" / "managed-python"
UV_DIR = "/root/.local/share/uv/python"
LINK = f"{UV_DIR}/cpython-3.11-linux-x86_64-gnu"
#: The link ``uv python install`` makes in its bin folder, and its target.
BIN_LINK, EXECUTABLE = "/root/.local/bin/python3.11", f"{UV_DIR}/{KEY}/bin/python3.11"

#: A C compiler and Python's headers for tinyext, the C extension built in the run.
COMPILER = """\
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev python3-dev
"""
TRANSCRIPT = COMPILER + """\
python3 -m pip install --break-system-packages --target /tmp/uvtool uv=={uv}
export UV_PYTHON_DOWNLOADS_JSON_URL={url}/downloads.json && /tmp/uvtool/bin/uv python install 3.11.2
/tmp/uvtool/bin/uv venv --managed-python -p 3.11 /opt/venv
/tmp/uvtool/bin/uv pip install --python /opt/venv/bin/python six==1.17.0 setuptools
/tmp/uvtool/bin/uv pip install --python /opt/venv/bin/python --no-build-isolation /workspace/tinyext
rm -rf /tmp/uvtool
cd / && /opt/venv/bin/python /workspace/fit.py
"""


@contextmanager
def _served_build(engine: Any, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """The Python build and its downloads list, served on the bridge while the block runs:
    (base URL, the archive's name in a URL, its sha256)."""
    mirror = tmp_path / "mirror"
    sha256 = build_python(mirror)
    with serve_folder(mirror, engine.host_address()) as url:
        archive = ARCHIVE.replace("+", "%2B")
        write_downloads(mirror, f"{url}/{archive}", sha256)
        yield url, archive, sha256


def test_a_venv_on_a_uv_managed_python_is_rebuilt_on_the_same_python(
        engine: Any, ca_bundle: Path | None, wheelhouse: Path | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the archive's cache
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    made: list[str] = []
    try:
        with _served_build(engine, tmp_path) as (url, _archive, sha256):
            script = tmp_path / "managed.sh"
            script.write_text(TRANSCRIPT.format(url=url, uv=uv_version()))
            result, outcome = replay_and_verify(load_task(TASK), script, settings, engine,
                                                tmp_path / "verify", made)
            doc = outcome.document
            _check_verify(doc, outcome.exit_code)
            art = Path(doc["target"]["artifact_dir"])
            _check_artifact(art, url, sha256)
            assert _base_prefix(engine, doc["build"]["image"]) == LINK
            # uv's bin folder's link, made again as uv wrote it.
            assert _run(engine, doc["build"]["image"], "readlink", BIN_LINK) == EXECUTABLE
            again = export_run(ExportOptions(result.run_dir, out_dir=tmp_path / "again"),
                               settings, engine).artifact_dir
            for name in ("managed-python.lock", "Dockerfile", "requirements.lock", "plan.json"):
                assert (art / name).read_bytes() == (again / name).read_bytes(), name
            bundled = export_run(ExportOptions(result.run_dir, out_dir=tmp_path / "bundled",
                                               bundle=True), settings, engine).artifact_dir
        # The mirror is gone: the bundle alone rebuilds the interpreter, with no network.
        _check_offline(bundled, sha256, settings, engine, tmp_path, made)
    finally:
        for ref in made:
            engine.remove_image(ref)


PYENV = "/root/.pyenv/versions/3.11.2"
#: pyenv compiles CPython from python.org's sources, which this machine does not reach: the
#: agent unpacks a build at pyenv's path instead, which is what the final state shows.
PYENV_TRANSCRIPT = COMPILER + (
    "mkdir -p /root/.pyenv/versions && cd /root/.pyenv/versions && python3 -c \"import sys, "
    "urllib.request as u; sys.stdout.buffer.write(u.urlopen(sys.argv[1]).read())\" "
    "{url}/{archive} | tar -xz && mv python 3.11.2\n"
    "{pyenv}/bin/python3 -m venv --without-pip /opt/venv\n"
    "python3 -m pip --python /opt/venv/bin/python install six==1.17.0 setuptools wheel\n"
    "python3 -m pip --python /opt/venv/bin/python install --no-build-isolation "
    "/workspace/tinyext\n"
    "cd / && /opt/venv/bin/python /workspace/fit.py\n")


def test_a_venv_on_a_pyenv_python_is_rebuilt_on_a_substitute_of_the_same_version(
        engine: Any, ca_bundle: Path | None, wheelhouse: Path | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run names no source for pyenv's Python: the exporting user's uv settings do."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    made: list[str] = []
    try:
        with _served_build(engine, tmp_path) as (url, archive, sha256):
            monkeypatch.setenv("UV_PYTHON_DOWNLOADS_JSON_URL", f"{url}/downloads.json")
            script = tmp_path / "pyenv.sh"
            script.write_text(PYENV_TRANSCRIPT.format(url=url, archive=archive, pyenv=PYENV))
            _result, outcome = replay_and_verify(load_task(TASK), script, settings, engine,
                                                 tmp_path / "verify", made)
            doc = outcome.document
            _check_verify(doc, outcome.exit_code)
            art = Path(doc["target"]["artifact_dir"])
            lock = (art / "managed-python.lock").read_text().splitlines()[-1]
            assert lock == f"{sha256} {url}/{archive} {PYENV}"
            assert "substituted by python-build-standalone" in (
                art / "export-report.md").read_text()
            assert _base_prefix(engine, doc["build"]["image"]) == PYENV
    finally:
        for ref in made:
            engine.remove_image(ref)


def _base_prefix(engine: Any, image: str) -> str:
    return _run(engine, image, "/opt/venv/bin/python", "-c",
                "import sys; print(sys.base_prefix)")


def _run(engine: Any, image: str, *argv: str) -> str:
    out = engine.client.containers.run(image, list(argv), remove=True, network_disabled=True)
    return str(out.decode().strip())


def _check_verify(doc: dict[str, Any], exit_code: int) -> None:
    rebuilt = {r["level"]: r for r in doc["reports"]["rebuilt"]["levels"]}
    assert rebuilt["C1"]["status"] == "pass", rebuilt["C1"]
    assert doc["fidelity"]["reaches_live_level"] is True, json.dumps(doc["fidelity"])[:3000]
    assert doc["fingerprint"]["packages_equal"] is True, doc["fingerprint"]["summary"]
    # tinyext, compiled in the run against the downloaded interpreter, and in the rebuild
    # against the one the artifact unpacked (fit.py, C1's command, imports it).
    assert doc["fingerprint"]["native_equal"] is True, doc["fingerprint"]["summary"]
    assert exit_code == 0


def _check_artifact(art: Path, url: str, sha256: str) -> None:
    lock = [line for line in (art / "managed-python.lock").read_text().splitlines()
            if not line.startswith("#")]
    assert lock == [f"{sha256} {url}/{ARCHIVE.replace('+', '%2B')} {UV_DIR}/{KEY} {LINK} "
                    f"{BIN_LINK}={EXECUTABLE}"]
    plan = json.loads((art / "plan.json").read_text())["plan"]
    assert [p["key"] for p in plan["pythons"]] == [KEY]
    report = (art / "export-report.md").read_text()
    assert "an interpreter the base image does not have" not in report
    docker = (art / "Dockerfile").read_text()
    venv = docker.index(f"RUN {LINK}/bin/python3 -m venv")
    assert docker.index("install-managed-python.py") < venv
    # The interpreter is not an environment of its own: its archive brings all it has.
    assert sorted(p.name for p in art.glob("requirements*.lock")) == ["requirements.lock"]
    report_json = json.loads((art / "export-report.json").read_text())
    # uv's bin folder and bookkeeping (.lock, .temp, .gitignore) are explained.
    assert report_json["unexplained"] == [], report_json["unexplained"]
    outcomes = report_json["commands"]
    install = next(o for o in outcomes if "uv python install" in o["command"])
    assert install["decision"] == "folded", install


def _check_offline(art: Path, sha256: str, settings: Settings, engine: Any, tmp_path: Path,
                   made: list[str]) -> None:
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["bundle"]["by_kind"]["python"]["files"] == 1
    assert manifest["files"][f"vendor/python/{ARCHIVE}"] == sha256
    rebuilt_offline(art, settings, engine, tmp_path / "offline", made)
