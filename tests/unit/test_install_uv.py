"""templates/install-uv.py: the artifact's uv comes from its hash-pinned wheel, no pip.

The script runs in the build under the environment's Python; here it runs under ours
against wheels of our own (a zip with ``uv-<v>.data/scripts/uv``), from a folder (an offline
bundle) and from a ``file:`` index page (PEP 503), as it would from the real index."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from synth.export.render import templates_dir

SCRIPT = templates_dir() / "install-uv.py"
X86 = "manylinux_2_17_x86_64.manylinux2014_x86_64"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("install_uv", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _wheel(folder: Path, platform: str, payload: bytes, version: str = "0.13.9") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"uv-{version}-py3-none-{platform}.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"uv-{version}.data/scripts/uv", payload)
        z.writestr(f"uv-{version}.dist-info/METADATA", "Name: uv\n")
    return path


def _lock(path: Path, wheels: list[Path], index: str | None = None) -> Path:
    lines = ["# installer.lock: a comment # with hashes", *([f"--index-url {index}"] if index
                                                          else []), "uv==0.13.9 \\"]
    digests = sorted(hashlib.sha256(w.read_bytes()).hexdigest() for w in wheels)
    lines += [f"    --hash=sha256:{d}" + (" \\" if i < len(digests) - 1 else "")
              for i, d in enumerate(digests)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, check=False)


def test_the_lock_gives_version_hashes_and_index(tmp_path: Path) -> None:
    w = _wheel(tmp_path / "w", X86, b"#!uv\n")
    lock = _lock(tmp_path / "installer.lock", [w], "https://mirror.example/simple")
    version, digests, indexes = _script().read_lock(str(lock))
    assert (version, indexes) == ("0.13.9", ["https://mirror.example/simple"])
    assert digests == {hashlib.sha256(w.read_bytes()).hexdigest()}


@pytest.mark.parametrize(("name", "machine", "want"), [
    (f"uv-1-py3-none-{X86}.whl", ("x86_64", "glibc", (2, 36)), (2, 17)),
    (f"uv-1-py3-none-{X86}.whl", ("x86_64", "glibc", (2, 12)), None),  # glibc too old
    (f"uv-1-py3-none-{X86}.whl", ("aarch64", "glibc", (2, 36)), None),
    (f"uv-1-py3-none-{X86}.whl", ("x86_64", "musl", (1, 2)), None),
    ("uv-1-py3-none-musllinux_1_1_x86_64.whl", ("x86_64", "musl", (1, 2)), (1, 1)),
    ("uv-1-py3-none-manylinux_2_28_aarch64.whl", ("aarch64", "glibc", (2, 36)), (2, 28)),
    ("uv-1-py3-none-manylinux1_i686.whl", ("i686", "glibc", (2, 36)), (2, 5)),
    ("uv-1-py3-none-macosx_10_12_x86_64.whl", ("x86_64", "glibc", (2, 36)), None),
    ("uv-1-py3-none-win_amd64.whl", ("x86_64", "glibc", (2, 36)), None),
    ("uv-1.tar.gz", ("x86_64", "glibc", (2, 36)), None),
    ("uv-1-cp311-cp311-manylinux_2_17_x86_64.whl", ("x86_64", "glibc", (2, 36)), None),
])
def test_a_wheel_fits_by_architecture_and_c_library(
        name: str, machine: tuple[str, str, tuple[int, int]], want: object) -> None:
    assert _script().platform_rank(name, *machine) == want


def test_the_uv_of_a_wheel_folder_is_unpacked_after_its_hash_is_checked(tmp_path: Path) -> None:
    arch, libc, ver = _script().machine()
    fits = _wheel(tmp_path / "wheels", f"manylinux_2_5_{arch}" if libc == "glibc"
                  else f"musllinux_1_0_{arch}", b"#!/bin/sh\necho uv-from-wheel\n")
    other = _wheel(tmp_path / "wheels", "macosx_11_0_arm64", b"not this one")
    lock = _lock(tmp_path / "installer.lock", [fits, other])
    proc = _run(lock, tmp_path / "uv", tmp_path / "wheels")
    assert proc.returncode == 0, proc.stderr
    uv = tmp_path / "uv" / "bin" / "uv"
    assert uv.read_bytes() == b"#!/bin/sh\necho uv-from-wheel\n"
    assert uv.stat().st_mode & 0o111 and fits.name in proc.stdout and ver


def test_a_wheel_whose_hash_the_lock_lacks_is_not_unpacked(tmp_path: Path) -> None:
    arch, libc, _ = _script().machine()
    plat = f"manylinux_2_5_{arch}" if libc == "glibc" else f"musllinux_1_0_{arch}"
    locked = _wheel(tmp_path / "locked", plat, b"the locked uv")
    lock = _lock(tmp_path / "installer.lock", [locked])
    _wheel(tmp_path / "wheels", plat, b"a uv someone swapped in")
    proc = _run(lock, tmp_path / "uv", tmp_path / "wheels")
    assert proc.returncode == 1
    assert "sha256" in proc.stderr and "nothing unpacked" in proc.stderr
    assert not (tmp_path / "uv").exists()


def test_the_wheel_is_found_on_the_index_page_and_fetched(tmp_path: Path) -> None:
    """A PEP 503 page (relative hrefs, #sha256 fragments, entities) on a file: index."""
    arch, libc, _ = _script().machine()
    plat = f"manylinux_2_5_{arch}" if libc == "glibc" else f"musllinux_1_0_{arch}"
    files = tmp_path / "files"
    good = _wheel(files, plat, b"#!/bin/sh\necho indexed\n")
    bad = _wheel(files / "other", plat, b"same name, other bytes")
    page = tmp_path / "simple" / "uv"
    page.mkdir(parents=True)
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    bad_digest = hashlib.sha256(bad.read_bytes()).hexdigest()
    page.joinpath("index.html").write_text(
        "<!DOCTYPE html><html><body>\n"
        f'<a href="../../files/other/{bad.name}#sha256={bad_digest}">{bad.name}</a>\n'
        f'<a href="../../files/{good.name}#sha256={digest}" '
        f'data-requires-python="&gt;=3.8">{good.name}</a>\n</body></html>\n')
    lock = _lock(tmp_path / "installer.lock", [good], (tmp_path / "simple").as_uri())
    proc = _run(lock, tmp_path / "uv")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "uv" / "bin" / "uv").read_bytes() == b"#!/bin/sh\necho indexed\n"


