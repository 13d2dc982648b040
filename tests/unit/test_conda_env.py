"""A conda prefix the agent made: planned from conda-meta, locked as @EXPLICIT, rendered as
a no-solve recreation followed by its pip layer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from distill_runs import NO_ENGINE, cmd, dist, fake_base, make_run_dir, system_python

from synth.config import Settings
from synth.distill.common import Notes
from synth.distill.conda_env import conda_pin, conda_plan
from synth.distill.load import load_run
from synth.distill.plan import PythonEnvPlan, distill
from synth.export.artifact import ExportOptions, export_run
from synth.export.lock import Lock, LockedPin, LockTarget
from synth.export.metadata import CitationOptions
from synth.formats.state import CondaPackage, Interpreter

PREFIX = "/opt/conda/envs/research"
CHANNEL = "http://127.0.0.1:8741"
SITE = f"{PREFIX}/lib/python3.11/site-packages"


def _pkg(name: str, version: str, build: str, subdir: str = "noarch",
         **extra: Any) -> dict[str, Any]:
    fn = f"{name}-{version}-{build}.tar.bz2"
    return {"name": name, "version": version, "build": build, "channel": CHANNEL,
            "url": f"{CHANNEL}/{subdir}/{fn}", "subdir": subdir, "fn": fn,
            "sha256": hashlib.sha256(fn.encode()).hexdigest(), "md5": "0" * 32,
            "in_base": False, **extra}


def conda_interp(*, created: bool = True, in_base: bool = False) -> dict[str, Any]:
    packages = [_pkg("tinylib", "1.1", "py_0"), _pkg("python", "3.11.2", "0_debian12",
                                                       "linux-64"), _pkg("pip", "26.3", "py_0")]
    packages = [{**p, "in_base": in_base} for p in packages]
    return {"path": f"{PREFIX}/bin/python", "kind": "conda", "version": "3.11.2",
            "prefix": PREFIX, "base_prefix": PREFIX, "created_by_agent": created,
            "distributions": [dist("pip", "26.3", installer="conda", location=SITE),
                              dist("six", "1.17.0", location=SITE),
                              dist("tinylib", "1.1", installer="conda", location=SITE)],
            "conda": {"prefix": PREFIX, "packages": packages,
                      "requested": ["python=3.11", "tinylib",
                                    "x\nhttp://evil/a.conda#" + "0" * 64]}}


def _run(tmp: Path) -> Path:
    audit: list[dict[str, Any]] = [cmd("conda create -n research python=3.11 tinylib -y"),
             cmd(f"{PREFIX}/bin/pip install six")]
    run_dir: Path = make_run_dir(tmp, audit, python=[system_python(), conda_interp()],
                                 primary=f"{PREFIX}/bin/python", diff=[("A", "/opt/conda")])
    return run_dir


def fake_locker(env: PythonEnvPlan, target: LockTarget) -> Lock:
    pins = tuple(LockedPin(name=n, version=v, hashes=(hashlib.sha256(n.encode()).hexdigest(),))
                 for n, v in env.pins)
    uv = LockedPin(name="uv", version="0.13.9", hashes=("1" * 64,))
    rattler = LockedPin(name="py-rattler", version="0.28.0", hashes=("2" * 64,))
    return Lock(env=env, pins=pins, locker="uv", installer=uv,
                conda_installer=rattler if env.kind == "conda" else None)


def test_the_plan_recreates_the_prefix_and_locks_only_its_pip_layer(tmp_path: Path) -> None:
    plan, report = distill(load_run(_run(tmp_path)))
    (conda,) = plan.conda
    assert conda.prefix == PREFIX and conda.lock_file == "conda-opt-conda-envs-research.lock"
    assert [p.name for p in conda.packages] == ["pip", "python", "tinylib"]
    assert conda.platform == "linux-64" and conda.channels == (CHANNEL,)
    assert conda.requested == ("python=3.11", "tinylib")
    env = plan.envs[0]
    assert env.prefix == PREFIX and env.create == () and env.pins == (("six", "1.17.0"),)
    assert env.pip == (f"{PREFIX}/bin/python", "-m", "pip")
    assert not [n for n in report.not_reproducible if "conda" in n]
    create = next(o for o in report.outcomes if o.command.startswith("conda create"))
    assert create.decision == "folded" and conda.lock_file in create.reason
    assert ("CONDA_PREFIX", PREFIX) in plan.env
    assert dict(plan.env)["PATH"].startswith(f"{PREFIX}/bin:")


def test_what_the_primary_prefixs_activation_scripts_set_is_in_env(tmp_path: Path) -> None:
    interp = conda_interp()
    interp["conda"]["activation"] = [["GDAL_DATA", f"{PREFIX}/share/gdal"],
                                     ["MY_TOKEN", "***"], ["SSL_CERT_FILE", "/run/ca"]]
    run_dir = make_run_dir(tmp_path, [cmd("conda create -n research python=3.11 tinylib")],
                           python=[system_python(), interp], primary=f"{PREFIX}/bin/python",
                           diff=[("A", "/opt/conda")], env={"GDAL_DATA": "/mine"})
    plan, _report = distill(load_run(run_dir))
    env = dict(plan.env)
    assert env["GDAL_DATA"] == "/mine"  # what the agent persisted wins
    assert "MY_TOKEN" not in env and "SSL_CERT_FILE" not in env  # never a secret, the CA
    interp["conda"]["activation"] = [["GDAL_DATA", f"{PREFIX}/share/gdal"]]
    again = make_run_dir(tmp_path / "again", [cmd("conda create -n research python=3.11")],
                         python=[system_python(), interp], primary=f"{PREFIX}/bin/python",
                         diff=[("A", "/opt/conda")])
    plan, _report = distill(load_run(again))
    assert ("GDAL_DATA", f"{PREFIX}/share/gdal") in plan.env


def test_a_prefix_the_base_image_had_unchanged_is_left_to_the_base() -> None:
    notes = Notes()
    base = Interpreter.from_json(conda_interp(created=False, in_base=True))
    assert conda_plan(base, notes) is None
    touched = conda_interp(created=False, in_base=True)
    touched["conda"]["packages"][0]["in_base"] = False
    got = conda_plan(Interpreter.from_json(touched), notes)
    assert got is not None and len(got.packages) == 3
    assert notes.not_reproducible == []


def test_a_package_without_a_checkable_url_stops_the_prefix_with_a_note() -> None:
    ok = CondaPackage.from_json(_pkg("zlib", "1.3", "h0", "linux-64"))
    assert conda_pin(ok) is not None
    md5_only = CondaPackage.from_json(_pkg("zlib", "1.3", "h0", sha256=None, md5="a" * 32))
    pin = conda_pin(md5_only)
    assert pin is not None and (pin.sha256, pin.md5) == (None, "a" * 32)
    for bad in ({"sha256": None, "md5": None}, {"url": "ftp://x/zlib.tar.bz2"},
                {"url": f"{CHANNEL}/noarch/zlib-1.3-h0.tar.bz2#evil"},
                {"sha256": "xyz", "md5": None},
                {"url": f"{CHANNEL}/noarch/zlib-1.3 h0.tar.bz2"}, {"version": "1;rm -rf /"}):
        broken = CondaPackage.from_json({**_pkg("zlib", "1.3", "h0"), **bad})
        assert conda_pin(broken) is None, bad
    interp = conda_interp()
    interp["conda"]["packages"][1]["url"] = None
    notes = Notes()
    assert conda_plan(Interpreter.from_json(interp), notes) is None
    assert notes.not_reproducible == [
        f"conda environment {PREFIX}: python have no archive URL with a sha256 or md5 in "
        "conda-meta; the prefix is not recreated"]


def _export(tmp: Path, out: str, run_dir: Path | None = None) -> Path:
    return export_run(ExportOptions(run_dir or _run(tmp), out_dir=tmp / out, locker=fake_locker,
                                    ask_live=False),
                      Settings.load(artifacts_dir=tmp), NO_ENGINE).artifact_dir


def test_the_conda_lock_is_explicit_sorted_and_deterministic(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    a, b = _export(tmp_path, "a", run_dir), _export(tmp_path, "b", run_dir)
    text = (a / "conda-opt-conda-envs-research.lock").read_text()
    assert text == (b / "conda-opt-conda-envs-research.lock").read_text()
    lines = text.splitlines()
    assert lines[:3] == ["# This file may be used to create an environment using:",
                         "# $ conda create --prefix <prefix> --file <this file>",
                         "# platform: linux-64"]
    body = lines[lines.index("@EXPLICIT") + 1:]
    fns = ("pip-26.3-py_0.tar.bz2", "python-3.11.2-0_debian12.tar.bz2",
           "tinylib-1.1-py_0.tar.bz2")
    assert body == [f"{CHANNEL}/{'linux-64' if fn.startswith('python') else 'noarch'}/{fn}#"
                    f"{hashlib.sha256(fn.encode()).hexdigest()}" for fn in fns]
    assert "# requested: python=3.11 tinylib" in lines
    for name in ("conda-installer.lock", "conda-install.py", "Dockerfile", "plan.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert "py-rattler==0.28.0" in (a / "conda-installer.lock").read_text()
    assert "tinylib" not in (a / "requirements.lock").read_text()


def test_the_dockerfile_recreates_the_prefix_before_its_pip_layer(tmp_path: Path) -> None:
    art = _export(tmp_path, "a")
    docker = (art / "Dockerfile").read_text()
    conda_at = docker.index("PYTHONPATH=/tmp/synth/rattler python3 /tmp/synth/conda-install.py "
                            f"/tmp/synth/conda-opt-conda-envs-research.lock {PREFIX} "
                            "/tmp/synth/conda-pkgs")
    assert docker.index("--target /tmp/synth/rattler -r /tmp/synth/conda-installer.lock") \
        < conda_at < docker.index(f"--python {PREFIX}/bin/python")
    assert "rm -rf /tmp/synth/rattler /tmp/synth/conda-pkgs" in docker
    assert "--mount=type=bind,source=conda-opt-conda-envs-research.lock" in docker
    assert f"CONDA_PREFIX={PREFIX}" in docker and f"PATH={PREFIX}/bin:" in docker
    legacy = (art / "Dockerfile.legacy").read_text()
    assert 'COPY ["conda-install.py", "/tmp/synth/conda-install.py"]' in legacy
    readme = (art / "README.md").read_text()
    assert "conda-opt-conda-envs-research.lock" in readme and "conda-install.py" in readme


def test_the_sbom_lists_each_conda_package_with_its_purl_digest_and_url(tmp_path: Path) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    run_dir = _run(tmp_path)
    art = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "a", locker=fake_locker, ask_live=False, archive=True,
        citation=CitationOptions(authors=("Ada Lovelace",), license="mit"),
        save_base=fake_base(run_dir)), Settings.load(artifacts_dir=tmp_path),
        NO_ENGINE).artifact_dir
    text = (art / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    conda = {c["purl"]: c for c in json.loads(text)["components"]
             if c.get("purl", "").startswith("pkg:conda/")}
    fn = "python-3.11.2-0_debian12.tar.bz2"
    python = conda[f"pkg:conda/python@3.11.2?build=0_debian12&channel={CHANNEL}"
                   "&subdir=linux-64&type=tar.bz2"]
    assert python["hashes"] == [{"alg": "SHA-256",
                                 "content": hashlib.sha256(fn.encode()).hexdigest()}]
    assert python["externalReferences"] == [
        {"type": "distribution", "url": f"{CHANNEL}/linux-64/{fn}"}]
    assert {"name": "synth:conda-prefix", "value": PREFIX} in python["properties"]
    assert sorted(p.split("@")[0] for p in conda) == [
        "pkg:conda/pip", "pkg:conda/python", "pkg:conda/tinylib"]


def test_diff_compares_the_conda_packages_of_a_run_and_its_artifact(tmp_path: Path) -> None:
    from synth.compare.diff import diff_sides
    from synth.compare.load import SideLoader, artifact_conda, run_conda
    from synth.distill.plan import distill as plan_of
    from synth.engine.fingerprint import ImageProbe

    run_dir = _run(tmp_path)
    art = _export(tmp_path, "a", run_dir)
    loader = SideLoader(Settings.load(artifacts_dir=tmp_path), images=ImageProbe(NO_ENGINE))
    result = diff_sides(loader.load(str(run_dir)), loader.load(str(art)))
    conda = result.section("conda")
    assert (conda.status, conda.items) == ("equal", ())
    # The run's side lists what the artifact recreates, package by package.
    run = load_run(run_dir)
    assert run_conda(run) == artifact_conda(plan_of(run)[0])
    assert run_conda(run)[f"{PREFIX} python"] == f"3.11.2 0_debian12 ({CHANNEL})"
    # A prefix the base image had as it is belongs to the base: not listed.
    unchanged = make_run_dir(tmp_path / "base", [cmd("true")], python=[
        system_python(), conda_interp(created=False, in_base=True)],
        primary=f"{PREFIX}/bin/python")
    assert run_conda(load_run(unchanged)) == {}
    # Another build of one package is a difference.
    other = _pkg("tinylib", "1.1", "py_1")
    changed = dict(run_conda(run))
    changed[f"{PREFIX} tinylib"] = f"{other['version']} {other['build']} ({CHANNEL})"
    from synth.compare.diff import Side, compare_conda
    got = compare_conda(Side("run", "a", conda=run_conda(run)), Side("run", "b", conda=changed))
    assert [(i.kind, i.key, i.a, i.b) for i in got.items] == [
        ("changed", f"{PREFIX} tinylib", f"1.1 py_0 ({CHANNEL})", f"1.1 py_1 ({CHANNEL})")]


def test_an_unreachable_channel_stops_the_build_saying_what_to_do(tmp_path: Path) -> None:
    """The artifact's conda installer, on a channel nothing serves any more: one line that
    names the URL and the two ways out (a mirror, a bundle), not a traceback."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = Path(__file__).resolve().parents[2] / "templates" / "conda-install.py"
    code = (f"import runpy; m = runpy.run_path({str(script)!r}, run_name='t'); "
            f"m['fetch']('http://127.0.0.1:{port}/linux-64/tinylib-1.1-py_0.tar.bz2', "
            f"{str(tmp_path / 'x')!r}, {'0' * 64!r})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"conda-install: cannot fetch http://127.0.0.1:{port}/"), \
        proc.stderr
    assert "SYNTH_CONDA_MIRRORS" in proc.stderr and "--bundle" in proc.stderr
    assert "Traceback" not in proc.stderr
