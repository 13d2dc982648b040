"""The fingerprint probe on synthetic site dirs (host Python, no Docker) and the comparison."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synth.compare.fingerprint import Change, compare_fingerprints
from synth.engine.fingerprint import PROBE_PATH, ImageProbe, fingerprint
from synth.engine.host import HostRuntime
from synth.errors import VerifyError
from synth.formats.fingerprint import Fingerprint, distribution_source


def make_dist(
    site: Path,
    name: str,
    version: str,
    files: dict[str, bytes],
    *,
    installer: str | None = "pip",
    direct_url: dict[str, Any] | None = None,
) -> None:
    """A dist-info distribution with a RECORD listing ``files`` (paths relative to site)."""
    meta = site / f"{name.replace('-', '_')}-{version}.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for rel, data in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if installer:
        (meta / "INSTALLER").write_text(installer + "\n")
    if direct_url is not None:
        (meta / "direct_url.json").write_text(json.dumps(direct_url))
    rows = [*files, f"{meta.name}/METADATA", f"{meta.name}/RECORD"]
    if installer:
        rows.append(f"{meta.name}/INSTALLER")
    (meta / "RECORD").write_text("".join(f"{r},,\n" for r in rows))


def run_probe(site: Path, workdir: Path, admindir: Path | None = None) -> dict[str, Any]:
    # -S: no site module, so the synthetic site dir on PYTHONPATH is the only one.
    dpkg = ["--dpkg-admindir", str(admindir)] if admindir else []
    proc = subprocess.run(
        [sys.executable, "-S", str(PROBE_PATH), "--workdir", str(workdir), *dpkg],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


@pytest.fixture
def env_dirs(tmp_path: Path) -> tuple[Path, Path]:
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    work = tmp_path / "workspace"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "_ops.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF ops")
    (work / ".git").mkdir()
    (work / ".git" / "ignored.so").write_bytes(b"not scanned")
    make_dist(site, "numpy", "1.26.4", {
        "numpy/__init__.py": b"x = 1\n",
        "numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so": b"\x7fELF np",
        "numpy/__pycache__/__init__.cpython-311.pyc": b"cache",
    })
    make_dist(site, "fastops", "0.1.0", {"fastops/__init__.py": b""},
              direct_url={"url": "file:///workspace", "dir_info": {}})
    (site / "stray.pth").write_text("/somewhere\n")
    egg = site / "oldpkg-2.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: Old_Pkg\nVersion: 2.0\n")
    (egg / "top_level.txt").write_text("oldpkg\n")
    (site / "oldpkg").mkdir()
    (site / "oldpkg" / "__init__.py").write_text("")
    return site, work


def test_probe_reports_distributions_native_and_unowned(env_dirs: tuple[Path, Path]) -> None:
    site, work = env_dirs
    data = run_probe(site, work)
    assert data["format"] == 1
    assert data["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert data["site_dirs"] == [str(site)]
    dists = {d["name"]: d for d in data["distributions"]}
    assert set(dists) == {"numpy", "fastops", "old-pkg"}
    assert dists["numpy"]["version"] == "1.26.4"
    assert dists["numpy"]["installer"] == "pip"
    assert dists["numpy"]["files"] == 3  # __init__.py, the .so, METADATA; no .pyc, no RECORD
    assert dists["numpy"]["direct_url_kind"] is None
    assert dists["fastops"]["direct_url_kind"] == "dir"
    assert dists["old-pkg"]["files_from"] == "top_level.txt"
    assert [u["path"] for u in data["unowned"]] == ["stray.pth"]
    native = {n["path"]: n for n in data["native"]}
    so = str(site / "numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so")
    assert native[so]["owner"] == "numpy"
    assert native[so]["where"] == "site"
    ws_so = str(work / "pkg" / "_ops.cpython-311-x86_64-linux-gnu.so")
    assert native[ws_so]["where"] == "workdir"
    assert native[ws_so]["owner"] is None
    assert not any(".git" in p for p in native)
    assert data["errors"] == []


def test_digest_ignores_installer_bookkeeping(env_dirs: tuple[Path, Path]) -> None:
    site, work = env_dirs
    before = {d["name"]: d["digest"] for d in run_probe(site, work)["distributions"]}
    meta = site / "numpy-1.26.4.dist-info"
    (meta / "INSTALLER").write_text("uv\n")
    (meta / "REQUESTED").write_text("")
    (meta / "uv_build.json").write_text("{}")  # uv's build record of an sdist it built
    (meta / "uv_cache.json").write_text("{}")  # uv's cache key of a wheelhouse file
    with (meta / "RECORD").open("a") as fh:
        fh.write("numpy-1.26.4.dist-info/uv_build.json,,\n"
                 "numpy-1.26.4.dist-info/uv_cache.json,,\n")
    after_data = run_probe(site, work)
    after = {d["name"]: d["digest"] for d in after_data["distributions"]}
    assert before == after
    numpy = next(d for d in after_data["distributions"] if d["name"] == "numpy")
    assert numpy["installer"] == "uv"
    assert numpy["requested"] is True


def test_compare_sees_changed_file_and_native(env_dirs: tuple[Path, Path]) -> None:
    site, work = env_dirs
    a = Fingerprint.from_json(run_probe(site, work))
    assert compare_fingerprints(a, a).equal
    (site / "numpy/__init__.py").write_bytes(b"x = 2\n")
    (work / "pkg" / "_ops.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF rebuilt")
    b = Fingerprint.from_json(run_probe(site, work))
    cmp = compare_fingerprints(a, b)
    assert not cmp.equal
    assert cmp.packages_equal
    assert not cmp.content_equal
    assert [c.key for c in cmp.content] == ["numpy"]
    assert [(c.kind, c.key.rsplit("/", 1)[1]) for c in cmp.native] == [
        ("changed", "_ops.cpython-311-x86_64-linux-gnu.so")
    ]


def test_fingerprint_through_host_runtime(env_dirs: tuple[Path, Path]) -> None:
    _, work = env_dirs
    fp = fingerprint(HostRuntime(Path(sys.executable)), sys.executable, workdir=str(work))
    assert fp.python_version == ".".join(map(str, sys.version_info[:3]))
    assert "synth" in fp.effective
    assert any(n.where == "workdir" for n in fp.native)
    assert fp.to_json()["format"] == 1


def test_fingerprint_error_names_the_interpreter(tmp_path: Path) -> None:
    with pytest.raises(VerifyError, match="failed under /bin/false"):
        fingerprint(HostRuntime(Path(sys.executable)), "/bin/false", workdir=str(tmp_path))


def _record_row(site: Path, rel: str) -> str:
    import base64
    import hashlib

    digest = base64.urlsafe_b64encode(hashlib.sha256((site / rel).read_bytes()).digest())
    return f"{rel},sha256={digest.decode().rstrip('=')},{(site / rel).stat().st_size}\n"


def test_a_file_patched_after_install_is_named_with_its_distribution(
    env_dirs: tuple[Path, Path],
) -> None:
    site, work = env_dirs
    meta = site / "numpy-1.26.4.dist-info"
    (meta / "RECORD").write_text(
        _record_row(site, "numpy/__init__.py") + _record_row(
            site, "numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so")
        + "numpy-1.26.4.dist-info/RECORD,,\n")
    (work / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    live = Fingerprint.from_json(run_probe(site, work))
    assert live.effective["numpy"].modified == {}
    assert live.workspace is not None and ".git/HEAD" in live.workspace
    assert live.environment is not None and live.environment["PATH"] == "/usr/bin:/bin"
    # The agent's `sed -i` in site-packages, and a removed file.
    (site / "numpy/__init__.py").write_bytes(b"x = 1  # patched\n")
    (site / "numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so").unlink()
    shutil.rmtree(work / ".git")
    patched = Fingerprint.from_json(run_probe(site, work))
    numpy = patched.effective["numpy"]
    assert list(numpy.modified) == ["numpy/__init__.py"]
    assert numpy.missing_paths == ("numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so",)
    cmp = compare_fingerprints(patched, live)  # a: live (patched), b: rebuilt (pristine)
    assert [(c.key, c.b) for c in cmp.patched] == [
        ("numpy: numpy/__init__.py", "as RECORD"),
        ("numpy: numpy/core/_multiarray.cpython-311-x86_64-linux-gnu.so", "as RECORD")]
    assert {(c.kind, c.key) for c in cmp.workspace} >= {("added", ".git/HEAD")}
    from synth.compare.fingerprint import differences

    lines = [d.line for d in differences(cmp) if d.explained is None]
    assert "patched: patched numpy: numpy/__init__.py" in "\n".join(lines)
    assert any(line.startswith("workspace: added .git/HEAD") for line in lines)


def test_explained_differences() -> None:
    from synth.compare.fingerprint import Change, explain

    assert explain("sources", Change("source", "x", "index", "local build"))
    assert explain("native", Change("debug-only", "/a.so", "1", "2"))
    assert explain("workspace", Change("changed", "build/lib/x.py", "1", "2"))
    assert explain("workspace", Change("added", "src/x.egg-info/PKG-INFO", None, "2"))
    assert explain("workspace", Change("removed", "build/x", "1", None)) is None
    assert explain("workspace", Change("changed", "train.py", "1", "2")) is None
    # A compile's temporary objects (seen on hnswlib: has_flag() leaves tmp/tmpXXXX.o), and
    # git's stat cache (setuptools-scm runs git in the tree); .git's other files are not.
    assert explain("workspace", Change("removed", "tmp/tmp9r56bj11.o", "1", None))
    assert explain("workspace", Change("added", "tmp/tmp_d3pzdut.o", None, "2"))
    assert explain("workspace", Change("changed", ".git/index", "1", "2"))
    assert explain("workspace", Change("removed", ".git/index", "1", None)) is None
    assert explain("workspace", Change("changed", ".git/HEAD", "1", "2")) is None
    assert explain("workspace", Change("added", "x.so", None, "2")) is None
    # pdm-backend's editable metadata (seen on aics-cytoparam): source/ leaves it out.
    meta = ".pdm-build/aicscytoparam-0.2.1.dist-info/METADATA"
    assert explain("workspace", Change("removed", meta, "1", None))
    assert explain("workspace", Change("changed", "src/.pdm-build/x.py", "1", "2")) is None


def test_build_output_left_behind_by_a_command_not_replayed_is_explained_only_as_removed(
        ) -> None:
    """The manifest's ``source.left_behind`` (seen on extension-cpp: a plain install, then
    the README's editable one, left build/lib and the egg-info of the first behind)."""
    from synth.compare.fingerprint import Change, explain

    behind = {"build": "30.1", "pkg.egg-info": "30.1"}
    so = "/workspace/build/lib.linux-x86_64-cpython-311/pkg/_C.abi3.so"
    got = explain("native", Change("removed", so, "1", None), left_behind=behind)
    assert got is not None and got.startswith("build output that audit 30.1 wrote last")
    assert explain("workspace", Change("removed", "pkg.egg-info/PKG-INFO", "1", None),
                   left_behind=behind)
    assert explain("workspace", Change("removed", "build/lib/pkg/ops.py", "1", None),
                   left_behind=behind)
    # only removed build output under a named path: not a file the rebuild changed, not
    # one elsewhere, and never source code, whatever a (forged) manifest names
    assert explain("workspace", Change("changed", "build/lib/pkg/ops.py", "1", "2"),
                   left_behind=behind) == "a build byproduct the rebuild regenerates"
    assert explain("workspace", Change("removed", "build2/x.py", "1", None),
                   left_behind=behind) is None
    assert explain("workspace", Change("removed", "pkg/ops.py", "1", None),
                   left_behind={"pkg": "30.1"}) is None
    assert explain("workspace", Change("removed", "build/x", "1", None)) is None
    # A native file under build/ of the working directory: the same byproduct rule (seen on
    # cocoapi: the agent removed build/ after build_ext --inplace; the replay keeps it).
    so = "/workspace/PythonAPI/build/lib.linux-x86_64-cpython-311/pycocotools/_mask.so"
    assert explain("native", Change("added", so, None, "1"))
    assert explain("native", Change("added", so, None, "1"), workdir="/srv") is None
    assert explain("native", Change("removed", so, "1", None)) is None
    assert explain("native", Change("added", "/workspace/x/_ops.so", None, "1")) is None
    assert explain("native", Change("added", "/opt/venv/lib/build/x.so", None, "1")) is None
    assert explain("patched", Change("patched", "n: n/x.py", "1", "as RECORD")) is None
    assert explain("packages", Change("removed", "n", "1", None)) is None
    env = {"VIRTUAL_ENV": "/opt/venv", "PATH": "/opt/venv/bin:/usr/bin:/bin"}
    assert explain("environment", Change("added", "VIRTUAL_ENV", None, "/opt/venv"), env)
    assert explain("environment", Change("changed", "PATH", "/usr/bin:/bin",
                                         "/opt/venv/bin:/usr/bin:/bin"), env)
    assert explain("environment", Change("changed", "PATH", "/usr/bin",
                                         "/opt/venv/bin:/usr/bin:/bin"), env) is None
    assert explain("environment", Change("added", "VIRTUAL_ENV", None, "/opt/venv")) is None
    assert explain("environment", Change("added", "CUDA_HOME", None, "/x"), env) is None
    conda = {"CONDA_PREFIX": "/opt/conda/envs/ml", "PATH": "/opt/conda/envs/ml/bin:/usr/bin"}
    assert explain("environment", Change("added", "CONDA_PREFIX", None, "/opt/conda/envs/ml"),
                   conda)
    assert explain("environment", Change("changed", "PATH", "/usr/bin",
                                         "/opt/conda/envs/ml/bin:/usr/bin"), conda)
    assert explain("environment", Change("changed", "PATH", "/usr/bin",
                                         "/opt/conda/envs/ml2/bin:/usr/bin"), conda) is None
    assert explain("environment", Change("added", "CONDA_PREFIX", None, "/x"), env) is None


