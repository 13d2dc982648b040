"""Make this task's conda channel: no conda channel is reachable where synth is made.

``python3 make_channel.py DIR`` writes ``linux-64`` packages made from the running
machine's own Debian files (``synth demo`` runs it in the task's base image) and the
repodata that indexes them:

- ``python 3.11.2`` (build ``0_debian12``): Debian's ``/usr/bin/python3.11`` and its
  standard library (no tests, no caches), with Debian's site layout patched out of its copy
  of ``sysconfig.py`` and a ``.pth`` file that adds ``site-packages``, so that, like a conda
  Python, it imports from and installs into ``lib/python3.11/site-packages``;
- ``pip``: the wheel Debian ships (``/usr/share/python-wheels``), unpacked into
  ``site-packages``, its ``INSTALLER`` ``conda``, depending on python;
- ``tinylib 1.1``: one pure module, depending on python.

The packages are plain ``.tar.bz2`` archives with ``info/index.json``, ``info/paths.json``
and ``info/files``, as conda-build writes them, every member and record at one fixed time:
the same machine files make the same bytes, so a lock's sha256 holds across builds. Any
conda-compatible installer (py-rattler here) solves against the repodata and links them.
Standard library only: it runs under the base image's ``python3``.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

PY = "python3.11"
SUBDIR = "linux-64"
#: The head of a script that sh runs under the ``python`` beside it, and Python reads as a
#: string: the script then needs no prefix written into it.
POLYGLOT = (b"#!/bin/sh\n"
            b"\x27\x27\x27exec\x27 \"$(dirname -- \"$0\")/python\" \"$0\" \"$@\"\n"
            b"\x27 \x27\x27\x27\n")
#: A fixed time for every member and record: the channel is the same on every build.
EPOCH = 1_790_000_000


def debian_python() -> dict[str, bytes | str]:
    """``path in the package -> content`` (bytes), or ``-> target`` (str) for a symlink."""
    files: dict[str, bytes | str] = {f"bin/{PY}": Path(f"/usr/bin/{PY}").read_bytes(),
                                     "bin/python3": PY, "bin/python": PY}
    stdlib = Path(f"/usr/lib/{PY}")
    skip = {"dist-packages", "__pycache__", "test", "idlelib", "tkinter", "turtledemo",
            "ensurepip", "lib2to3", "pydoc_data"}
    for path in sorted(stdlib.rglob("*")):
        rel = path.relative_to(stdlib)
        if (skip.intersection(rel.parts) or path.is_dir()
                or rel.name in ("EXTERNALLY-MANAGED", "sitecustomize.py")):
            continue  # Debian's PEP 668 marker and its apport hook: a conda python has neither
        name = f"lib/{PY}/{rel}"
        files[name] = (str(path.readlink()) if path.is_symlink()
                       else path.read_bytes())
    # Debian's python lays a non-venv prefix out as /usr/local; a conda python does not:
    # its sysconfig installs into lib/python3.11/site-packages, and a .pth file in a folder
    # Debian's (frozen) site module reads makes that a site folder.
    files[f"lib/{PY}/dist-packages/conda-site.pth"] = (
        b"import os, site, sys; site.addsitedir(os.path.join(sys.prefix, 'lib', "
        b"'python%d.%d' % sys.version_info[:2], 'site-packages'))\n")
    sysconfig = files[f"lib/{PY}/sysconfig.py"]
    assert isinstance(sysconfig, bytes)
    files[f"lib/{PY}/sysconfig.py"] = _patched(
        sysconfig, b'    if sys.base_prefix != sys.prefix or hasattr(sys, "real_prefix"):\n'
        b"        # virtual environments", b"    if True:\n        # as a conda python")
    return files


def _patched(text: bytes, old: bytes, new: bytes) -> bytes:
    assert text.count(old) == 1, old  # Debian's python3.11 changed: update the patch
    return text.replace(old, new)


def _pip() -> dict[str, bytes | str]:
    wheel = sorted(Path("/usr/share/python-wheels").glob("pip-*.whl"))[-1]
    site = f"lib/{PY}/site-packages"
    files: dict[str, bytes | str] = {}
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if not info.is_dir():
                files[f"{site}/{info.filename}"] = z.read(info)
    info_dir = next(n.rsplit("/", 1)[0] for n in files if n.endswith(".dist-info/METADATA"))
    files[f"{info_dir}/INSTALLER"] = b"conda\n"
    # A script that runs under the python beside it wherever the prefix is (as uv writes).
    files["bin/pip"] = (POLYGLOT + b"import sys\nfrom pip._internal.cli.main import main\n"
                        b"sys.exit(main())\n")
    return files


def _tinylib() -> dict[str, bytes | str]:
    site = f"lib/{PY}/site-packages"
    return {
        f"{site}/tinylib/__init__.py": b'"""A tiny conda package."""\n\nVERSION = "1.1"\n\n\n'
                                       b"def double(x):\n    return 2 * x\n",
        f"{site}/tinylib-1.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinylib\n"
                                                  b"Version: 1.1\n",
        f"{site}/tinylib-1.1.dist-info/INSTALLER": b"conda\n",
        f"{site}/tinylib-1.1.dist-info/RECORD": b"",
        # What `conda activate` sources: the image's ENV must carry what it sets.
        "etc/conda/activate.d/tinylib.sh": b'export TINYLIB_DATA="$CONDA_PREFIX/share/tinylib"\n',
    }


def _package(dest: Path, name: str, version: str, build: str,
             files: dict[str, bytes | str], depends: list[str]) -> dict[str, object]:
    """Write ``<name>-<version>-<build>.tar.bz2`` into ``dest``; its repodata entry."""
    index = {"name": name, "version": version, "build": build, "build_number": 0,
             "depends": depends, "subdir": SUBDIR, "license": "PSF-2.0",
             "timestamp": EPOCH * 1000}
    paths = []
    for path, content in sorted(files.items()):
        if isinstance(content, str):
            paths.append({"_path": path, "path_type": "softlink"})
        else:
            paths.append({"_path": path, "path_type": "hardlink",
                          "sha256": hashlib.sha256(content).hexdigest(),
                          "size_in_bytes": len(content)})
    meta = {"info/index.json": json.dumps(index, indent=2, sort_keys=True).encode(),
            "info/paths.json": json.dumps({"paths": paths, "paths_version": 1},
                                          indent=2, sort_keys=True).encode(),
            "info/files": "".join(f"{p}\n" for p in sorted(files)).encode()}
    fn = f"{name}-{version}-{build}.tar.bz2"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:bz2", compresslevel=1) as tar:
        for path, content in [*sorted(meta.items()), *sorted(files.items())]:
            add_member(tar, path, content)
    data = buf.getvalue()
    (dest / fn).write_bytes(data)
    return {fn: {**index, "md5": hashlib.md5(data).hexdigest(),
                 "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}}


def add_member(tar: tarfile.TarFile, path: str, content: bytes | str) -> None:
    """A file (bytes) or a symbolic link (its target), at the fixed time; executables (right
    in a ``bin`` folder, or ELF) 0755."""
    info = tarfile.TarInfo(path)
    info.mtime = EPOCH
    if isinstance(content, str):
        info.type, info.linkname = tarfile.SYMTYPE, content
        tar.addfile(info)
        return
    info.size = len(content)
    executable = path.rsplit("/", 2)[-2:-1] == ["bin"] or content[:4] == b"\x7fELF"
    info.mode = 0o755 if executable else 0o644
    tar.addfile(info, io.BytesIO(content))


@functools.lru_cache(maxsize=1)
def _contents() -> tuple[tuple[str, str, str, dict[str, bytes | str], list[str]], ...]:
    return (("python", "3.11.2", "0_debian12", debian_python(), []),
            ("pip", "23.0.1", "py_0", _pip(), ["python >=3.11,<3.12"]),
            ("tinylib", "1.1", "py_0", _tinylib(), ["python >=3.11,<3.12"]))


def build_channel(root: Path) -> Path:
    """A channel at ``root``: ``linux-64`` with the three packages, an empty ``noarch``."""
    packages: dict[str, object] = {}
    (root / SUBDIR).mkdir(parents=True, exist_ok=True)
    for name, version, build, files, depends in _contents():
        packages.update(_package(root / SUBDIR, name, version, build, files, depends))
    for subdir, found in ((SUBDIR, packages), ("noarch", {})):
        (root / subdir).mkdir(parents=True, exist_ok=True)
        (root / subdir / "repodata.json").write_text(json.dumps(
            {"info": {"subdir": subdir}, "packages": found, "packages.conda": {},
             "repodata_version": 1}, indent=2, sort_keys=True))
    return root


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 make_channel.py DIR")
    print("channel made at", build_channel(Path(sys.argv[1])))
