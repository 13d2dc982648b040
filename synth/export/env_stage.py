"""Whether the Dockerfile makes the Python environments in a stage of their own, beside
the apt layer, and copies them in after it (docs/export.md, *Two stages*).

BuildKit runs independent stages at the same time, so the .debs unpack while the venvs
are made and their locks installed; ``COPY --from`` then puts each environment's folder at
its own path, the same files. That holds only where neither side reads what the other
writes, so the stage is used only when every part of it is known not to:

- each environment is a venv the Dockerfile makes with the base's own ``python3 -m venv``
  (no conda prefix, no downloaded interpreter, no ``uv sync`` of a project), whose whole
  state is its folder;
- its lock installs wheels only: nothing is compiled, so nothing wants apt's compilers or
  headers;
- apt adds or changes no package of the interpreter, its standard library, ``venv`` or
  the ``pip``/``setuptools`` wheels ``ensurepip`` seeds from (any ``python3*`` or
  ``libpython3*`` package but headers, ``-dev``, and Debian's ``libpython3.X``, which its
  statically linked interpreter does not load), and removes nothing.

Anything else keeps the one stage, in the order the run had. ``Dockerfile.legacy`` always
has one stage (a builder without BuildKit runs stages one after the other anyway).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from synth.export.lock import Lock
from synth.formats.plan import BuildPlan, PythonEnvPlan

#: The stage's name in the Dockerfile.
STAGE = "python-env"

_PYTHON_PACKAGE = re.compile(r"^(lib)?python3")
_HEADERS_OR_SHARED_LIB = re.compile(r"-dev$|^libpython3\.\d+$")
_BASE_PYTHON = re.compile(r"^(/usr/bin/)?python3(\.\d+)?$")


def apt_touches_python(plan: BuildPlan) -> list[str]:
    """The apt pins a venv made from the base's ``python3`` could read."""
    return [name for name, _version in plan.apt.pins
            if _PYTHON_PACKAGE.match(name) and not _HEADERS_OR_SHARED_LIB.search(name)]


def _made_from_base(env: PythonEnvPlan) -> bool:
    create = env.create
    return (len(create) >= 3 and create[1:3] == ("-m", "venv")
            and _BASE_PYTHON.match(create[0]) is not None and env.uv_sync is None)


def _names(items: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def one_stage_reason(plan: BuildPlan, locks: Sequence[Lock]) -> str | None:
    """Why the environments follow the apt layer in one stage where there are both; None
    where they get :data:`STAGE`, or where there is no apt layer or no environment."""
    if not plan.apt.pins or not locks:
        return None
    if plan.apt.remove:
        return f"apt removes {_names(plan.apt.remove)} from the base"
    if touched := apt_touches_python(plan):
        return f"apt installs {_names(touched)}, which a venv of the base's python3 can read"
    if plan.pythons:
        return "the environments run on a downloaded interpreter, unpacked first"
    if plan.conda:
        return "a conda prefix is recreated first"
    for lk in locks:
        if not _made_from_base(lk.env):
            how = ("is installed by uv sync in the project" if lk.env.uv_sync is not None
                   else "is not a venv the base's python3 -m venv makes")
            return f"{lk.env.prefix} {how}"
        if lk.build or lk.sdists:
            what = _names(lk.sdists) if lk.sdists else "distributions"
            return f"{lk.env.lock_file} builds {what} from source, with apt's compilers"
    return None


def separate_env_stage(plan: BuildPlan, locks: Sequence[Lock]) -> bool:
    """True where the environments are made in :data:`STAGE`, beside the apt layer."""
    return bool(plan.apt.pins and locks) and one_stage_reason(plan, locks) is None
