"""The auto agent's setup plan: statements from what the repository declares (pure).

With the project's own tool where it declares one and the image has it (``uv sync
--frozen`` for a uv.lock, ``poetry install`` for a poetry.lock, ``conda env create`` for an
environment file), otherwise a venv at ``/opt/venv`` filled by pip from the repository's
requirement files and project metadata, with the extras its entrypoints import. An
environment file without conda maps to pip (and apt, for the programs conda also ships),
and the plan says so. A project that builds native code gets a compiler first and builds
against the packages already installed (``--no-build-isolation``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass, field

from synth.pyramid.c0_scope import canonical, requirement_name
from synth.record.auto.survey import CondaEnvFile, Survey

VENV = "/opt/venv"
CONDA_PREFIX = "/opt/conda-env"
#: What apt installs before anything else for a project that compiles each language.
COMPILERS = {"c": ("gcc", "libc6-dev", "python3-dev"), "c++": ("g++",),
             "cuda": ()}
APT_INSTALL = "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"

#: conda package names whose pip distribution is named otherwise.
CONDA_TO_PIP = {
    "pytorch": "torch", "pytorch-cpu": "torch", "msgpack-python": "msgpack",
    "python-graphviz": "graphviz", "matplotlib-base": "matplotlib",
    "py-opencv": "opencv-python-headless", "opencv": "opencv-python-headless",
    "pytables": "tables", "tensorflow-gpu": "tensorflow", "pyqt": "PyQt5",
    "pillow-simd": "pillow", "jupyterlab": "jupyterlab", "ruamel_yaml": "ruamel.yaml",
}
#: conda packages that are programs or libraries: apt has them, pip does not.
CONDA_TO_APT = {
    "graphviz": "graphviz", "ffmpeg": "ffmpeg", "libsndfile": "libsndfile1",
    "cmake": "cmake", "make": "make", "git": "git", "openmpi": "openmpi-bin",
    "hdf5": "libhdf5-dev", "gxx": "g++", "gcc": "gcc", "cxx-compiler": "g++",
    "c-compiler": "gcc", "swig": "swig", "pkg-config": "pkg-config",
}
#: conda packages with no counterpart to install: the interpreter, its tools, GPU runtimes
#: (pip wheels of the frameworks bring their own) and BLAS variants.
CONDA_SKIP = frozenset({
    "python", "pip", "setuptools", "wheel", "cudatoolkit", "cuda-toolkit", "pytorch-cuda",
    "cudnn", "nccl", "cuda", "cuda-version", "mkl", "mkl-service", "blas", "libblas",
    "liblapack", "openblas", "_libgcc_mutex", "libgcc-ng", "libstdcxx-ng", "ca-certificates",
    "openssl", "tk", "xz", "zlib", "sqlite", "readline", "ncurses", "libffi",
})


@dataclass(frozen=True)
class Step:
    """One statement the agent runs (a ``bash -c`` in /workspace), and why."""

    command: str
    why: str


@dataclass(frozen=True)
class Plan:
    #: "venv", "uv", "poetry" or "conda": what makes the environment.
    tool: str
    #: The interpreter the setup installs into (the claims' python_path).
    python: str
    env_name: str
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = field(default=())
    #: How the repair step installs a distribution into this environment.
    pip: str = f"{VENV}/bin/pip"


def plan_setup(survey: Survey, tools: Collection[str]) -> Plan:
    """The setup for ``survey``'s repository in an image whose PATH has ``tools``."""
    if "uv.lock" in survey.project_locks and "uv" in tools:
        return _uv_plan(survey)
    if "poetry.lock" in survey.project_locks and "poetry" in tools:
        return _poetry_plan(survey)
    conda = next((t for t in ("micromamba", "mamba", "conda") if t in tools), None)
    if survey.conda_env is not None and conda is not None:
        return _conda_plan(survey, conda)
    return _venv_plan(survey)


def _apt(packages: Collection[str], why: str) -> list[Step]:
    if not packages:
        return []
    return [Step("apt-get update", "apt's package lists, for " + why),
            Step(f"{APT_INSTALL} {' '.join(sorted(set(packages)))}", why)]


def _native_steps(survey: Survey) -> list[Step]:
    packages = sorted({p for lang in survey.native for p in COMPILERS.get(lang, ())})
    return _apt(packages, f"compilers: {survey.native_reason}")


