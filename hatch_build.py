"""The wheel's build hook: it compiles the distillation core with mypyc.

synth's hot path (a long audit log: the shell lexers, the extractors, the decisions, the
report's rows) is plain, fully typed Python; mypyc compiles those modules, listed in
pyproject.toml (``[tool.hatch.build.targets.wheel.hooks.custom] compile``), into C
extensions that the wheel carries beside the same ``.py`` files. Python imports an
extension before a source file of the same name, so an installed wheel runs the compiled
modules and a checkout (or an editable install) runs the source.

``SYNTH_PURE_PYTHON=1`` builds a pure-Python wheel (no compiler needed, the same
behaviour, slower on long logs); an editable build is always pure. A failed compile stops
the build and says so: a wheel never falls back to pure Python without being asked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: The compiler the build installs: the one the type checks run with (requirements-dev.lock).
MYPY = "mypy==2.4.1"

_SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

config, target, build_lib, build_temp, *modules = sys.argv[1:]
setup(name="synth-compiled-core", packages=[], py_modules=[],
      # Only the compiled modules' own errors count: the modules they import are read
      # (silently) for their types, without the development stubs (types-docker).
      # The code is made for the interpreter that builds it (pyproject.toml's mypy
      # python_version is the oldest one synth supports).
      ext_modules=mypycify(["--config-file", config, "--cache-dir", target + "/.mypy_cache",
                            "--follow-imports", "silent", "--python-version",
                            "%d.%d" % sys.version_info[:2], *modules],
                           opt_level="3", debug_level="0", group_name="synth._compiled",
                           target_dir=target),
      script_args=["build_ext", "--build-lib", build_lib, "--build-temp", build_temp])
"""


def _pure() -> bool:
    return os.environ.get("SYNTH_PURE_PYTHON", "") not in ("", "0")


class CompileCore(BuildHookInterface):
    """Compiles ``compile`` (paths under the project root) for a standard wheel."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        # mypyc type-checks what it compiles, so the build needs synth's own dependencies.
        if _pure():
            return []
        return [MYPY, "setuptools>=70", *self.metadata.core.dependencies]

    def _modules(self) -> list[str]:
        modules = self.config.get("compile", [])
        if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            raise TypeError("[tool.hatch.build.targets.wheel.hooks.custom] compile: "
                            "a list of paths")
        missing = [m for m in modules if not (Path(self.root) / m).is_file()]
        if missing:
            raise FileNotFoundError(f"compile names files that are not there: {missing}")
        return modules

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        modules = self._modules()
        if version == "editable" or _pure() or not modules:
            return
        root = Path(self.root)
        # Kept until finalize: the wheel's files are read after initialize returns.
        self._tmp = tempfile.TemporaryDirectory(prefix="synth-mypyc-")
        tmp = Path(self._tmp.name)
        (tmp / "setup.py").write_text(_SETUP)
        build_lib = tmp / "lib"
        # The setup script runs where no pyproject.toml is (setuptools would read synth's);
        # mypy is given synth's configuration and finds each module's package by its path.
        proc = subprocess.run(
            [sys.executable, str(tmp / "setup.py"), str(root / "pyproject.toml"),
             str(tmp / "c"), str(build_lib), str(tmp / "temp"),
             *(str(root / m) for m in modules)],
            cwd=tmp, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(
                "compiling synth's core with mypyc failed (it needs a C compiler and "
                f"Python's headers, {sysconfig.get_paths()['include']}; "
                "SYNTH_PURE_PYTHON=1 builds a pure-Python wheel):\n"
                + (proc.stdout + proc.stderr)[-4000:])
        for path in sorted(p for p in build_lib.rglob("*") if p.is_file()):
            build_data["force_include"][str(path)] = str(path.relative_to(build_lib))
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