# ----------------------------------------------------------------- pure comparison
def fp_json(
    dists: list[dict[str, Any]] | None = None,
    native: list[dict[str, Any]] | None = None,
    dpkg: dict[str, str] | None = None,
    python: str = "3.11.2",
) -> dict[str, Any]:
    return {
        "format": 1,
        "python": {"version": python, "implementation": "CPython",
                   "executable": "/usr/bin/python3"},
        "platform": {"machine": "x86_64"},
        "glibc": "2.36",
        "distributions": dists or [],
        "native": native or [],
        "unowned": [],
        "dpkg": dpkg,
    }


def dist(name: str, version: str, digest: str = "d0", **kw: Any) -> dict[str, Any]:
    return {"name": name, "version": version, "location": "/opt/venv/site-packages",
            "digest": digest, "installer": "pip", "files": 3, **kw}


def test_compare_packages_versions_sources() -> None:
    a = Fingerprint.from_json(fp_json(
        [dist("numpy", "1.26.4"), dist("requests", "2.31.0"), dist("fastops", "0.1.0")],
        dpkg={"gcc": "12.2", "git": "1:2.39"},
    ))
    b = Fingerprint.from_json(fp_json(
        [dist("numpy", "2.0.0"), dist("wandb", "0.17.0"),
         dist("fastops", "0.1.0", direct_url="file:///workspace", direct_url_kind="dir",
              installer="uv")],
        dpkg={"gcc": "12.2", "build-essential": "12.9"},
        python="3.11.9",
    ))
    cmp = compare_fingerprints(a, b)
    assert [(c.kind, c.key, c.a, c.b) for c in cmp.packages] == [
        ("version", "numpy", "1.26.4", "2.0.0"),
        ("removed", "requests", "2.31.0", None),
        ("added", "wandb", None, "0.17.0"),
    ]
    assert [(c.key, c.a, c.b) for c in cmp.sources] == [("fastops", "index", "local build")]
    assert [(c.kind, c.key) for c in cmp.dpkg] == [("added", "build-essential"),
                                                    ("removed", "git")]
    assert [(c.key, c.a, c.b) for c in cmp.interpreter] == [("python", "3.11.2", "3.11.9")]
    assert not cmp.packages_equal
    j = cmp.to_json()
    assert j["equal"] is False
    assert set(j) == {"equal", "packages_equal", "content_equal", "native_equal",
                      "native_code_equal", "interpreter", "patched", "workspace",
                      "environment",
                      "packages", "content", "sources", "native", "unowned", "venv",
                      "dpkg"}
    assert cmp.summary()[0] == "interpreter: changed python (3.11.2 -> 3.11.9)"