def _venv_plan(survey: Survey) -> Plan:
    pip = f"{VENV}/bin/pip"
    notes: list[str] = []
    steps = _native_steps(survey)
    apt_extra: list[str] = []
    pip_reqs: list[str] = []
    if survey.conda_env is not None:
        pip_reqs, apt_extra, mapped = conda_to_pip(survey.conda_env)
        notes.append(f"no conda in the image: {survey.conda_env.path} mapped to pip and apt"
                     + (f" ({'; '.join(mapped)})" if mapped else ""))
        if apt_extra:
            steps += _apt(apt_extra, f"programs {survey.conda_env.path} takes from conda")
    for lock, tool in sorted(survey.project_locks.items()):
        notes.append(f"{lock} is {tool}'s lock and {tool} is not in the image: installed "
                     "from the project's requirements with pip")
    steps.append(Step(f"python3 -m venv {VENV}", "a virtual environment for the project"))
    for req in survey.requirement_files:
        steps.append(Step(f"{pip} install -r {shlex.quote(req)}", f"{req}: the requirements"))
    for extra in survey.needed_extras:
        if extra in survey.extra_requirement_files and not survey.installable:
            req = survey.extra_requirement_files[extra]
            steps.append(Step(f"{pip} install -r {shlex.quote(req)}",
                              f"{req}: the entrypoints import what it lists"))
    if pip_reqs:
        steps.append(Step(f"{pip} install {_quoted(pip_reqs)}",
                          f"{survey.conda_env.path if survey.conda_env else ''} mapped to pip"))
    for group in survey.needed_groups:
        steps.append(Step(f"{pip} install {_quoted(survey.groups[group])}",
                          f"dependency group {group}: the entrypoints import from it"))
    if survey.installable:
        steps += _project_install(survey, pip)
    if not survey.declares_python_deps and survey.readme_requirements:
        steps.append(Step(f"{pip} install {_quoted(survey.readme_requirements)}",
                          "the README's install instructions"))
        notes.append("the repository declares no dependencies in files: the README's "
                     "`pip install` lines were followed")
    return Plan("venv", f"{VENV}/bin/python", VENV, tuple(steps), tuple(notes))


def _project_install(survey: Survey, pip: str) -> list[Step]:
    extras = [e for e in survey.needed_extras if e not in survey.extra_requirement_files
              or survey.installable]
    target = "." + (f"[{','.join(extras)}]" if extras else "")
    why = "the project itself" + (f", with the extras its entrypoints import: "
                                  f"{', '.join(extras)}" if extras else "")
    if not survey.native:
        return [Step(f"{pip} install {shlex.quote(target)}", why)]
    flags, native_why = native_install(survey)
    build = build_requirements(survey.build_requires)
    return [Step(f"{pip} install {_quoted(build)}", "the project's build requirements"),
            Step(f"{pip} install {flags}{shlex.quote(target)}", f"{why}; {native_why}")]


def native_install(survey: Survey) -> tuple[str, str]:
    """pip's flags (ending in a space) for installing a project that builds native code, and
    why: against the packages installed (no build isolation), and editable where it keeps a
    package at the repository's root and builds with setuptools — anything run from
    /workspace imports that package from the checkout, where a plain install leaves no
    compiled parts, and setuptools' editable install builds them there."""
    if survey.root_packages and survey.build_backend in SETUPTOOLS_BACKENDS:
        return ("--no-build-isolation -e ",
                "its native code built against the packages installed; editable: "
                f"{', '.join(survey.root_packages)} at the repository's root would be "
                "imported from the checkout, without the compiled parts, by anything run "
                "from /workspace")
    return "--no-build-isolation ", "its native code built against the packages installed"


#: Build backends whose editable install builds the extensions into the checkout (and
#: "": a setup.py without ``build-backend``, built by setuptools' legacy backend).
SETUPTOOLS_BACKENDS = frozenset({"", "setuptools.build_meta",
                                 "setuptools.build_meta:__legacy__"})


#: Build requirements a --no-build-isolation build takes from the environment as installed
#: (the point of building against it): never reinstalled, never pinned older.
_FROM_ENVIRONMENT = frozenset({"numpy", "oldest-supported-numpy", "torch"})


