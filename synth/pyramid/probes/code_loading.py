"""List what changes which code this interpreter runs at start, as JSON on stdout.

Runs under the *target's* Python (>= 3.8): standard library only. Passed as ``python -c``
so nothing is written into the container. For every ``.pth`` file in the interpreter's site
directories: its lines that Python *executes* (those starting with ``import``), its sha256,
and the installed distribution whose RECORD lists it with the hash RECORD gives, or the
conda package whose ``conda-meta`` record does (so a ``.pth`` nothing owns, or one changed
after install, shows); the
``sitecustomize``/``usercustomize`` modules Python would import; and ``/etc/ld.so.preload``
(libraries the dynamic linker loads into every process).
"""

import base64
import hashlib
import json
import os
import site
import sys
from typing import Any, Dict, List, Optional  # noqa: UP035 - runs on Python 3.8

MAX_BYTES = 1 << 20


def site_dirs() -> List[str]:  # noqa: UP006
    dirs = []
    try:
        dirs += list(site.getsitepackages())
    except AttributeError:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    seen = []
    for d in dirs:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in seen:
            seen.append(real)
    return seen


def record_hashes() -> Dict[str, Any]:  # noqa: UP006
    """Absolute path -> (distribution, RECORD's ``sha256=`` value) for .pth files."""
    out: Dict[str, Any] = {}  # noqa: UP006
    try:
        from importlib import metadata
    except ImportError:
        return out
    for dist in metadata.distributions():
        for f in dist.files or ():
            if str(f).endswith(".pth"):
                path = os.path.realpath(str(dist.locate_file(f)))
                digest = record_digest(f.hash.value) if f.hash is not None \
                    and f.hash.mode == "sha256" else None
                out[path] = (dist.metadata["Name"] or "?", digest)
    return out


def conda_hashes() -> Dict[str, Any]:  # noqa: UP006
    """Absolute path -> (conda package, its sha256 as RECORD writes it) for the .pth files
    the interpreter's conda prefix installed (``conda-meta/*.json``, ``paths_data``)."""
    out: Dict[str, Any] = {}  # noqa: UP006
    for prefix in sorted({sys.prefix, sys.base_prefix}):
        meta = os.path.join(prefix, "conda-meta")
        try:
            names = sorted(n for n in os.listdir(meta) if n.endswith(".json"))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(meta, name), encoding="utf-8") as fh:
                    record = json.load(fh)
                paths = record["paths_data"]["paths"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            for entry in paths if isinstance(paths, list) else ():
                rel = entry.get("_path") if isinstance(entry, dict) else None
                if isinstance(rel, str) and rel.endswith(".pth"):
                    digest = entry.get("sha256")
                    out[os.path.realpath(os.path.join(prefix, rel))] = (
                        f"{record.get('name') or '?'} (conda)",
                        record_digest(digest) if isinstance(digest, str) else None)
    return out


def record_digest(value: str) -> str:
    """RECORD's digest as urlsafe base64 with no padding; a backend that wrote the hex
    digest (64 hex digits: uv_build 0.9) is read as the same hash."""
    if len(value) == 64 and all(ch in "0123456789abcdef" for ch in value.lower()):
        return base64.urlsafe_b64encode(bytes.fromhex(value)).rstrip(b"=").decode()
    return value.rstrip("=")


def sha256_b64(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def read(path: str) -> Optional[bytes]:  # noqa: UP045
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_BYTES)
    except OSError:
        return None


def main() -> None:
    owners = {**conda_hashes(), **record_hashes()}
    pth = []
    startup = []
    for d in site_dirs():
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if name.endswith(".pth") and os.path.isfile(path):
                data = read(path) or b""
                lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()
                         if ln.startswith(("import ", "import\t"))]
                owner = owners.get(os.path.realpath(path))
                pth.append({"path": path, "executable_lines": len(lines),
                            "first": lines[0][:200] if lines else None,
                            "owner": owner[0] if owner else None,
                            "matches_record": (owner is not None and owner[1] is not None
                                               and owner[1] == sha256_b64(data))})
            elif name in ("sitecustomize.py", "usercustomize.py"):
                startup.append(path)
    preload = read("/etc/ld.so.preload")
    print(json.dumps({"format": 1, "pth": pth, "startup": startup,
                      "ld_so_preload": preload.decode("utf-8", "replace")[:2000]
                      if preload else None}, sort_keys=True))


main()