def test_shadowed_distributions_are_not_compared() -> None:
    a = Fingerprint.from_json(fp_json([dist("pip", "24.0")]))
    b = Fingerprint.from_json(fp_json([dist("pip", "24.0"),
                                       dist("pip", "23.0.1", shadowed=True)]))
    assert compare_fingerprints(a, b).equal


def test_native_symlink_and_missing() -> None:
    a = Fingerprint.from_json(fp_json(native=[
        {"path": "/x/libfoo.so", "sha256": None, "size": None, "owner": "foo",
         "where": "site", "symlink": "libfoo.so.1"},
        {"path": "/x/_c.so", "sha256": "ab" * 32, "size": 10, "owner": "foo", "where": "site"},
    ]))
    b = Fingerprint.from_json(fp_json(native=[
        {"path": "/x/libfoo.so", "sha256": None, "size": None, "owner": "foo",
         "where": "site", "symlink": "libfoo.so.2"},
    ]))
    cmp = compare_fingerprints(a, b)
    assert [(c.kind, c.key, c.detail) for c in cmp.native] == [
        ("removed", "/x/_c.so", "foo"), ("changed", "/x/libfoo.so", "foo")]
    assert not cmp.native_equal


def test_newer_format_refused() -> None:
    with pytest.raises(VerifyError, match="format 2"):
        Fingerprint.from_json({**fp_json(), "format": 2})


