"""The auto agent's repairs: from a failure's output to the one statement that fixes it
(pure). A failure with no known repair gets none, and the agent says so and stops.

* ``ModuleNotFoundError: No module named 'X'`` -> the distribution the repository itself
  declares for ``X`` (its extra, through the project, when an extra declares it), else the
  maintained import->distribution mapping of C0 (:data:`synth.pyramid.c0_scan.
  DISTRIBUTION_HINTS`), else the import name; never for the repository's own modules.
* a shared library that cannot be opened, a header that is not found, a compiler or build
  program that is missing (git too, which setuptools-scm needs to read a version) -> the
  Debian package that ships it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass

from synth.pyramid.c0_scan import install_hint
from synth.record.auto.plan import APT_INSTALL, Plan, Step, native_install
from synth.record.auto.survey import PROJECT_FILES, Survey, declared_extra

_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_.]+)'")
_NO_LIBRARY = re.compile(r"(lib[A-Za-z0-9_+.-]*?\.so(?:\.[0-9]+)*): cannot open shared "
                         r"object file")
_NO_HEADER = re.compile(r"fatal error: ([A-Za-z0-9_/.+-]+\.h(?:pp)?): No such file")
_NO_COMPILER = re.compile(r"(?:command '(?:[a-z0-9_-]*-)?(gcc|g\+\+|c\+\+|cc)' failed"
                          r"|\b(gcc|g\+\+|c\+\+|cc|make|cmake|git|pkg-config|swig): "
                          r"(?:command )?not found"
                          r"|error: command '[^']*?(gcc|g\+\+|cc)' failed: No such file"
                          r"|No such file or directory: '(git|cmake|make|pkg-config|swig)'"
                          # setuptools-scm reads the version from git history: no git, no version
                          r"|setuptools[-_]scm was unable to detect version"
                          r")")

#: Shared libraries research code loads, and the Debian 12 package that ships each.
LIBRARY_PACKAGES = {
    "libGL.so": "libgl1", "libEGL.so": "libegl1", "libgthread-2.0.so": "libglib2.0-0",
    "libglib-2.0.so": "libglib2.0-0", "libgomp.so": "libgomp1", "libsndfile.so": "libsndfile1",
    "libSM.so": "libsm6", "libXext.so": "libxext6", "libXrender.so": "libxrender1",
    "libX11.so": "libx11-6", "libxcb.so": "libxcb1", "libgfortran.so": "libgfortran5",
    "libopenblas.so": "libopenblas0", "libhdf5.so": "libhdf5-103-1",
    "libgeos_c.so": "libgeos-c1v5", "libspatialindex_c.so": "libspatialindex-c6",
    "libcairo.so": "libcairo2", "libsqlite3.so": "libsqlite3-0", "libzmq.so": "libzmq5",
    "libavcodec.so": "libavcodec59", "libOpenGL.so": "libopengl0", "libfontconfig.so":
    "libfontconfig1", "libstdc++.so": "libstdc++6", "libnuma.so": "libnuma1",
}
#: Headers native builds look for, and the Debian 12 package that ships each.
HEADER_PACKAGES = {
    "Python.h": "python3-dev", "zlib.h": "zlib1g-dev", "ffi.h": "libffi-dev",
    "openssl/ssl.h": "libssl-dev", "hdf5.h": "libhdf5-dev", "png.h": "libpng-dev",
    "jpeglib.h": "libjpeg-dev", "sndfile.h": "libsndfile1-dev", "cblas.h": "libopenblas-dev",
    "lapacke.h": "liblapacke-dev", "omp.h": "libgomp1", "bzlib.h": "libbz2-dev",
    "lzma.h": "liblzma-dev", "sqlite3.h": "libsqlite3-dev", "yaml.h": "libyaml-dev",
    "libxml/xmlversion.h": "libxml2-dev", "geos_c.h": "libgeos-dev", "eigen3/Eigen/Core":
    "libeigen3-dev", "Eigen/Core": "libeigen3-dev", "stdio.h": "libc6-dev",
    "stdlib.h": "libc6-dev", "limits.h": "libc6-dev",
}
COMPILER_PACKAGES = {"gcc": "gcc libc6-dev", "cc": "gcc libc6-dev", "g++": "g++",
                     "c++": "g++", "make": "make", "cmake": "cmake", "git": "git",
                     "pkg-config": "pkg-config", "swig": "swig"}


@dataclass(frozen=True)
class Diagnosis:
    """What went wrong, as the agent says it; ``repair`` is None where none is known."""

    problem: str
    repair: Step | None


def diagnose(output: str, survey: Survey, plan: Plan, tried: Collection[str]) -> Diagnosis | None:
    """The repair for the last recognised failure in ``output``; None when the output holds
    no failure synth knows. A repair already in ``tried`` is not offered again."""
    found = _last(output)
    if found is None:
        return None
    kind, what = found
    if kind == "module":
        problem, step = _module_repair(what, survey, plan)
    elif kind == "library":
        problem, step = _apt_repair(f"shared library {what} is missing",
                                    _library_package(what), what)
    elif kind == "header":
        problem, step = _apt_repair(f"header {what} is missing", HEADER_PACKAGES.get(what),
                                    what)
    else:
        problem, step = _apt_repair(f"program {what} is missing",
                                    COMPILER_PACKAGES.get(what), what)
    if step is not None and step.command in tried:
        return Diagnosis(problem + " (its repair was already tried)", None)
    return Diagnosis(problem, step)


def _last(output: str) -> tuple[str, str] | None:
    best: tuple[int, str, str] | None = None
    for kind, pattern in (("module", _NO_MODULE), ("library", _NO_LIBRARY),
                          ("header", _NO_HEADER), ("compiler", _NO_COMPILER)):
        for m in pattern.finditer(output):
            what = next((g for g in m.groups() if g), "git")  # the version-from-git case
            if best is None or m.start() > best[0]:
                best = (m.start(), kind, what)
    return None if best is None else (best[1], best[2])


def _module_repair(module: str, survey: Survey, plan: Plan) -> tuple[str, Step | None]:
    top = module.split(".", 1)[0]
    problem = f"module {module} is missing"
    if top in survey.own_modules:
        return problem + " (the repository's own module: not a package to install)", None
    dist, where = install_hint(module, survey.declared)
    if " " in dist:  # "apex (NVIDIA, build from source)": no index name to install
        return problem + f" ({dist})", None
    extra, source = declared_extra(survey.declared, dist) or (None, "")
    if extra is not None and survey.installable and source in PROJECT_FILES:
        target = shlex.quote(f".[{extra}]")
        flags = native_install(survey)[0] if survey.native and plan.tool != "uv" else ""
        return (f"{problem}: {dist}, of the extra {extra!r} ({where})",
                Step(f"{plan.pip} install {flags}{target}",
                     f"{module} is imported; the extra {extra} provides {dist}"))
    if extra is not None and extra in survey.extra_requirement_files:
        req = survey.extra_requirement_files[extra]
        return (f"{problem}: {dist}, listed in {req}",
                Step(f"{plan.pip} install -r {shlex.quote(req)}", f"{req} provides {dist}"))
    return (f"{problem}: installing {dist} ({where})",
            Step(f"{plan.pip} install {shlex.quote(dist)}", f"{module} is imported ({where})"))


def _library_package(library: str) -> str | None:
    stem = re.sub(r"(\.so)(\.[0-9]+)*$", r"\1", library)
    return LIBRARY_PACKAGES.get(stem)


def _apt_repair(problem: str, package: str | None, what: str) -> tuple[str, Step | None]:
    if package is None:
        return problem + " (no Debian package known for it)", None
    return (f"{problem}: apt {package}",
            Step(f"apt-get update && {APT_INSTALL} {package}", f"{what} comes with {package}"))
