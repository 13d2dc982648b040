"""Interpreters uv downloaded: named by distill, resolved by the export with the real uv,
pinned in managed-python.lock and unpacked by the artifact's installer script."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distill_runs import NO_ENGINE, cmd, dist, fake_base, make_run_dir, system_python
from msgspec.structs import replace

from synth.config import Settings
from synth.distill.load import load_run
from synth.distill.plan import PythonEnvPlan, distill
from synth.engine.file_server import serve_folder
from synth.errors import ExportError
from synth.export.artifact import ExportOptions, export_run
from synth.export.lock import Lock, LockedPin, LockTarget
from synth.export.managed_python import INSTALL_MANAGED_PYTHON, download_url, resolve_pythons
from synth.export.metadata import CitationOptions
from synth.export.render import render_artifact, templates_dir
from synth.formats.plan import MANAGED_PYTHON_LOCK, BuildPlan, ManagedPython

UV_DIR = "/root/.local/share/uv/python"
KEY = "cpython-3.11.2-linux-x86_64-gnu"
LINK = f"{UV_DIR}/cpython-3.11-linux-x86_64-gnu"
JSON_URL = "http://10.0.0.1:8000/downloads.json"


def _managed_run(tmp_path: Path, json_url: str = JSON_URL,
                 diff: tuple[tuple[str, str], ...] = ()) -> Path:
    uv_python = {"path": f"{UV_DIR}/{KEY}/bin/python3", "kind": "uv", "version": "3.11.2",
                 "prefix": f"{UV_DIR}/{KEY}", "base_prefix": f"{UV_DIR}/{KEY}",
                 "created_by_agent": True, "distributions": []}
    venv = {"path": "/opt/venv/bin/python", "kind": "venv", "version": "3.11.2",
            "prefix": "/opt/venv", "base_prefix": LINK, "created_by_agent": True,
            "distributions": [dist("six", "1.17.0", installer="uv")]}
    audit = [cmd(f"UV_PYTHON_DOWNLOADS_JSON_URL={json_url} uv python install 3.11.2"),
             cmd("uv venv -p 3.11 /opt/venv"),
             cmd("uv pip install --python /opt/venv six==1.17.0")]
    return make_run_dir(tmp_path, audit, python=[system_python(), uv_python, venv], diff=diff)


def test_a_venv_on_a_uv_python_is_made_from_that_python_unpacked_first(tmp_path: Path) -> None:
    plan, report = distill(load_run(_managed_run(tmp_path)))
    assert plan.pythons == (ManagedPython(
        tool="uv", key=KEY, prefix=f"{UV_DIR}/{KEY}", version="3.11.2", links=(LINK,),
        downloads_json_url=JSON_URL, mirror=None),)
    assert [e.prefix for e in plan.envs] == ["/opt/venv"]  # the archive brings all it has
    env = plan.envs[0]
    assert env.create == (f"{LINK}/bin/python3", "-m", "venv", "--without-pip", "/opt/venv")
    install = next(o for o in report.outcomes if "uv python install" in o.command)
    assert (install.decision, "managed-python.lock" in install.reason) == ("folded", True)
    assert not [u for u in report.unexplained if "/uv/python/cpython" in u], report.unexplained
    # Reproduced now: no "an interpreter the base image does not have".
    assert not [n for n in report.not_reproducible if "/opt/venv" in n or "uv" in n], \
        report.not_reproducible


#: What ``uv python install`` adds beside the build: its bin folder's link, its bookkeeping.
UV_ADDED = tuple(("A", p) for p in (
    "/root/.local", "/root/.local/bin", "/root/.local/bin/python3.11", "/root/.local/bin/python3",
    "/root/.local/share", "/root/.local/share/uv", UV_DIR, f"{UV_DIR}/.gitignore",
    f"{UV_DIR}/.lock", f"{UV_DIR}/.temp", LINK, f"{UV_DIR}/{KEY}", f"{UV_DIR}/{KEY}/bin",
    f"{UV_DIR}/{KEY}/bin/python3.11", "/opt/venv", "/opt/venv/bin/python3.11",
    "/usr/local/bin/python3.11"))


def test_uv_s_links_to_its_interpreter_are_made_again_and_its_bookkeeping_explained(
        tmp_path: Path) -> None:
    from synth.distill.managed_python import _with_links, link_candidates

    run = load_run(_managed_run(tmp_path, diff=UV_ADDED))
    # Asked of the live image: uv's folder's entries and interpreter-named paths outside
    # every interpreter's prefix (not the venv's, not the build's own bin folder).
    assert link_candidates(run) == tuple(sorted((
        "/root/.local/bin/python3", "/root/.local/bin/python3.11", f"{UV_DIR}/.gitignore",
        f"{UV_DIR}/.lock", f"{UV_DIR}/.temp", LINK, f"{UV_DIR}/{KEY}",
        "/usr/local/bin/python3.11")))
    plan, report = distill(run, link_targets={
        "/root/.local/bin/python3.11": f"{LINK}/bin/python3.11",
        # uv's minor link, relative; an agent's link elsewhere; a blank: not the build's.
        LINK: KEY, "/usr/local/bin/python3.11": "/usr/bin/python3.11",
        "/root/.local/bin/python3": "/x y"})
    python = plan.pythons[0]
    assert python.links == (LINK,)
    assert python.executables == (("/root/.local/bin/python3.11", f"{LINK}/bin/python3.11"),)
    assert report.unexplained == ("A /root/.local/bin/python3", "A /usr/local/bin/python3.11")
    lock = render_artifact(replace(plan, pythons=_resolved(plan.pythons)), report, [
        Lock(env=plan.envs[0], pins=(LockedPin("six", "1.17.0", ("cd" * 32,)),),
             locker="uv")])[MANAGED_PYTHON_LOCK]
    assert lock.splitlines()[-1].endswith(
        f" {LINK} /root/.local/bin/python3.11={LINK}/bin/python3.11")
    # A venv made through the full folder: uv's minor link is found among the targets,
    # and the executable that leads through it is the build's too.
    python = plan.pythons[0]
    again = _with_links(replace(python, links=()), {
        "/root/.local/bin/python3.11": f"{LINK}/bin/python3.11", LINK: KEY})
    assert (again.links, again.executables) == (python.links, python.executables)
    # No live image read: the links are unexplained, as before.
    _, unread = distill(run)
    assert "A /root/.local/bin" in unread.unexplained
    assert f"A {UV_DIR}/.lock" not in unread.unexplained  # uv's own, either way
    # uv leaves its scratch folder empty: a file inside it is no bookkeeping of uv's.
    hidden = load_run(_managed_run(tmp_path / "hidden", diff=(
        *UV_ADDED, ("A", f"{UV_DIR}/.temp/payload.so"), ("A", f"{UV_DIR}/.cache/x/y"))))
    _, report = distill(hidden, link_targets={LINK: KEY})
    assert f"A {UV_DIR}/.temp/payload.so" in report.unexplained, report.unexplained
    # A .cache folder is noise wherever it is, as the session classifies it.
    assert f"{UV_DIR}/.cache/x/y" in {c.path for c in hidden.noise}
    assert f"A {UV_DIR}/.temp" not in report.unexplained


def test_only_a_plain_folder_under_uv_s_python_directory_is_a_downloaded_python() -> None:
    from synth.distill.managed_python import is_uv_managed

    assert is_uv_managed(f"{UV_DIR}/{KEY}") and is_uv_managed(LINK)
    for odd in (f"{UV_DIR}/../../../../etc/cron.d", "root/.local/share/uv/python/x",
                f"{UV_DIR}/a b", f"{UV_DIR}/{KEY}/", "/usr", None, ""):
        assert not is_uv_managed(odd), odd


def test_a_venv_on_the_base_python_names_no_downloaded_one(tmp_path: Path) -> None:
    from distill_runs import venv

    run = make_run_dir(tmp_path, [cmd("uv venv /opt/venv")],
                       python=[system_python(), venv(dists=[dist("six", "1.17.0")])])
    plan, _ = distill(load_run(run))
    assert plan.pythons == ()
    assert plan.envs[0].create[0] == "python3"


def _resolved(plan_pythons: tuple[ManagedPython, ...]) -> tuple[ManagedPython, ...]:
    return tuple(replace(p, url=f"https://mirror.example/{p.key}.tar.gz", sha256="ab" * 32)
                 for p in plan_pythons)


def test_the_lock_and_the_dockerfile_unpack_it_before_the_venv(tmp_path: Path) -> None:
    plan, report = distill(load_run(_managed_run(tmp_path)))
    plan = replace(plan, pythons=_resolved(plan.pythons))
    lock = Lock(env=plan.envs[0], pins=(LockedPin("six", "1.17.0", ("cd" * 32,)),),
                locker="uv")
    files = render_artifact(plan, report, [lock])
    assert files[MANAGED_PYTHON_LOCK].splitlines()[-1] == (
        f"{'ab' * 32} https://mirror.example/{KEY}.tar.gz {UV_DIR}/{KEY} {LINK}")
    assert files[INSTALL_MANAGED_PYTHON] == (templates_dir() / INSTALL_MANAGED_PYTHON).read_text()
    docker = str(files["Dockerfile"])
    unpack = docker.index("install-managed-python.py /tmp/synth/managed-python.lock")
    assert unpack < docker.index(f"RUN {LINK}/bin/python3 -m venv --without-pip /opt/venv")
    assert "managed-python.lock" in str(files["README.md"])
    # The same plan renders the same files.
    again = render_artifact(plan, report, [lock])
    assert again[MANAGED_PYTHON_LOCK] == files[MANAGED_PYTHON_LOCK]
    assert again["Dockerfile"] == files["Dockerfile"]


def test_an_unresolved_interpreter_is_not_rendered(tmp_path: Path) -> None:
    plan, report = distill(load_run(_managed_run(tmp_path)))
    with pytest.raises(ExportError, match="not resolved"):
        render_artifact(plan, report, [])


# --- the archive: made here, resolved by the real uv, unpacked by the real script ---------

def _archive(tmp_path: Path, extra: list[tarfile.TarInfo] | None = None) -> Path:
    """A python-build-standalone-shaped archive: python/bin/python3.11 and its link."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        body = b"#!/bin/sh\necho managed\n"
        info = tarfile.TarInfo("python/bin/python3.11")
        info.size, info.mode = len(body), 0o755
        tar.addfile(info, io.BytesIO(body))
        link = tarfile.TarInfo("python/bin/python3")
        link.type, link.linkname = tarfile.SYMTYPE, "python3.11"
        tar.addfile(link)
        for member in extra or []:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isreg() else None)
    path = tmp_path / "cpython-3.11.2+20230207-x86_64-unknown-linux-gnu-install_only.tar.gz"
    path.write_bytes(buf.getvalue())
    return path