def test_an_extra_index_is_searched_after_the_index(tmp_path: Path) -> None:
    """uv missing on a private index's page is found on the extra index (PyPI's place)."""
    arch, libc, _ = _script().machine()
    plat = f"manylinux_2_5_{arch}" if libc == "glibc" else f"musllinux_1_0_{arch}"
    good = _wheel(tmp_path / "files", plat, b"#!/bin/sh\necho extra\n")
    (tmp_path / "private" / "simple").mkdir(parents=True)  # no page for uv at all
    (tmp_path / "public" / "simple" / "uv").mkdir(parents=True)
    (tmp_path / "public" / "simple" / "uv" / "index.html").write_text(
        f'<a href="../../../files/{good.name}">{good.name}</a>')
    lock = _lock(tmp_path / "installer.lock", [good], (tmp_path / "private/simple").as_uri())
    lock.write_text(lock.read_text().replace(
        "uv==", f"--extra-index-url {(tmp_path / 'public/simple').as_uri()}\nuv==", 1))
    proc = _run(lock, tmp_path / "uv")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "uv" / "bin" / "uv").read_bytes() == b"#!/bin/sh\necho extra\n"


def test_no_fitting_wheel_names_the_platform_and_where_it_looked(tmp_path: Path) -> None:
    other = _wheel(tmp_path / "wheels", "win_amd64", b"windows")
    lock = _lock(tmp_path / "installer.lock", [other])
    proc = _run(lock, tmp_path / "uv", tmp_path / "wheels")
    assert proc.returncode == 1
    assert "no uv 0.13.9 wheel for" in proc.stderr and str(tmp_path / "wheels") in proc.stderr


def test_a_lock_without_hashes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "installer.lock").write_text("uv==0.13.9\n")
    proc = _run(tmp_path / "installer.lock", tmp_path / "uv", tmp_path)
    assert proc.returncode == 1 and "--hash=sha256:" in proc.stderr