@pytest.mark.parametrize(("kind", "editable", "want"), [
    (None, False, "index"), ("vcs", False, "vcs"), ("dir", False, "local build"),
    ("dir", True, "editable"), ("archive", False, "url"), ("local-archive", False, "local file"),
])
def test_distribution_source(kind: str | None, editable: bool, want: str) -> None:
    assert distribution_source(kind, None, editable) == want


@pytest.mark.parametrize(("installer", "metadata_dir", "files_from", "want"), [
    ("pip", "x-1.dist-info", "RECORD", "index"),
    (None, "pip-23.0.1.dist-info", "RECORD", "os package"),
    (None, "setuptools-66.1.1.egg-info", "top_level.txt", "os package"),
    (None, "tiny-0.3.egg-info", "installed-files.txt", "setup.py install"),
])
def test_source_without_direct_url(installer: str | None, metadata_dir: str,
                                   files_from: str, want: str) -> None:
    assert distribution_source(None, None, installer=installer, metadata_dir=metadata_dir,
                               files_from=files_from) == want


def test_launcher_shebang_python_name_is_normalised(tmp_path: Path) -> None:
    """`bin/pip install` writes `#!…/python3`, `python -m pip` writes `#!…/python`."""
    def scripts_digest(shebang: bytes, body: bytes = b"import re\n") -> str | None:
        root = tmp_path / "env"  # the same paths each time: they are part of the digest
        shutil.rmtree(root, ignore_errors=True)
        site = root / "lib" / "site-packages"
        site.mkdir(parents=True)
        make_dist(site, "tool", "1.0", {"tool.py": b"", "../../bin/tool": shebang + body})
        (d,) = run_probe(site, root)["distributions"]
        assert d["scripts"] == [str(root / "bin" / "tool")]
        return d["scripts_digest"]  # type: ignore[no-any-return]

    a = scripts_digest(b"#!/opt/venv/bin/python3\n")
    assert a == scripts_digest(b"#!/opt/venv/bin/python\n")
    assert a != scripts_digest(b"#!/usr/bin/python\n")
    assert a != scripts_digest(b"#!/opt/venv/bin/python3\n", b"import os\n")


def _python38() -> str | None:
    import glob

    pyenv = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.8*/bin/python")))
    if pyenv:
        return pyenv[0]
    found = shutil.which("python3.8")
    return found if found and "/shims/" not in found else None


@pytest.mark.skipif(_python38() is None, reason="no Python 3.8 on this machine")
def test_probe_runs_under_python38(env_dirs: tuple[Path, Path]) -> None:
    """Targets may be old: the probe must stay Python 3.8 compatible."""
    site, work = env_dirs
    python = _python38()
    assert python is not None
    proc = subprocess.run(
        [python, "-S", str(PROBE_PATH), "--workdir", str(work)],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )
    data = json.loads(proc.stdout)
    assert data["python"]["version"].startswith("3.8.")
    assert {d["name"] for d in data["distributions"]} == {"numpy", "fastops", "old-pkg"}
    files = subprocess.run(
        [python, "-S", str(PROBE_PATH), "--files", "numpy"],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )
    assert "numpy/__init__.py" in json.loads(files.stdout)["files"]["numpy"]["files"]


