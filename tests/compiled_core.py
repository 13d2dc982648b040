"""The modules the wheel's build compiles with mypyc: pyproject.toml's list
(``[tool.hatch.build.targets.wheel.hooks.custom] compile``), read by the compiled pass's
check (tests/conftest.py) and by tests/unit/test_build_hook.py."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_list() -> list[str]:
    """The paths as pyproject.toml lists them (``synth/distill/shell.py``)."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    paths: list[str] = doc["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"][
        "compile"]
    return paths


def module_name(path: str) -> str:
    """``synth/distill/shell.py`` -> ``synth.distill.shell``."""
    return path.removesuffix(".py").replace("/", ".")
