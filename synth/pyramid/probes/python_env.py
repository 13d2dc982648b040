"""Describe this interpreter and its distributions as JSON on stdout.

Runs under the *target's* Python (>= 3.8), so: standard library only and nothing newer
than 3.8 (typing.Optional, not ``X | None``). Passed as ``python -c`` so nothing is
written into the container.
"""

import json
import os
import re
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
    print(json.dumps(out))


main()
