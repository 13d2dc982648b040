"""Describe this interpreter and its distributions as JSON on stdout.

Runs under the *target's* Python (>= 3.8), so: standard library only and nothing newer
than 3.8 (typing.Optional, not ``X | None``). Passed as ``python -c`` so nothing is
written into the container.
"""

import ast
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional  # noqa: UP035 - runs on Python 3.8

metadata: Any
try:
    import importlib.metadata as metadata
except ImportError:  # Python < 3.8
    metadata = None


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_text(dist: Any, name: str) -> Optional[str]:  # noqa: UP045
    try:
        text = dist.read_text(name)
    except Exception:
        return None
    return str(text) if text is not None else None


def location(dist: Any) -> Optional[str]:  # noqa: UP045
    path = getattr(dist, "_path", None)
    return os.path.dirname(str(path)) if path is not None else None


def wheel_generator(dist: Any) -> Optional[str]:  # noqa: UP045
    """The ``Generator:`` line of the distribution's WHEEL file: the backend that built it."""
    text = read_text(dist, "WHEEL")
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "generator":
            return value.strip()[:200]
    return None


def describe(dist: Any) -> Optional[Dict[str, Any]]:  # noqa: UP006, UP045
    try:
        name = dist.metadata["Name"]
    except Exception:
        name = None
    if not name:
        return None
    direct_text = read_text(dist, "direct_url.json")
    direct: Any = None
    if direct_text:
        try:
            direct = json.loads(direct_text)
        except ValueError:
            direct = {"unparsed": direct_text}
    installer = read_text(dist, "INSTALLER")
    return {
        "name": canonical(str(name)),
        "display_name": str(name),
        "version": str(dist.version),
        "installer": installer.strip() if installer else None,
        "requested": read_text(dist, "REQUESTED") is not None,
        "direct_url": direct,
        "location": location(dist),
        "wheel_generator": wheel_generator(dist),
    }


#: conda-meta record fields the probe keeps (the file lists are left out: they are large).
CONDA_FIELDS = ("name", "version", "build", "channel", "url", "sha256", "md5", "subdir", "fn")
#: A conda-meta record larger than this is not read (its file list can be long; 64 MiB).
CONDA_META_MAX = 64 << 20


def without_credentials(url: Optional[str]) -> Optional[str]:  # noqa: UP045
    """``url`` without its userinfo (``https://user:pw@host``) and without an anaconda.org
    token segment (``/t/<token>/``): a lock names a channel, never how to log in to it."""
    if not url:
        return url
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        url = scheme + sep + host.rsplit("@", 1)[-1] + slash + path
    return re.sub(r"/t/[^/]+/", "/", url)


def conda_record(path: str) -> Optional[Dict[str, Any]]:  # noqa: UP006, UP045
    try:
        if os.path.getsize(path) > CONDA_META_MAX:
            return None
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not doc.get("name"):
        return None
    rec = {k: (str(doc[k]) if doc.get(k) is not None else None) for k in CONDA_FIELDS}
    rec["channel"] = without_credentials(rec["channel"])
    rec["url"] = without_credentials(rec["url"])
    return rec


def conda_history(prefix: str) -> List[str]:  # noqa: UP006
    """The specs asked for, in order (``# update specs: [...]`` lines of conda-meta/history)."""
    specs: List[str] = []  # noqa: UP006
    try:
        with open(os.path.join(prefix, "conda-meta", "history"), encoding="utf-8") as f:
            lines = f.read(4 << 20).splitlines()
    except (OSError, ValueError):
        return specs
    for line in lines:
        if line.startswith("# update specs:"):
            try:
                got = ast.literal_eval(line.partition(":")[2].strip())
            except (ValueError, SyntaxError):
                continue
            specs += [str(s) for s in got if str(s) not in specs] if isinstance(got, list) else []
    return specs


#: Variables an activation script's shell changes by itself, or that conda's scripts keep
#: only to undo themselves on deactivation: never part of what activation sets.
_SHELL_OWN = ("_", "SHLVL", "PWD", "OLDPWD", "PATH", "CONDA_PREFIX", "CONDA_SHLVL")
#: Sources each script in order between two ``env -0`` listings, a mark between them.
_ACTIVATE = ('env -0; printf "\\0--synth-activation--\\0"; '
             'for f in "$@"; do . "$f" >/dev/null 2>&1 </dev/null; done; env -0')


def conda_activation(prefix: str) -> List[List[str]]:  # noqa: UP006
    """``[name, value]`` of each variable the prefix's ``etc/conda/activate.d/*.sh`` scripts
    set, sourced in order by bash with ``CONDA_PREFIX`` set as ``conda activate`` does
    (``PATH`` aside: the image puts the prefix's ``bin`` first itself), sorted."""
    folder = os.path.join(prefix, "etc", "conda", "activate.d")
    try:
        scripts = sorted(os.path.join(folder, n) for n in os.listdir(folder)
                         if n.endswith(".sh"))
    except OSError:
        return []
    if not scripts:
        return []
    env = dict(os.environ, CONDA_PREFIX=prefix)
    try:
        out = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", _ACTIVATE, "activate"] + scripts,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30,
            check=False).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return []
    before, mark, after = out.partition("\0--synth-activation--\0")
    if not mark:
        return []
    had = _env_of(before)
    return sorted([k, v] for k, v in _env_of(after).items()
                  if had.get(k) != v and k not in _SHELL_OWN
                  and not k.startswith("CONDA_BACKUP_"))[:64]


def _env_of(text: str) -> Dict[str, str]:  # noqa: UP006
    return dict(item.split("=", 1) for item in text.split("\0") if "=" in item)


def conda_prefix(prefix: str) -> Optional[Dict[str, Any]]:  # noqa: UP006, UP045
    """The conda packages of ``prefix`` from its ``conda-meta/*.json``; None if not one."""
    meta = os.path.join(prefix, "conda-meta")
    if not os.path.isdir(meta):
        return None
    packages = []
    for name in sorted(os.listdir(meta)):
        if name.endswith(".json"):
            rec = conda_record(os.path.join(meta, name))
            if rec is not None:
                rec["meta_file"] = name
                packages.append(rec)
    packages.sort(key=lambda r: (r["name"], r["version"] or "", r["build"] or ""))
    return {"prefix": prefix, "packages": packages, "requested": conda_history(prefix),
            "activation": conda_activation(prefix)}


def main() -> None:
    out: Dict[str, Any] = {  # noqa: UP006
        "executable": sys.executable,
        "realpath": os.path.realpath(sys.executable),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "implementation": sys.implementation.name,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "path": [p for p in sys.path if p],
        "distributions": [],
        "error": None,
    }
    if metadata is None:
        out["error"] = "importlib.metadata is missing (Python < 3.8)"
        print(json.dumps(out))
        return
    seen = set()
    dists: List[Dict[str, Any]] = []  # noqa: UP006
    for dist in metadata.distributions():
        info = describe(dist)
        if info is None or (info["name"], info["location"]) in seen:
            continue
        seen.add((info["name"], info["location"]))
        dists.append(info)
    dists.sort(key=lambda d: (d["name"], d["location"] or ""))
    out["distributions"] = dists
    out["conda"] = conda_prefix(sys.prefix)
    print(json.dumps(out))


main()