def test_native_debug_only_difference_is_named() -> None:
    def so(sha: str, code: str | None) -> dict[str, Any]:
        return {"path": "/opt/venv/x/_C.so", "sha256": sha, "size": 10, "owner": "x",
                "where": "site", "code_sha256": code}

    a = Fingerprint.from_json(fp_json(native=[so("1" * 64, "c" * 64)]))
    b = Fingerprint.from_json(fp_json(native=[so("2" * 64, "c" * 64)]))
    cmp = compare_fingerprints(a, b)
    assert [(c.kind, c.key) for c in cmp.native] == [("debug-only", "/opt/venv/x/_C.so")]
    assert "loaded code identical" in cmp.native[0].detail
    assert not cmp.native_equal and cmp.native_code_equal and not cmp.equal
    c = Fingerprint.from_json(fp_json(native=[so("3" * 64, "d" * 64)]))
    assert [x.kind for x in compare_fingerprints(a, c).native] == ["changed"]
    assert not compare_fingerprints(a, c).native_code_equal


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_elf_code_digest_ignores_debug_info(tmp_path: Path) -> None:
    """Real shared objects: -g adds debug sections, the loaded code stays the same."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fp_probe", PROBE_PATH)
    assert spec and spec.loader
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    src = tmp_path / "op.c"
    src.write_text("int twice(int x) { return 2 * x; }\n")
    out = {}
    for name, flags in (("plain", ["-g0"]), ("debug", ["-g"]), ("other", ["-g0", "-DX=1"])):
        so = tmp_path / f"{name}.so"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", *flags, "-o", str(so), str(src)],
                       check=True)
        out[name] = (probe.sha256_file(str(so)), probe.elf_code_digest(str(so)))
    assert out["plain"][0] != out["debug"][0]
    assert out["plain"][1] == out["debug"][1] is not None
    assert out["plain"][1] == out["other"][1]  # -DX changes nothing in this code
    (tmp_path / "text.so").write_text("not an ELF file")
    assert probe.elf_code_digest(str(tmp_path / "text.so")) is None


def test_workspace_native_files_are_compared_by_the_native_section_only(
    env_dirs: tuple[Path, Path],
) -> None:
    site, work = env_dirs
    (work / "train.py").write_text("print(1)\n")
    a = Fingerprint.from_json(run_probe(site, work))
    (work / "pkg" / "_ops.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF rebuilt")
    (work / "train.py").write_text("print(2)  # edited\n")
    cmp = compare_fingerprints(a, Fingerprint.from_json(run_probe(site, work)))
    assert [(c.kind, c.key) for c in cmp.workspace] == [("changed", "train.py")]
    assert [c.key.rsplit("/", 1)[1] for c in cmp.native] == [
        "_ops.cpython-311-x86_64-linux-gnu.so"]


# ----------------------------------------------------------- metadata layouts, dpkg
def make_legacy_egg(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """What pip 23.0's legacy ``setup.py install`` leaves: an .egg-info with PKG-INFO,
    SOURCES.txt, top_level.txt and installed-files.txt (paths relative to the egg-info)."""
    egg = site / f"{name}-{version}.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text(f"Metadata-Version: 1.1\nName: {name}\nVersion: {version}\n")
    (egg / "SOURCES.txt").write_text("setup.py\n")
    (egg / "top_level.txt").write_text(f"{name}\n")
    for rel, data in files.items():
        (site / rel).write_bytes(data)
    (egg / "installed-files.txt").write_text("".join(
        f"../{rel}\n" for rel in files) + "PKG-INFO\nSOURCES.txt\ntop_level.txt\n")


def test_legacy_egg_info_and_wheel_install_same_module_files(tmp_path: Path) -> None:
    from synth.compare.fingerprint import differences

    live_site, rebuilt_site, work = (tmp_path / "live" / "site-packages",
                                     tmp_path / "rebuilt" / "site-packages", tmp_path / "w")
    work.mkdir()
    code = {"docopt.py": b"def docopt(): pass\n"}
    make_legacy_egg(live_site, "docopt", "0.6.2", code)
    make_dist(rebuilt_site, "docopt", "0.6.2", code, installer="uv")
    live = Fingerprint.from_json(run_probe(live_site, work))
    rebuilt = Fingerprint.from_json(run_probe(rebuilt_site, work))
    assert live.effective["docopt"].source == "setup.py install"
    assert live.effective["docopt"].module_files == rebuilt.effective["docopt"].module_files == 1
    assert live.effective["docopt"].digest != rebuilt.effective["docopt"].digest
    cmp = compare_fingerprints(live, rebuilt)
    assert cmp.content_equal and cmp.packages_equal
    assert [(c.kind, c.a, c.b) for c in cmp.content] == [
        ("metadata", "docopt-0.6.2.egg-info", "docopt-0.6.2.dist-info")]
    found = {d.section: d for d in differences(cmp)}
    assert "metadata layout differs" in (found["content"].explained or "")
    assert found["sources"].explained  # setup.py install -> index
    # (PYTHONPATH names the two synthetic site dirs, a difference of this test only.)
    assert [d.section for d in differences(cmp) if d.explained is None] == ["environment"]

    # A real difference in the module files is still a content difference, unexplained.
    (rebuilt_site / "docopt.py").write_bytes(b"def docopt(): return 1\n")
    cmp = compare_fingerprints(live, Fingerprint.from_json(run_probe(rebuilt_site, work)))
    assert [c.kind for c in cmp.content] == ["content"]
    assert not cmp.content_equal
    assert [d.section for d in differences(cmp) if d.explained is None] == [
        "content", "environment"]


def test_metadata_difference_in_one_layout_is_not_explained() -> None:
    from synth.compare.fingerprint import Change, explain

    assert explain("content", Change("metadata", "x", "x-1.egg-info", "x-1.dist-info"))
    assert explain("content", Change("metadata", "x", "x-1.dist-info", "x-1.dist-info")) is None
    assert explain("content", Change("content", "x", "ab", "cd")) is None


def make_dpkg(admindir: Path, package: str, paths: list[Path], md5: dict[Path, str]) -> None:
    info = admindir / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / f"{package}.list").write_text("".join(f"{p}\n" for p in paths))
    (info / f"{package}.md5sums").write_text("".join(
        f"{digest}  {str(p).lstrip('/')}\n" for p, digest in md5.items()))


def test_probe_names_the_debian_package_owning_each_path(tmp_path: Path) -> None:
    import hashlib

    site, work, admin = tmp_path / "dist-packages", tmp_path / "w", tmp_path / "dpkg"
    work.mkdir()
    egg = site / "yaml_ish-6.0.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: yaml_ish\nVersion: 6.0\n")
    (egg / "top_level.txt").write_text("yaml_ish\n")
    (site / "yaml_ish").mkdir()
    init, so = site / "yaml_ish/__init__.py", site / "yaml_ish/_c.cpython-311-x86_64-linux-gnu.so"
    init.write_bytes(b"x = 1\n")
    so.write_bytes(b"\x7fELF yaml")
    (site / "zz-yaml-ish.pth").write_text("\n")
    owned = [site, egg, egg / "PKG-INFO", egg / "top_level.txt", site / "yaml_ish", init, so,
             site / "zz-yaml-ish.pth"]
    make_dpkg(admin, "python3-yaml-ish", owned,
              {p: hashlib.md5(p.read_bytes()).hexdigest() for p in (init, so)})
    data = run_probe(site, work, admin)
    dist = next(d for d in data["distributions"] if d["name"] == "yaml-ish")
    assert dist["dpkg"] == "python3-yaml-ish" and dist["modified"] == []
    assert {n["path"]: n.get("dpkg") for n in data["native"]} == {str(so): "python3-yaml-ish"}
    assert [(u["path"], u.get("dpkg")) for u in data["unowned"]] == [
        ("zz-yaml-ish.pth", "python3-yaml-ish")]
    # An edit after apt installed it: named against the package's md5sums.
    init.write_bytes(b"x = 2  # edited\n")
    dist = next(d for d in run_probe(site, work, admin)["distributions"]
                if d["name"] == "yaml-ish")
    assert [m["path"] for m in dist["modified"]] == ["yaml_ish/__init__.py"]


def _deb_fp(version: str | None, digest: str, so_sha: str, modified: dict[str, str] | None = None,
            pth: str = "p1") -> Fingerprint:
    site = "/usr/lib/python3/dist-packages"
    dists = [dist("pyyaml", "6.0", digest, location=site, installer=None, dpkg="python3-yaml",
                  metadata_dir="PyYAML-6.0.egg-info", files_from="top_level.txt",
                  modified=[{"path": p, "sha256": v} for p, v in (modified or {}).items()])]
    native = [{"path": f"{site}/_yaml.so", "sha256": so_sha, "owner": "pyyaml",
               "dpkg": "python3-yaml"}]
    data = fp_json(dists, native, dpkg={"python3": "3.11.2-1", **(
        {"python3-yaml": version} if version else {})})
    data["unowned"] = [{"site": site, "path": "yaml.pth", "sha256": pth, "dpkg": "python3-yaml"}]
    return Fingerprint.from_json(data)


def test_debian_package_difference_explains_its_paths() -> None:
    from synth.compare.fingerprint import differences

    live = _deb_fp("6.0-3", "d1", "s1", pth="p1")
    rebuilt = _deb_fp("6.0-3+b1", "d2", "s2", pth="p2")
    diffs = differences(compare_fingerprints(live, rebuilt))
    by = {(d.section, d.change.key): d for d in diffs}
    for key in (("content", "pyyaml"), ("native", "/usr/lib/python3/dist-packages/_yaml.so"),
                ("unowned", "/usr/lib/python3/dist-packages/yaml.pth")):
        assert "Debian package python3-yaml (6.0-3 -> 6.0-3+b1)" in (by[key].explained or ""), key
    # The package set difference itself is what fails: named once, in the dpkg section.
    assert [(d.section, d.change.key) for d in diffs if d.explained is None] == [
        ("dpkg", "python3-yaml")]
    # Gone from the rebuilt image: its distribution and files are explained by the package.
    gone = Fingerprint.from_json({**fp_json(dpkg={"python3": "3.11.2-1"})})
    diffs = differences(compare_fingerprints(live, gone))
    assert {d.section for d in diffs if d.explained is None} == {"dpkg"}
    assert {(d.section, d.change.kind) for d in diffs if d.explained} >= {
        ("packages", "removed"), ("native", "removed"), ("unowned", "removed")}


def test_edit_of_a_debian_file_at_the_same_version_is_unexplained() -> None:
    from synth.compare.fingerprint import differences

    live = _deb_fp("6.0-3", "d1", "s1", modified={"yaml/__init__.py": "ab" * 32})
    rebuilt = _deb_fp("6.0-3", "d2", "s1")
    cmp = compare_fingerprints(live, rebuilt)
    unexplained = [d for d in differences(cmp) if d.explained is None]
    assert {(d.section, d.change.key) for d in unexplained} == {
        ("content", "pyyaml"), ("patched", "pyyaml: yaml/__init__.py")}
    patched = next(d for d in unexplained if d.section == "patched")
    assert patched.change.b == "as packaged"
    assert "md5 differs from python3-yaml's md5sums" in patched.line
    assert "Debian package python3-yaml 6.0-3 on both sides" in patched.line


def test_path_owned_on_one_side_only_is_not_explained_by_dpkg() -> None:
    from synth.compare.fingerprint import differences

    live = _deb_fp("6.0-3", "d1", "s1")
    data = fp_json([dist("pyyaml", "6.0", "d9", location="/usr/lib/python3/dist-packages")],
                   dpkg={"python3": "3.11.2-1"})
    pip_over = Fingerprint.from_json(data)  # pip's pyyaml where apt's was, apt's gone
    diffs = {(d.section, d.change.key): d for d in differences(compare_fingerprints(
        live, pip_over))}
    assert diffs[("content", "pyyaml")].explained is None


# ------------------------------------------------------- content differences, file by file
def run_files_probe(site: Path, names: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-S", str(PROBE_PATH), "--files", names],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )
    data: dict[str, Any] = json.loads(proc.stdout)["files"]
    return data


def test_files_probe_names_the_files_that_make_two_digests_differ(tmp_path: Path) -> None:
    """Two installs of docopt 0.6.2 with other module content: the probe's ``--files``
    listing decomposes each side's digest, and the comparison names the differing files."""
    from dataclasses import replace

    work = tmp_path / "workspace"
    work.mkdir()
    sides = []
    for side, files in (("live", {"docopt.py": b"x = 1\n", "docopt_old.py": b""}),
                        ("rebuilt", {"docopt.py": b"x = 2\n", "docopt_new.py": b""})):
        site = tmp_path / side / "site-packages"
        make_dist(site, "docopt", "0.6.2", {**files, "same.py": b"same\n"})
        make_dist(site, "other", "1.0", {"other.py": b""})
        fp = Fingerprint.from_json(run_probe(site, work))
        listed = run_files_probe(site, "docopt,absent")
        assert set(listed) == {"docopt"}  # other: not asked for; absent: not installed
        assert listed["docopt"]["digest"] == fp.effective["docopt"].digest
        assert listed["docopt"]["metadata_dir"] == "docopt-0.6.2.dist-info"
        sides.append(replace(fp, dist_files={"docopt": listed["docopt"]["files"]}))
    cmp = compare_fingerprints(*sides)
    (change,) = cmp.content
    assert (change.kind, change.key) == ("content", "docopt")
    assert [(f.kind, f.key) for f in change.files] == [
        ("changed", "docopt.py"), ("added", "docopt_new.py"), ("removed", "docopt_old.py")]
    assert change.detail == ("4 vs 4 files; 3 files differ: changed docopt.py; added "
                             "docopt_new.py; removed docopt_old.py")
    j = change.to_json()
    assert j["files_differing"] == 3
    assert j["files"][0]["key"] == "docopt.py" and len(j["files"][0]["a"]) == 12
    assert "changed docopt.py" in cmp.summary()[0]


