"""``export --bundle``, pure parts and the bundled build's own scripts: what lands in
``vendor/`` (each file checked against its lock's hash), the Dockerfile that installs from
it only, the report's size breakdown, byte-identical re-export, ``apt-fetch.sh`` run for
real on the host against a vendored folder, and ``verify --offline``'s refusal of an
artifact that is not bundled. The network is faked (the fetch and pip download); the real
thing is tests/integration/test_durable_bundle.py."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from distill_runs import NO_ENGINE, cmd, deb, dist, make_run_dir, system_python, venv
from test_render_golden import _task, fake_locker

from synth.config import Settings
from synth.errors import ExportError, UsageError
from synth.export import bundle
from synth.export.artifact import ExportOptions, export_run
from synth.export.lock import Lock
from synth.verify.command import check_offline

DEBS = {"gcc": deb("gcc", "4:12.2.0-3"), "hello": deb("hello", "2.10-3")}


def _fake_fetch(cache: Path, url: str, sha256: str) -> Path | None:
    """The fake mirror: a .deb's bytes are its pool path (distill_runs.deb's fake hash)."""
    pool = url.split("/debian/", 1)[1]
    if hashlib.sha256(pool.encode()).hexdigest() != sha256:
        return None
    path = cache / sha256
    path.write_bytes(pool.encode())
    return path


def _fake_pip(lock: Lock, _glibc: str | None, _settings: Settings, into: Path) -> None:
    """The fake index: a distribution's file holds ``name==version`` (fake_locker's hash)."""
    (into / "out").mkdir()
    for p in lock.pins:
        if not p.wheel_files:
            (into / "out" / f"{p.name}-{p.version}-py3-none-any.whl").write_text(
                f"{p.name}=={p.version}")


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("fetched")
    monkeypatch.setattr(bundle, "_fetch", lambda url, sha, _s: _fake_fetch(cache, url, sha))
    monkeypatch.setattr(bundle, "_pip_download", _fake_pip)


def _run(tmp: Path, debs: dict[str, Any] | None = None) -> Path:
    audit = [cmd("apt-get update && apt-get install -y gcc hello",
                 hooks=[("apt-get update", 0), ("apt-get install -y gcc hello", 0)]),
             cmd("python3 -m venv /opt/venv"),
             cmd("/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.0+cpu "
                 "numpy")]
    py = [system_python(), venv(dists=[dist("torch", "2.13.0+cpu"), dist("numpy", "2.3.5")])]
    return make_run_dir(tmp, audit, task="demo", python=py, task_file=_task(tmp),
                        apt_added={"gcc": "4:12.2.0-3", "hello": "2.10-3"},
                        apt_manual=["gcc", "hello"], apt_debs=DEBS if debs is None else debs,
                        diff=[("C", "/opt"), ("A", "/opt/venv")])


def _export(tmp: Path, out: str, **kw: Any) -> Path:
    wheelhouse = tmp / "wheelhouse"
    wheelhouse.mkdir(exist_ok=True)
    (wheelhouse / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_text(
        "torch==2.13.0+cpu")
    settings = Settings.load(artifacts_dir=tmp, wheelhouse=wheelhouse)
    return export_run(ExportOptions(
        kw.pop("run_dir", None) or _run(tmp), out_dir=tmp / out, locker=fake_locker,
        ask_live=False, bundle=True, **kw), settings, NO_ENGINE).artifact_dir


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_bundle_holds_every_file_and_the_dockerfile_needs_no_network(
        tmp_path: Path, fakes: None) -> None:
    art = _export(tmp_path, "a")
    vendor = sorted(p for p in _files(art) if p.startswith("vendor/"))
    assert vendor == ["vendor/debs/gcc_12.2.0-3_amd64.deb", "vendor/debs/hello_2.10-3_amd64.deb",
                      "vendor/wheels/numpy-2.3.5-py3-none-any.whl",
                      "vendor/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                      # the hash-pinned uv that installs the lock (installer.lock) travels too
                      "vendor/wheels/uv-0.13.9-py3-none-any.whl"]
    df = (art / "Dockerfile").read_text()
    assert "--mount=type=bind,source=vendor/debs,target=/synth/vendor/debs" in df
    assert "apt-fetch.sh /tmp/synth/apt.lock /tmp/synth/debs /synth/vendor/debs" in df
    assert "--no-index --find-links /synth/vendor/wheels" in df
    assert "apt-get update" not in df
    # The wheelhouse path the lock names is the bundle's wheels: no wheelhouse/ needed.
    assert "source=wheelhouse" not in df
    assert "--mount=type=bind,source=vendor/wheels,target=/synth/wheelhouse" in df
    assert "vendor)" in (art / "apt-fetch.sh").read_text()
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["wheelhouse_required"] is False  # the wheelhouse wheel travels inside
    assert manifest["files"]["vendor/debs/gcc_12.2.0-3_amd64.deb"] == DEBS["gcc"]["sha256"]
    b = manifest["bundle"]
    assert b["offline"] is True and b["needs_network"] == [] and b["files"] == 5
    assert b["by_kind"]["deb"] == {"files": 2, "bytes": sum(
        len(d["filename"]) for d in DEBS.values())}
    assert b["by_kind"]["wheel"]["files"] == 3 and b["by_kind"]["sdist"]["files"] == 0
    assert b["bytes"] == sum(len(v) for k, v in _files(art).items() if k.startswith("vendor/"))
    report = json.loads((art / "export-report.json").read_text())
    assert report["bundle"] == b
    from synth.formats.schemas import validate

    assert validate(manifest, "manifest") == [] and validate(report, "export-report") == []
    broken = {**manifest, "bundle": {**b, "by_kind": {"deb": {"files": "2"}}}}
    assert validate(broken, "manifest")  # the schema does describe the bundle
    md = (art / "export-report.md").read_text()
    assert "## Bundle (export --bundle)" in md and f"| all | 5 | {b['bytes']} |" in md
    assert "--network none" in (art / "README.md").read_text()


def test_a_bundle_exports_byte_identically(tmp_path: Path, fakes: None) -> None:
    run_dir = _run(tmp_path)
    assert _files(_export(tmp_path, "a", run_dir=run_dir)) == \
        _files(_export(tmp_path, "b", run_dir=run_dir))


def test_an_unbundled_export_renders_no_vendor(tmp_path: Path) -> None:
    art = export_run(ExportOptions(
        _run(tmp_path), out_dir=tmp_path / "o", locker=fake_locker, ask_live=False),
        Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    for name in ("Dockerfile", "apt-fetch.sh", "README.md", "export-report.md"):
        assert "vendor" not in (art / name).read_text(), name
    assert "bundle" not in json.loads((art / "manifest.json").read_text())


def test_a_deb_no_source_has_with_its_hash_is_refused_naming_it(tmp_path: Path,
                                                               fakes: None) -> None:
    bad = {**DEBS, "hello": {**DEBS["hello"], "sha256": "0" * 64}}
    with pytest.raises(ExportError) as err:
        _export(tmp_path, "a", run_dir=_run(tmp_path, bad))
    assert "hello=2.10-3's .deb" in err.value.message
    assert "http://deb.debian.org/debian/pool/main/h/hello/" in err.value.message


def test_unhashed_debs_cannot_be_bundled(tmp_path: Path, fakes: None) -> None:
    with pytest.raises(ExportError) as err:
        _export(tmp_path, "a", run_dir=_run(tmp_path, {"gcc": DEBS["gcc"]}))
    assert "did not describe hello" in err.value.message


def test_a_wheel_whose_hash_the_lock_lacks_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     fakes: None) -> None:
    def evil(lock: Lock, glibc: str | None, settings: Settings, into: Path) -> None:
        _fake_pip(lock, glibc, settings, into)
        (into / "out" / "numpy-2.3.5-py3-none-any.whl").write_text("not numpy")

    monkeypatch.setattr(bundle, "_pip_download", evil)
    with pytest.raises(ExportError) as err:
        _export(tmp_path, "a")
    assert "numpy-2.3.5-py3-none-any.whl hashes to" in err.value.message


def test_apt_fetch_copies_from_the_vendor_and_fails_naming_a_changed_deb(
        tmp_path: Path, fakes: None) -> None:
    art = _export(tmp_path, "a")
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    for p in (art / "vendor" / "debs").iterdir():
        (vendor / p.name).write_bytes(p.read_bytes())

    def fetch() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", str(art / "apt-fetch.sh"), str(art / "apt.lock"),
                               str(tmp_path / "debs"), str(vendor)],
                              capture_output=True, text=True, timeout=60, check=False)

    ok = fetch()
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in (tmp_path / "debs").glob("*.deb")) == sorted(
        p.name for p in vendor.iterdir())
    (vendor / "hello_2.10-3_amd64.deb").write_bytes(b"other bytes")
    bad = fetch()
    assert bad.returncode != 0
    assert "hello_2.10-3_amd64.deb: FAILED" in bad.stdout + bad.stderr
    (vendor / "hello_2.10-3_amd64.deb").unlink()
    gone = fetch()
    assert gone.returncode != 0 and "hello_2.10-3_amd64.deb is not in the bundle" in gone.stderr


def test_offline_needs_a_bundle_that_needs_no_network(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        check_offline(tmp_path, {"task": "demo"})
    assert "not bundled" in err.value.message and "--bundle" in (err.value.hint or "")
    with pytest.raises(UsageError) as err:
        check_offline(tmp_path, {"bundle": {"needs_network": ["a3: setup.py"]}})
    assert "a3: setup.py" in err.value.message
    check_offline(tmp_path, {"bundle": {"needs_network": []}})


def test_platforms_and_sizes() -> None:
    tags = bundle._platforms("2.36")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert tags[-1] == "linux_x86_64" and "manylinux2014_x86_64" in tags
    files = [bundle.BundleFile("vendor/debs/a.deb", "deb", "0" * 64, 2048),
             bundle.BundleFile("vendor/files/" + "1" * 64, "file", "1" * 64, 10)]
    from synth.formats.plan import PLAN_FORMAT, AptPlan, BuildPlan, SourcePlan

    plan = BuildPlan(format=PLAN_FORMAT, task="t", run_id="r", base_ref="b", base_id=None,
                     base_digest=None, apt=AptPlan(), envs=(), source=SourcePlan("none", "/w"),
                     native=(), env=(), includes=(), python="python3")
    s = bundle.summary(files, plan)
    assert s["bytes"] == 2058 and s["files"] == 2
    assert bundle.describe(s) == ("vendor/: 2 files, 2.0 KiB (deb 1 files 2.0 KiB, "
                                  "file 1 files 10 B)")


def test_a_bundled_download_is_copied_from_the_vendor_and_checked(tmp_path: Path) -> None:
    from synth.distill.load import load_run
    from synth.distill.plan import distill
    from synth.export.render import render_artifact

    digest = "ab" * 32
    run = load_run(make_run_dir(tmp_path, [cmd("wget -O /data/w.ckpt https://example.org/w")],
                                diff=[("A", "/data"), ("A", "/data/w.ckpt")]))
    plan, report = distill(run, download_hashes={"/data/w.ckpt": digest})
    files = [bundle.BundleFile(f"vendor/files/{digest}", "file", digest, 5)]
    df = render_artifact(plan, report, [], bundle=bundle.summary(files, plan))["Dockerfile"]
    assert "--mount=type=bind,source=vendor/files,target=/synth/vendor/files" in df
    assert f"cp /synth/vendor/files/{digest} /data/w.ckpt" in df
    assert f"echo '{digest}  /data/w.ckpt' | sha256sum -c -" in df
    assert "wget" not in df.split("# Download", 1)[1].split("\n", 2)[1]  # no fetch
    online = render_artifact(plan, report, [])["Dockerfile"]
    assert "wget -q -O /data/w.ckpt https://example.org/w" in online


def test_offline_without_rebuild_is_a_usage_error(tmp_path: Path) -> None:
    from synth.verify.command import VerifyOptions, verify

    with pytest.raises(UsageError, match="add --rebuild"):
        verify(VerifyOptions(target=str(tmp_path), offline=True),
               Settings.load(artifacts_dir=tmp_path), NO_ENGINE)


def test_fetch_keeps_only_bytes_with_the_hash_and_caches_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "a.deb"
    src.write_bytes(b"deb bytes")
    digest = hashlib.sha256(b"deb bytes").hexdigest()
    settings = Settings.load(artifacts_dir=tmp_path)
    assert bundle._fetch(src.as_uri(), "0" * 64, settings) is None  # other bytes: not kept
    got = bundle._fetch(src.as_uri(), digest, settings)
    assert got == tmp_path / "cache" / "synth" / "vendor" / digest
    assert got.read_bytes() == b"deb bytes"
    src.unlink()  # from the cache now, by hash
    assert bundle._fetch(src.as_uri(), digest, settings) == got
    assert bundle._fetch((tmp_path / "gone").as_uri(), "1" * 64, settings) is None
    assert sorted(p.name for p in got.parent.iterdir()) == [digest]  # no partial files left