def _downloads_json(root: Path, url: str, sha256: str) -> Path:
    doc = {KEY: {"name": "cpython", "arch": {"family": "x86_64", "variant": None},
                 "os": "linux", "libc": "gnu", "major": 3, "minor": 11, "patch": 2,
                 "prerelease": "", "url": url, "sha256": sha256, "variant": None}}
    path = root / "downloads.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str, str]]:
    """The archive and a downloads list naming it, served on 127.0.0.1: (list URL, archive
    URL, sha256). The bundle cache is the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "mirror"
    root.mkdir()
    archive = _archive(root)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    with serve_folder(root, "127.0.0.1") as base:
        url = f"{base}/{archive.name.replace('+', '%2B')}"
        _downloads_json(root, url, digest)
        yield f"{base}/downloads.json", url, digest


def _with_list(plan: BuildPlan, listing: str) -> BuildPlan:
    return replace(plan, pythons=tuple(replace(p, downloads_json_url=listing)
                                       for p in plan.pythons))


def test_the_export_asks_uv_for_the_archive_and_hashes_it(
        tmp_path: Path, mirror: tuple[str, str, str]) -> None:
    listing, url, digest = mirror
    plan = _with_list(distill(load_run(_managed_run(tmp_path)))[0], listing)
    settings = Settings.load(artifacts_dir=tmp_path)
    assert download_url(plan.pythons[0], settings) == url
    resolved = resolve_pythons(plan, settings, None).pythons[0]
    assert (resolved.url, resolved.sha256) == (url, digest)
    # uv names nothing for a build the list lacks: a located error, not a guess.
    other = replace(plan.pythons[0], key="cpython-3.12.9-linux-x86_64-gnu")
    with pytest.raises(ExportError, match="names no download for the run's interpreter"):
        download_url(other, settings)


def test_only_an_interpreter_archive_over_http_reaches_the_artifact(
        tmp_path: Path, mirror: tuple[str, str, str]) -> None:
    """The list and the archive's URL come from what the agent named: a container path is not
    read on this machine, a file:// archive is not fetched, and what is not an interpreter's
    archive (a host file, a metadata service's answer) or what names no plain file is refused
    before any artifact."""
    listing, _url, _digest = mirror
    plan = distill(load_run(_managed_run(tmp_path)))[0]
    settings = Settings.load(artifacts_dir=tmp_path)
    with pytest.raises(ExportError, match="a path in the container"):
        resolve_pythons(_with_list(plan, "/root/.ssh/downloads.json"), settings, None)
    secret = tmp_path / "mirror" / "secret.txt"
    secret.write_text("host secret\n")
    for i, (bad, why) in enumerate(((secret.as_uri(), "only an http"),
                                    (listing.replace("downloads.json", "secret.txt"),
                                     "not an interpreter's archive"),
                                    # --bundle writes vendor/python/<name>: never ../..
                                    (listing.replace("downloads.json", "..%2F..%2Fx.tar.gz"),
                                     "names no plain file"))):
        doc = tmp_path / "mirror" / f"bad{i}.json"
        doc.write_text((tmp_path / "mirror" / "downloads.json").read_text().replace(
            _url, bad))
        with pytest.raises(ExportError, match=why):
            resolve_pythons(_with_list(plan, listing.replace("downloads", f"bad{i}")),
                            settings, None)


def _install(tmp_path: Path, lock_line: str, *args: str) -> subprocess.CompletedProcess[str]:
    lock = tmp_path / "managed-python.lock"
    lock.write_text("# a comment\n" + lock_line + "\n")
    script = templates_dir() / INSTALL_MANAGED_PYTHON
    return subprocess.run([sys.executable, str(script), str(lock), *args],
                          capture_output=True, text=True, check=False)


def test_the_installer_unpacks_at_the_prefix_and_makes_the_links(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    prefix, link = tmp_path / "uv" / KEY, tmp_path / "uv" / "cpython-3.11-linux-x86_64-gnu"
    done = _install(tmp_path, f"{digest} {archive.as_uri()} {prefix} {link}")
    assert done.returncode == 0, done.stderr
    assert (prefix / "bin" / "python3.11").read_bytes().endswith(b"echo managed\n")
    assert (prefix / "bin" / "python3").readlink() == Path("python3.11")
    assert link.readlink() == prefix
    # PATH=TARGET: a link to a file in it (uv's bin folder's), through the minor link.
    exe, bin_link = tmp_path / "bin" / "python3.11", tmp_path / "exe" / "python3.11"
    done = _install(tmp_path, f"{digest} {archive.as_uri()} {tmp_path / 'third'} "
                    f"{tmp_path / 'minor'} {bin_link}={tmp_path / 'minor'}/bin/python3.11")
    assert done.returncode == 0, done.stderr
    assert bin_link.readlink() == tmp_path / "minor" / "bin" / "python3.11"
    assert bin_link.read_bytes().endswith(b"echo managed\n")
    assert not exe.exists()
    # From a folder of archives (the bundle) by file name, with no URL reachable.
    again = tmp_path / "again" / KEY
    done = _install(tmp_path, f"{digest} https://unreachable.invalid/{archive.name} {again}",
                    str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (again / "bin" / "python3.11").is_file()


def test_the_installer_refuses_other_bytes_and_links_out(tmp_path: Path) -> None:
    archive = _archive(tmp_path)
    prefix = tmp_path / "uv" / KEY
    done = _install(tmp_path, f"{'0' * 64} {archive.as_uri()} {prefix}")
    assert done.returncode == 1 and "does not match its sha256" in done.stderr
    assert not prefix.exists()
    out = tarfile.TarInfo("python/lib/evil")
    out.type, out.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
    bad = _archive(tmp_path, [out])
    digest = hashlib.sha256(bad.read_bytes()).hexdigest()
    done = _install(tmp_path, f"{digest} {bad.as_uri()} {prefix}")
    assert done.returncode == 1 and "link out of the interpreter" in done.stderr
    assert not prefix.exists()
    # A lock's link out of the interpreter stops it before anything is unpacked.
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    for bad_link in (f"{tmp_path}/bin/python3={prefix}/../../../etc/passwd",
                     f"{tmp_path}/bin/python3={prefix}", "relative/python3"):
        done = _install(tmp_path, f"{digest} {archive.as_uri()} {prefix} {bad_link}")
        assert done.returncode == 1 and ("link out of the interpreter" in done.stderr
                                         or "not an absolute path" in done.stderr), done.stderr
        assert not prefix.exists() and not (tmp_path / "bin").exists()


def _fake_locker(env: PythonEnvPlan, _target: LockTarget) -> Lock:
    return Lock(env=env, pins=tuple(LockedPin(n, v, ("cd" * 32,)) for n, v in env.pins),
                locker="fake")


def test_an_export_pins_the_archive_and_lists_it_in_the_sbom(
        tmp_path: Path, mirror: tuple[str, str, str]) -> None:
    """The whole export: twice, byte for byte; the SBOM names the interpreter with its URL
    and digest."""
    listing, url, digest = mirror
    run_dir = _managed_run(tmp_path, json_url=listing)
    settings = Settings.load(artifacts_dir=tmp_path)
    arts = [export_run(ExportOptions(
        run_dir, out_dir=tmp_path / name, locker=_fake_locker, ask_live=False, archive=True,
        citation=CitationOptions(authors=("Ada Lovelace",), license="mit"),
        save_base=fake_base(run_dir)), settings, NO_ENGINE).artifact_dir for name in "ab"]
    lock = (arts[0] / MANAGED_PYTHON_LOCK).read_text().splitlines()[-1]
    assert lock == f"{digest} {url} {UV_DIR}/{KEY} {LINK}"
    for name in (MANAGED_PYTHON_LOCK, "Dockerfile", "plan.json", "sbom.cdx.json"):
        assert (arts[0] / name).read_bytes() == (arts[1] / name).read_bytes(), name
    components = json.loads((arts[0] / "sbom.cdx.json").read_text())["components"]
    python = next(c for c in components if c.get("bom-ref") == f"python:{UV_DIR}/{KEY}")
    assert python["purl"].startswith("pkg:generic/cpython@3.11.2?checksum=sha256:" + digest)
    assert python["hashes"] == [{"alg": "SHA-256", "content": digest}]
    assert python["externalReferences"] == [{"type": "distribution", "url": url}]


def test_an_archive_that_cannot_be_resolved_stops_the_export_unless_allowed(
        tmp_path: Path, mirror: tuple[str, str, str]) -> None:
    """The downloads list is gone at export time: a located error naming the way out;
    --allow-missing makes the venv from the base's python3 and says so at the report's top."""
    run_dir = _managed_run(tmp_path, json_url=mirror[0].replace("downloads", "gone"))
    settings = Settings.load(artifacts_dir=tmp_path)

    def export(name: str, allow: bool) -> Path:
        return export_run(ExportOptions(run_dir, out_dir=tmp_path / name, locker=_fake_locker,
                                        ask_live=False, allow_missing=allow),
                          settings, NO_ENGINE).artifact_dir

    with pytest.raises(ExportError) as err:
        export("refused", False)
    assert KEY in err.value.message and "--allow-missing" in (err.value.hint or "")
    assert not (tmp_path / "refused").exists()
    art = export("allowed", True)
    assert not (art / MANAGED_PYTHON_LOCK).exists()
    assert "RUN python3 -m venv --without-pip /opt/venv" in (art / "Dockerfile").read_text()
    report = (art / "export-report.md").read_text()
    top = report[:report.index("## NOT REPRODUCED") + 600]
    assert f"the uv-managed Python {KEY}" in top, top


def test_diff_reads_the_interpreter_lock_by_path(tmp_path: Path) -> None:
    from synth.compare.load import lock_fields

    (tmp_path / MANAGED_PYTHON_LOCK).write_text(
        f"# header\n{'ab' * 32} https://m.example/{KEY}.tar.gz {UV_DIR}/{KEY} {LINK}\n")
    assert lock_fields(tmp_path) == {
        f"{MANAGED_PYTHON_LOCK}: {UV_DIR}/{KEY}":
            f"https://m.example/{KEY}.tar.gz sha256:{'ab' * 32}"}


PYENV = "/root/.pyenv/versions/3.11.2"


def _pyenv_interpreters(*, built_in_run: bool) -> list[dict[str, Any]]:
    """The base's python3, a pyenv build (the run's, or the base image's) and a venv on it."""
    built = {"path": f"{PYENV}/bin/python", "kind": "pyenv", "version": "3.11.2",
             "prefix": PYENV, "base_prefix": PYENV, "created_by_agent": built_in_run,
             "distributions": []}
    venv = {"path": "/opt/venv/bin/python", "kind": "venv", "version": "3.11.2",
            "prefix": "/opt/venv", "base_prefix": PYENV, "created_by_agent": True,
            "distributions": [dist("six", "1.17.0")]}
    return [system_python(), built, venv]


def _pyenv_run(tmp_path: Path) -> Path:
    audit = [cmd("pyenv install 3.11.2"),
             cmd(f"{PYENV}/bin/python -m venv --without-pip /opt/venv"),
             cmd("python3 -m pip --python /opt/venv/bin/python install six==1.17.0")]
    return make_run_dir(tmp_path, audit, python=_pyenv_interpreters(built_in_run=True))


def test_a_pyenv_build_is_substituted_by_the_same_version_and_said(tmp_path: Path) -> None:
    plan, report = distill(load_run(_pyenv_run(tmp_path)))
    assert plan.pythons == (ManagedPython(tool="pyenv", key=KEY, prefix=PYENV,
                                          version="3.11.2"),)
    assert [e.prefix for e in plan.envs] == ["/opt/venv"]
    assert plan.envs[0].create == (f"{PYENV}/bin/python3", "-m", "venv", "--without-pip",
                                   "/opt/venv")
    said = [w for w in report.warnings if "substituted" in w]
    assert said and PYENV in said[0] and "not the same binary" in said[0], report.warnings
    assert not [n for n in report.not_reproducible if "pyenv" in n], report.not_reproducible
    install = next(o for o in report.outcomes if o.command == "pyenv install 3.11.2")
    assert install.decision == "folded", install


def test_a_pyenv_substitute_comes_from_the_exporting_user_s_uv_settings(
        tmp_path: Path, mirror: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The run names no source for it: the exporting user's UV_PYTHON_DOWNLOADS_JSON_URL
    does (here the served list); the archive is not compared with pyenv's binary."""
    listing, url, digest = mirror
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS_JSON_URL", listing)
    run_dir = _pyenv_run(tmp_path)
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "a", locker=_fake_locker,
                                   ask_live=False), Settings.load(artifacts_dir=tmp_path),
                     NO_ENGINE).artifact_dir
    lock = (art / MANAGED_PYTHON_LOCK).read_text().splitlines()
    assert lock[-1] == f"{digest} {url} {PYENV}"
    assert "pyenv's build substituted" in (art / "Dockerfile").read_text()
    assert "substituted by python-build-standalone" in (art / "export-report.md").read_text()


def test_an_interpreter_the_base_image_has_is_used_not_unpacked(tmp_path: Path) -> None:
    """A pyenv version the base image brought (ResearchEnvBench's has several): the venv is
    made from it, and nothing is unpacked over it."""
    run = make_run_dir(tmp_path, [cmd(f"{PYENV}/bin/python -m venv /opt/venv")],
                       python=_pyenv_interpreters(built_in_run=False))
    plan, report = distill(load_run(run))
    assert plan.pythons == ()
    assert plan.envs[0].create == (f"{PYENV}/bin/python3", "-m", "venv", "/opt/venv")
    assert not report.not_reproducible and not [w for w in report.warnings if "pyenv" in w]
