"""The project's own lock files (``uv.lock``, ``poetry.lock``, ``pdm.lock``,
``Pipfile.lock``) against the final state: pure.

The artifact installs the final state (synth's hashed lock); the project's lock travels in
``source/`` for a reader who uses that tool. Where the two disagree, the export says so:
a package the lock pins at one version and the environment holds at another, or one the
environment holds that the lock does not name. A package the lock names that is not
installed is not a disagreement (another platform, an extra or a dependency group the
agent did not ask for).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from packaging.utils import canonicalize_name

#: Each project tool's lock file.
TOOL_LOCKS = {"uv": "uv.lock", "poetry": "poetry.lock", "pdm": "pdm.lock",
              "pipenv": "Pipfile.lock"}
#: The lock files read, in this order, at the top of the working folder.
LOCK_FILES = tuple(TOOL_LOCKS.values())
#: The version of a package a lock names by its place (a folder, file or repository), not
#: by a version: whatever it builds to.
ANY = "*"
#: Pipfile.lock's keys for such a package.
_BY_PLACE = frozenset({"path", "file", "git", "editable"})
#: Names every environment holds that no project lock pins.
_TOOLING = frozenset({"pip", "setuptools", "wheel"})


def lock_pins(name: str, text: str) -> dict[str, tuple[str, ...]]:
    """Canonical name -> the versions (sorted) ``text`` (a ``name`` lock file) pins it at:
    more than one where a universal lock forks by marker (uv.lock's ``resolution-markers``:
    numpy 2.2.6 for Python 3.10, 2.4.2 above; :data:`ANY` for a package it names by its
    place); ValueError when it is not such a file."""
    if name == "Pipfile.lock":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        found: list[tuple[str, str]] = []
        for section in ("default", "develop"):
            for pkg, info in (doc.get(section) or {}).items():
                version = info.get("version") if isinstance(info, dict) else None
                if isinstance(version, str) and version.startswith("=="):
                    found.append((pkg, version[2:]))
                elif isinstance(info, dict) and _BY_PLACE & info.keys():
                    found.append((pkg, ANY))  # a folder, file or repository: no version
    else:
        found = [(p["name"], str(p.get("version", ANY))) for p in toml_packages(text)
                 if isinstance(p, dict) and isinstance(p.get("name"), str)]
    out: dict[str, set[str]] = {}
    for pkg, version in found:
        out.setdefault(str(canonicalize_name(pkg)), set()).add(version)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def toml_packages(text: str) -> list[Any]:
    """The ``[[package]]`` tables of a TOML lock file (``uv.lock``, ``poetry.lock``,
    ``pdm.lock``); ValueError when it is not one."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not TOML: {exc}") from exc
    packages = doc.get("package")
    if not isinstance(packages, list):
        raise ValueError("no [[package]] tables")
    return packages


def disagreements(pins: Mapping[str, tuple[str, ...]], installed: Iterable[tuple[str, str]]
                  ) -> list[str]:
    """What the environment holds that the lock does not say, sorted (a version the lock
    pins for another Python or platform is no disagreement: uv sync picks by marker, and
    the build checks what it installed)."""
    out = []
    for raw, version in installed:
        name = str(canonicalize_name(raw))
        locked = pins.get(name)
        if locked is None:
            if name not in _TOOLING:
                out.append(f"{name} {version} is not in it")
        elif ANY not in locked and version not in locked:
            out.append(f"{name} {version} is installed where it pins {' or '.join(locked)}")
    return sorted(out)


class LockCheck(NamedTuple):
    """The project's lock file ``name`` against the final state of the environment
    ``prefix`` its tool installed: what differs (``tabulate 0.9.0 is not in it``), sorted,
    or why the file could not be read."""

    name: str
    prefix: str
    differs: tuple[str, ...] = ()
    unreadable: str | None = None

    def shown(self) -> str:
        """What differs, the first eight named."""
        found = self.differs
        return "; ".join(found[:8]) + (f"; and {len(found) - 8} more" if len(found) > 8
                                       else "")

    def note(self) -> str | None:
        """The export's warning, or None where the lock agrees."""
        if self.unreadable is not None:
            return (f"the project's {self.name} could not be read ({self.unreadable}); it is "
                    "carried as it is")
        if not self.differs:
            return None
        return (f"the project's {self.name} (carried in source/) disagrees with the final "
                f"state of {self.prefix}: {self.shown()}. The artifact installs the final "
                f"state; `{_tool(self.name)}` from source/ would not give the same "
                "environment")


def check_lock(name: str, text: str, prefix: str,
               installed: Iterable[tuple[str, str]]) -> LockCheck:
    """The project lock ``name`` (its ``text``) against what ``prefix`` holds."""
    try:
        pins = lock_pins(name, text)
    except ValueError as exc:
        return LockCheck(name, prefix, unreadable=str(exc))
    return LockCheck(name, prefix, tuple(disagreements(pins, installed)))


def _tool(name: str) -> str:
    return {"uv.lock": "uv sync --frozen", "poetry.lock": "poetry install",
            "pdm.lock": "pdm sync", "Pipfile.lock": "pipenv sync"}[name]
