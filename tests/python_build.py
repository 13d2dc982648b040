"""A uv-managed Python made at test time: no python-build-standalone download is reachable.

:func:`build_python` writes a python-build-standalone-shaped archive (``python/`` holding
Debian's own python3.11 and its standard library, laid out as a relocatable prefix, the same
files the conda-env task's channel packages for conda) and :func:`write_downloads` the downloads
list uv reads with ``--python-downloads-json-url`` / ``UV_PYTHON_DOWNLOADS_JSON_URL``, so
that a real ``uv python install`` fetches, checks and unpacks it as it would a real build.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

from conda_channel import add_member, debian_python

KEY = "cpython-3.11.2-linux-x86_64-gnu"
ARCHIVE = "cpython-3.11.2+20230207-x86_64-unknown-linux-gnu-install_only.tar.gz"


def build_python(root: Path) -> str:
    """``root/ARCHIVE``; returns its sha256."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, content in sorted(debian_python().items()):
            add_member(tar, f"python/{path}", content)
    data = gzip.compress(buf.getvalue(), compresslevel=1, mtime=0)  # the same bytes each time
    root.mkdir(parents=True, exist_ok=True)
    (root / ARCHIVE).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def write_downloads(root: Path, url: str, sha256: str) -> Path:
    """``root/downloads.json``: uv's downloads list naming the archive at ``url``."""
    doc = {KEY: {"name": "cpython", "arch": {"family": "x86_64", "variant": None},
                 "os": "linux", "libc": "gnu", "major": 3, "minor": 11, "patch": 2,
                 "prerelease": "", "url": url, "sha256": sha256, "variant": None}}
    path = root / "downloads.json"
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    return path