def test_a_metadata_difference_names_its_files(tmp_path: Path) -> None:
    """The same module files, another metadata folder (another backend built it: METADATA
    2.4 against 2.1): the comparison names the metadata files that differ."""
    from dataclasses import replace

    work = tmp_path / "workspace"
    work.mkdir()
    sides = []
    for side, version in (("live", "2.4"), ("rebuilt", "2.1")):
        site = tmp_path / side / "site-packages"
        make_dist(site, "hnsw", "0.8.0", {"hnsw.py": b"x = 1\n"})
        (site / "hnsw-0.8.0.dist-info" / "METADATA").write_text(
            f"Metadata-Version: {version}\nName: hnsw\nVersion: 0.8.0\n")
        fp = Fingerprint.from_json(run_probe(site, work))
        listed = run_files_probe(site, "hnsw")["hnsw"]["files"]
        sides.append(replace(fp, dist_files={"hnsw": listed}))
    (change,) = compare_fingerprints(*sides).content
    assert change.kind == "metadata"
    assert [(f.kind, f.key) for f in change.files] == [
        ("changed", "hnsw-0.8.0.dist-info/METADATA")]
    assert change.detail.endswith("; 1 file differs: changed hnsw-0.8.0.dist-info/METADATA")


def test_file_names_are_capped_with_a_count() -> None:
    from synth.compare.fingerprint import content_file_changes, files_text
    from synth.formats.verify import FILES_NAMED

    a = {f"pkg/m{i:02}.py": "a" * 64 for i in range(25)}
    b = {**dict.fromkeys(a, "b" * 64), "pkg/new.py": "c" * 64}
    files = content_file_changes(a, b)
    assert len(files) == 26
    text = files_text(files)
    assert text.startswith("26 files differ: changed pkg/m00.py, ")
    assert "pkg/m19.py" in text and "pkg/m20.py" not in text and text.endswith("(and 6 more)")
    change = Change("content", "pkg", "d1", "d2", files=files)
    assert len(change.to_json()["files"]) == FILES_NAMED == 20
    assert files_text(content_file_changes({"x.so": "elf-code:" + "e" * 64}, {})) == (
        "1 file differs: removed x.so")
    assert content_file_changes({"x.so": "elf-code:" + "e" * 64}, {})[0].a == "code:" + "e" * 12
    assert "files" not in Change("content", "pkg", "d1", "d2").to_json()


