"""Capturing conda prefixes: the probe reads conda-meta, the session marks what the base
image had, the state type reads it back."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

from synth.formats.state import Interpreter
from synth.pyramid.probes import __file__ as probes_init
from synth.record.snapshot import conda_prefix

PROBE = Path(probes_init).parent / "python_env.py"


def _probe(prefix: Path) -> str:
    """The probe's output under the venv ``prefix``'s interpreter (its sys.prefix)."""
    return subprocess.run([str(prefix / "bin" / "python"), str(PROBE)], check=True,
                          capture_output=True, text=True, env={"PYTHONNOUSERSITE": "1"}).stdout


def _record(name: str, version: str, build: str, **extra: object) -> dict[str, object]:
    url = f"https://user:secret@conda.example.org/t/tk-123/main/linux-64/{name}-{version}-{build}.tar.bz2"
    return {"name": name, "version": version, "build": build, "build_number": 0,
            "channel": "https://user:secret@conda.example.org/t/tk-123/main", "url": url,
            "sha256": "a" * 64, "md5": "b" * 32, "subdir": "linux-64",
            "fn": f"{name}-{version}-{build}.tar.bz2", "files": ["bin/x"] * 3,
            "paths_data": {"paths": []}, **extra}


def test_the_probe_reads_conda_meta_without_credentials(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    venv.create(prefix, with_pip=False)
    meta = prefix / "conda-meta"
    meta.mkdir()
    (meta / "zlib-1.3-h0.json").write_text(json.dumps(_record("zlib", "1.3", "h0")))
    (meta / "python-3.11.2-0.json").write_text(json.dumps(_record("python", "3.11.2", "0")))
    (meta / "broken.json").write_text("{not json")
    (meta / "history").write_text("==> 2026-01-01 <==\n# cmd: conda create -n x python\n"
                                  "# update specs: ['python=3.11', 'zlib']\n"
                                  "# update specs: ['zlib', 'tinylib']\n")
    out = _probe(prefix)
    conda = json.loads(out)["conda"]
    assert conda["prefix"] == str(prefix)
    assert [p["name"] for p in conda["packages"]] == ["python", "zlib"]
    python = conda["packages"][0]
    assert python["url"] == ("https://conda.example.org/main/linux-64/"
                             "python-3.11.2-0.tar.bz2")
    assert python["channel"] == "https://conda.example.org/main"
    assert "files" not in python and python["meta_file"] == "python-3.11.2-0.json"
    assert conda["requested"] == ["python=3.11", "zlib", "tinylib"]
    assert "secret" not in out and "tk-123" not in out


def test_a_prefix_without_conda_meta_has_no_conda_packages(tmp_path: Path) -> None:
    venv.create(tmp_path / "env", with_pip=False)
    assert json.loads(_probe(tmp_path / "env"))["conda"] is None


def test_the_session_marks_packages_the_base_image_had() -> None:
    found = {"prefix": "/opt/conda", "requested": ["numpy"], "packages": [
        {"name": "numpy", "version": "2.0", "build": "0", "meta_file": "numpy-2.0-0.json"},
        {"name": "python", "version": "3.11", "build": "0", "meta_file": "python-3.11-0.json"},
    ]}
    got = conda_prefix(found, {"/opt/conda/conda-meta/numpy-2.0-0.json"})
    assert got is not None
    assert [(p["name"], p["in_base"]) for p in got["packages"]] == [
        ("numpy", False), ("python", True)]
    assert all("meta_file" not in p for p in got["packages"])
    assert conda_prefix(None, set()) is None
    assert conda_prefix({"packages": "nope"}, set()) is None
    interp = Interpreter.from_json({
        "path": "/opt/conda/bin/python", "kind": "conda", "created_by_agent": False,
        "distributions": [], "prefix": "/opt/conda", "conda": got})
    assert interp.conda is not None
    assert [p.name for p in interp.conda.added] == ["numpy"]
    assert interp.conda.requested == ("numpy",)


def test_the_probe_reads_what_the_activation_scripts_set(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    venv.create(prefix, with_pip=False)
    (prefix / "conda-meta").mkdir()
    scripts = prefix / "etc" / "conda" / "activate.d"
    scripts.mkdir(parents=True)
    (scripts / "gdal-activate.sh").write_text(
        'export CONDA_BACKUP_GDAL_DATA="${GDAL_DATA:-}"\n'
        'export GDAL_DATA="$CONDA_PREFIX/share/gdal"\nexport PATH="/nowhere:$PATH"\n'
        'echo noise; false\n')
    (scripts / "proj.sh").write_text('export PROJ_DATA="${GDAL_DATA%/gdal}/proj"\n')
    (scripts / "notes.txt").write_text("export IGNORED=1\n")  # only *.sh is sourced
    conda = json.loads(_probe(prefix))["conda"]
    assert conda["activation"] == [["GDAL_DATA", f"{prefix}/share/gdal"],
                                   ["PROJ_DATA", f"{prefix}/share/proj"]]
    got = conda_prefix(conda, set())
    assert got is not None
    interp = Interpreter.from_json({
        "path": f"{prefix}/bin/python", "kind": "conda", "created_by_agent": True,
        "distributions": [], "prefix": str(prefix), "conda": got})
    assert interp.conda is not None
    assert interp.conda.activation == (("GDAL_DATA", f"{prefix}/share/gdal"),
                                       ("PROJ_DATA", f"{prefix}/share/proj"))
    (scripts / "gdal-activate.sh").unlink()
    (scripts / "proj.sh").unlink()
    assert json.loads(_probe(prefix))["conda"]["activation"] == []