def build_requirements(requires: Collection[str]) -> list[str]:
    """What to install before a build without isolation: the project's build requirements
    (one per name, the first as written), setuptools and wheel, less the packages it builds
    against (:data:`_FROM_ENVIRONMENT`)."""
    out: dict[str, str] = {}
    for req in [*requires, "setuptools", "wheel"]:
        name = canonical(requirement_name(req) or req)
        if name not in _FROM_ENVIRONMENT:
            out.setdefault(name, req)
    return [out[n] for n in sorted(out)]


def _uv_plan(survey: Survey) -> Plan:
    flags = "".join(f" --extra {shlex.quote(e)}" for e in survey.needed_extras)
    flags += "".join(f" --group {shlex.quote(g)}" for g in survey.needed_groups)
    steps = [*_native_steps(survey),
             Step(f"uv sync --frozen{flags}", "uv.lock: the project's own lock, as locked")]
    return Plan("uv", "/workspace/.venv/bin/python", "/workspace/.venv", tuple(steps),
                ("uv.lock installed with uv sync --frozen",),
                pip="uv pip install --python /workspace/.venv/bin/python")


def _poetry_plan(survey: Survey) -> Plan:
    flags = "".join(f" --extras {shlex.quote(e)}" for e in survey.needed_extras)
    steps = [*_native_steps(survey),
             Step("poetry config virtualenvs.in-project true", "the environment at ./.venv"),
             Step(f"poetry install --no-interaction{flags}", "poetry.lock: the project's own lock")]
    return Plan("poetry", "/workspace/.venv/bin/python", "/workspace/.venv", tuple(steps),
                ("poetry.lock installed with poetry install",),
                pip="/workspace/.venv/bin/pip")


def _conda_plan(survey: Survey, conda: str) -> Plan:
    assert survey.conda_env is not None
    env = survey.conda_env
    steps = [*_native_steps(survey),
             Step(f"{conda} env create -y -p {CONDA_PREFIX} -f {shlex.quote(env.path)}",
                  f"{env.path}: the project's conda environment")]
    if survey.installable:
        steps += _project_install(survey, f"{CONDA_PREFIX}/bin/pip")
    return Plan("conda", f"{CONDA_PREFIX}/bin/python", CONDA_PREFIX, tuple(steps),
                (f"{env.path} created with {conda}",), pip=f"{CONDA_PREFIX}/bin/pip")


def conda_to_pip(env: CondaEnvFile) -> tuple[list[str], list[str], list[str]]:
    """(pip requirements, apt packages, what was renamed or dropped) for an environment
    file installed without conda. ``numpy=1.26`` (conda: any 1.26.x) becomes
    ``numpy==1.26.*``; a build string is dropped."""
    pip: list[str] = []
    apt: list[str] = []
    said: list[str] = []
    for spec in env.conda:
        name, version = _conda_spec(spec)
        key = name.lower()
        if key in CONDA_SKIP:
            continue
        if key in CONDA_TO_APT:
            apt.append(CONDA_TO_APT[key])
            said.append(f"{name} -> apt {CONDA_TO_APT[key]}")
            continue
        pip_name = CONDA_TO_PIP.get(key, name)
        if pip_name != name:
            said.append(f"{name} -> pip {pip_name}")
        pip.append(pip_name + version)
    pip += [p for p in env.pip if not p.startswith("-")]
    return pip, apt, said


def _conda_spec(spec: str) -> tuple[str, str]:
    """``numpy=1.26`` -> ("numpy", "==1.26.*"); ``scipy>=1.11`` -> ("scipy", ">=1.11");
    ``conda-forge::numpy 1.26.4 py311_0`` -> ("numpy", "==1.26.4")."""
    spec = spec.split("::", 1)[-1].strip()
    m = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", spec)
    if not m:
        return spec, ""
    name, rest = m.group(1), m.group(2).strip()
    if not rest:
        return name, ""
    if rest[0] in "<>!" or rest.startswith("=="):
        return name, rest.split()[0].split(",")[0] if " " in rest else rest
    version = rest.lstrip("=").split("=")[0].split()[0]
    if not re.fullmatch(r"[0-9][0-9A-Za-z.*+]*", version):
        return name, ""
    if version.endswith("*"):
        return name, "==" + version
    exact = rest.startswith("=") and not rest.startswith("==") and rest.count("=") >= 2
    single = not rest.startswith("=")
    return name, "==" + version + ("" if exact or single else ".*")


def _quoted(args: Collection[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)