def test_unlisted_files_say_why() -> None:
    from dataclasses import replace

    a = Fingerprint.from_json(fp_json([dist("docopt", "0.6.2", "d1")]))
    b = replace(Fingerprint.from_json(fp_json([dist("docopt", "0.6.2", "d2")])),
                dist_files_error="not an image: its files cannot be listed")
    (change,) = compare_fingerprints(a, b).content
    assert change.files == ()
    assert change.detail == ("3 vs 3 files; files not named: not an image: its files cannot "
                             "be listed")
    (change,) = compare_fingerprints(a, replace(b, dist_files_error=None)).content
    assert change.detail == "3 vs 3 files"


class _ListingRuntime:
    """A container whose probe answers ``--files`` with a canned listing."""

    description = "container fake"

    def __init__(self, listing: dict[str, Any]) -> None:
        self.listing = listing
        self.argv: list[list[str]] = []

    def copy_in(self, src: Path, dest: str) -> None:
        pass

    def exec(self, argv: list[str], timeout: float | None = None) -> Any:
        from synth.engine.base import ExecResult

        self.argv.append(argv)
        return ExecResult(tuple(argv), 0, json.dumps({"format": 1, "files": self.listing}), "")


class _ListingEngine:
    def __init__(self, listings: dict[str, dict[str, Any]]) -> None:
        self.runtimes = {ref: _ListingRuntime(v) for ref, v in listings.items()}

    def container(self, spec: Any) -> Any:
        from contextlib import nullcontext

        return nullcontext(self.runtimes[spec.image])


