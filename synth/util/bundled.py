"""Folders synth ships beside its code (``templates/``, ``tasks/``): inside the package in
an installed wheel (pyproject.toml's force-include puts them at ``synth/<name>``), at the
top of the checkout otherwise."""

from __future__ import annotations

from pathlib import Path

#: The ``synth`` package folder (synth/util/bundled.py -> synth/).
_PACKAGE = Path(__file__).resolve().parents[1]


def bundled_dir(name: str) -> Path:
    """``synth/<name>`` where the wheel put it, else the checkout's ``<name>/``."""
    packaged = _PACKAGE / name
    return packaged if packaged.is_dir() else _PACKAGE.parent / name