def test_name_content_files_asks_each_image_once_and_checks_the_digest() -> None:
    from dataclasses import replace

    from synth.compare.fingerprint import name_content_files

    def image(ref: str, digest: str) -> Fingerprint:
        return replace(Fingerprint.from_json(fp_json([dist("docopt", "0.6.2", digest),
                                                      dist("same", "1.0")])),
                       origin=(ref, "/opt/venv/bin/python"))

    engine = _ListingEngine({
        "live": {"docopt": {"digest": "d1", "files": {"docopt.py": "1" * 64}}},
        # A listing whose files do not give the fingerprint's digest is not used.
        "rebuilt": {"docopt": {"digest": "other", "files": {"docopt.py": "2" * 64}}},
    })
    a, b = name_content_files(ImageProbe(engine), image("live", "d1"),  # type: ignore[arg-type]
                              image("rebuilt", "d2"))
    assert engine.runtimes["live"].argv[0][-2:] == ["--files", "docopt"]
    assert len(engine.runtimes["rebuilt"].argv) == 2  # the probe, then removing its copy
    assert a.dist_files == {"docopt": {"docopt.py": "1" * 64}} and a.dist_files_error is None
    assert b.dist_files == {}
    assert b.dist_files_error == ("docopt: the files listed in rebuilt do not give the "
                                  "fingerprint's digest")
    (change,) = compare_fingerprints(a, b).content
    assert change.files == () and "files not named: docopt: the files listed" in change.detail
    # Equal contents: nothing asked.
    same = image("live", "d1")
    assert name_content_files(engine, same, same) == (same, same)  # type: ignore[arg-type]
    assert len(engine.runtimes["live"].argv) == 2


def test_a_python_environment_inside_the_working_folder_is_no_workspace_file(
        env_dirs: tuple[Path, Path]) -> None:
    """A tool's .venv in the project (uv sync, poetry, pdm) holds its own activation scripts
    and markers; its distributions are compared as distributions, so its files are left out
    of the workspace and workdir-native sections (they made every such rebuild differ)."""
    site, work = env_dirs
    venv = work / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "activate.csh").write_text("# uv's own\n")
    (venv / "lib.so").write_bytes(b"\x7fELF in an env")
    conda = work / "env"
    (conda / "conda-meta").mkdir(parents=True)
    (conda / "conda-meta" / "history").write_text("==> 2026 <==\n")
    (work / "keep.txt").write_text("research file\n")
    data = run_probe(site, work)
    files = data["workspace"]["files"]
    assert "keep.txt" in files
    assert not [k for k in files if k.startswith((".venv/", "env/"))], files
    assert not [n for n in data["native"] if "/.venv/" in n["path"]]


def test_two_editable_installs_of_one_folder_differ_only_in_how_they_link_it() -> None:
    """poetry links the project in with its own .pth and METADATA, pip with the build
    backend's editable hook: an explained `editable` difference, not `content`."""
    from synth.compare.fingerprint import _content_changes, explain
    from synth.formats.fingerprint import DistributionPrint

    def d(installer: str, digest: str, url: str = "file:///workspace") -> DistributionPrint:
        return DistributionPrint(
            name="envtools", version="0.1.0", installer=installer, direct_url=url,
            direct_url_kind="dir", editable=True, location="/w/.venv/lib/site-packages",
            files=3, digest=digest)

    [c] = _content_changes("envtools", d("Poetry 2.2.1", "a" * 64), d("pip", "b" * 64))
    assert c.kind == "editable" and explain("content", c) is not None
    [other] = _content_changes("envtools", d("pip", "a" * 64),
                               d("pip", "b" * 64, "file:///elsewhere"))
    assert other.kind == "content" and explain("content", other) is None


def test_a_record_with_hex_digests_is_read_as_the_same_hashes(tmp_path: Path) -> None:
    """uv_build 0.9 writes RECORD's sha256 as hex where the spec asks urlsafe base64: the
    same hash, which must not read as "changed after install" (a real project showed it)."""
    from synth.pyramid.probes import fingerprint as probe

    body = b"VERSION = 1\n"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_bytes(body)
    (tmp_path / "pkg" / "gone.py").write_bytes(b"x = 2\n")
    meta = tmp_path / "pkg-1.0.dist-info"
    meta.mkdir()
    digest = hashlib.sha256(body).hexdigest()
    (meta / "RECORD").write_text(
        f"pkg/__init__.py,sha256={digest},{len(body)}\n"
        f"pkg/gone.py,sha256={hashlib.sha256(b'x = 1').hexdigest()},6\n"
        "pkg-1.0.dist-info/RECORD,,\n")
    modified, missing = probe.record_check(str(tmp_path), str(meta), {})
    assert ([m["path"] for m in modified], missing) == (["pkg/gone.py"], [])
