"""What a repository declares, read from a copy of its files (pure, host side).

The auto agent plans from this alone, so the same files give the same plan. Every file is
read as C0 reads repository files (:func:`synth.pyramid.c0_scope.read_repo_text`: regular
files only, no link followed at the name, bounded size): the repository is untrusted input.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from synth.pyramid.c0_scan import install_hint, scan_repo
from synth.pyramid.c0_scope import (
    Declared,
    Scope,
    canonical,
    declared_distributions,
    entrypoint_closure,
    entrypoint_files,
    read_repo_text,
    requirement_files,
    requirement_name,
)

#: Lock files of project tools, and the tool each belongs to.
PROJECT_LOCKS = {"uv.lock": "uv", "poetry.lock": "poetry", "Pipfile.lock": "pipenv",
                 "pdm.lock": "pdm"}
_NATIVE_SUFFIXES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".cu": "cuda",
                    ".pyx": "c"}
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "build", "dist",
                        "tests", "test", "docs", "examples", "third_party"})
#: Headings whose fenced shell blocks are install instructions.
_INSTALL_HEADING = re.compile(r"^#{1,6}\s.*\b(install|installation|setup|set up|getting "
                              r"started|requirements|environment|dependencies)\b", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class CondaEnvFile:
    """``environment.yml``: its conda specs and its ``pip:`` list, as written."""

    path: str
    conda: tuple[str, ...]
    pip: tuple[str, ...]


@dataclass(frozen=True)
class Survey:
    #: Base requirement files (``requirements.txt``, ``requirements/base.txt``), repo-relative.
    requirement_files: tuple[str, ...] = ()
    #: Other requirement files by the extra they stand for (``requirements-viz.txt``: viz).
    extra_requirement_files: dict[str, str] = field(default_factory=dict)
    #: A Python project pip can install (setup.py, setup.cfg, or pyproject.toml with
    #: ``[project]`` or ``[build-system]``).
    installable: bool = False
    #: ``[build-system] requires`` of pyproject.toml (setup.py alone: setuptools).
    build_requires: tuple[str, ...] = ()
    #: ``[build-system] build-backend`` of pyproject.toml ("": none named).
    build_backend: str = ""
    #: Packages at the repository's root (folders with ``__init__.py``): anything run from
    #: the root imports them from the checkout, not from the environment.
    root_packages: tuple[str, ...] = ()
    #: Languages of native sources the project builds (c, c++, cuda), with the reason.
    native: tuple[str, ...] = ()
    native_reason: str = ""
    #: ``[dependency-groups]``: name -> requirement strings (``include-group`` left out).
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    declared: Declared = field(default_factory=Declared)
    #: Extras (and dependency groups) whose distributions the entrypoints import.
    needed_extras: tuple[str, ...] = ()
    needed_groups: tuple[str, ...] = ()
    #: Top-level modules the entrypoints import outside any guard (stdlib left out).
    entry_imports: tuple[str, ...] = ()
    #: The repository's own top-level module names.
    own_modules: frozenset[str] = frozenset()
    conda_env: CondaEnvFile | None = None
    #: Project lock files present, each with its tool.
    project_locks: dict[str, str] = field(default_factory=dict)
    python_version: str | None = None
    #: Requirement arguments of ``pip install`` lines in the README's install blocks.
    readme_requirements: tuple[str, ...] = ()

    @property
    def declares_python_deps(self) -> bool:
        return bool(self.requirement_files or self.installable or self.conda_env)


def survey_repo(root: Path, probe_commands: list[str]) -> Survey:
    """Everything :mod:`synth.record.auto.plan` needs from the repository at ``root``."""
    base: list[str] = []
    extra_files: dict[str, str] = {}
    for f, extra in requirement_files(root):
        rel = f.relative_to(root).as_posix()
        if extra is None:
            base.append(rel)
        else:
            extra_files.setdefault(extra, rel)
    pyproject = _toml(root / "pyproject.toml")
    installable = ((root / "setup.py").is_file() or (root / "setup.cfg").is_file()
                   or "project" in pyproject or "build-system" in pyproject)
    build = pyproject.get("build-system") or {}
    build_requires = tuple(str(r) for r in build.get("requires") or ()) if isinstance(
        build, dict) else ()
    if not build_requires and (root / "setup.py").is_file():
        build_requires = ("setuptools",)
    groups = _groups(pyproject)
    declared = declared_distributions(root)
    entry_files = entrypoint_closure(root, entrypoint_files(root, probe_commands))
    scan = scan_repo(root, scope=Scope(tuple(entry_files), (), "entrypoints"))
    stdlib = sys.stdlib_module_names
    entry = sorted({i.top for i in scan.imports
                    if i.in_scope and i.optional is None and i.top not in stdlib})
    extras, used_groups = set(), set()
    for top in entry:
        dist, _ = install_hint(top, declared)
        found = declared_extra(declared, dist)
        if found is not None and (found[1] in PROJECT_FILES or found[0] in extra_files):
            extras.add(found[0])
        for name, reqs in groups.items():
            if any(canonical(requirement_name(r) or "") == canonical(dist) for r in reqs):
                used_groups.add(name)
    native, reason = _native(root, build_requires)
    backend = build.get("build-backend") if isinstance(build, dict) else None
    return Survey(
        requirement_files=tuple(base), extra_requirement_files=extra_files,
        installable=installable, build_requires=build_requires,
        build_backend=backend if isinstance(backend, str) else "",
        root_packages=_root_packages(root), native=native,
        native_reason=reason, groups=groups, declared=declared,
        needed_extras=tuple(sorted(extras)), needed_groups=tuple(sorted(used_groups)),
        entry_imports=tuple(entry), own_modules=scan.own_modules,
        conda_env=_conda_env(root), python_version=_python_version(root),
        project_locks={n: t for n, t in PROJECT_LOCKS.items() if (root / n).is_file()},
        readme_requirements=readme_requirements(root),
    )


#: The files whose extras ``pip install '.[extra]'`` installs.
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def declared_extra(declared: Declared, dist: str) -> tuple[str, str] | None:
    """(the extra, the file declaring it) when only an extra declares ``dist``."""
    found = declared.extras.get(canonical(dist))
    return (found[1], found[2]) if found is not None else None


def _toml(path: Path) -> dict[str, object]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(read_repo_text(path, errors="strict"))
    except (OSError, ValueError, RecursionError):
        return {}


def _groups(pyproject: dict[str, object]) -> dict[str, tuple[str, ...]]:
    raw = pyproject.get("dependency-groups")
    if not isinstance(raw, dict):
        return {}
    return {str(name): tuple(str(r) for r in reqs if isinstance(r, str))
            for name, reqs in sorted(raw.items()) if isinstance(reqs, list)}


_NATIVE_BACKENDS = ("scikit-build", "scikit-build-core", "meson-python", "pybind11", "cython",
                    "nanobind", "maturin", "torch")


def _root_packages(root: Path) -> tuple[str, ...]:
    """The folders at ``root`` with an ``__init__.py``, by name (links never followed)."""
    out = []
    for folder in sorted(root.iterdir(), key=lambda p: p.name):
        init = folder / "__init__.py"
        if (folder.name.isidentifier() and not folder.is_symlink() and folder.is_dir()
                and init.is_file() and not init.is_symlink()):
            out.append(folder.name)
    return tuple(out)


def _native(root: Path, build_requires: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """Languages the project compiles, from setup.py's words, its build requirements and
    its source files."""
    langs: set[str] = set()
    reasons: list[str] = []
    setup = root / "setup.py"
    text = ""
    if setup.is_file():
        try:
            text = read_repo_text(setup)
        except OSError:
            text = ""
    if re.search(r"\b(Extension|CppExtension|CUDAExtension|ext_modules|cythonize)\b", text):
        reasons.append("setup.py builds extension modules")
        langs.add("c")
        if "CppExtension" in text or "CUDAExtension" in text:
            langs.add("c++")
        if "CUDAExtension" in text:
            langs.add("cuda")
    backends = sorted({canonical(requirement_name(r) or "") for r in build_requires}
                      & set(_NATIVE_BACKENDS))
    if backends:
        reasons.append(f"builds with {', '.join(backends)}")
        langs.add("c")
    if not reasons:
        return (), ""
    for path in sorted(_source_files(root)):
        lang = _NATIVE_SUFFIXES[path.suffix]
        if lang not in langs:
            langs.add(lang)
            reasons.append(f"{path.relative_to(root).as_posix()} is {lang}")
    return tuple(sorted(langs)), "; ".join(reasons)


def _source_files(root: Path, limit: int = 5000) -> list[Path]:
    found: list[Path] = []
    stack = [root]
    seen = 0
    while stack and seen < limit:
        here = stack.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError:
            continue
        for p in entries:
            seen += 1
            if p.is_symlink():
                continue
            if p.is_dir():
                if p.name not in _SKIP_DIRS:
                    stack.append(p)
            elif p.suffix in _NATIVE_SUFFIXES:
                found.append(p)
    return found


def _python_version(root: Path) -> str | None:
    path = root / ".python-version"
    if not path.is_file():
        return None
    try:
        lines = read_repo_text(path).split()
    except OSError:
        return None
    return lines[0][:40] if lines else None


def _conda_env(root: Path) -> CondaEnvFile | None:
    for name in ("environment.yml", "environment.yaml"):
        if (root / name).is_file():
            try:
                return parse_environment_yml(read_repo_text(root / name), name)
            except OSError:
                return None
    return None


def parse_environment_yml(text: str, path: str = "environment.yml") -> CondaEnvFile:
    """The ``dependencies:`` of an environment file: the block-list subset every
    environment file in practice uses (``- spec`` items and one nested ``- pip:`` list).
    Flow lists and anchors are not read; an unreadable line is skipped."""
    conda: list[str] = []
    pip: list[str] = []
    in_deps = in_pip = False
    pip_indent = -1
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            in_deps = line.startswith("dependencies:")
            in_pip = False
            continue
        if not in_deps:
            continue
        item = line.strip()
        if not item.startswith("- "):
            continue
        value = item[2:].strip().strip("'\"")
        if in_pip and indent > pip_indent:
            pip.append(value)
            continue
        in_pip = False
        if value.rstrip(":").strip() == "pip" and value.endswith(":"):
            in_pip, pip_indent = True, indent
        elif value:
            conda.append(value)
    return CondaEnvFile(path, tuple(conda), tuple(pip))


def readme_requirements(root: Path) -> tuple[str, ...]:
    """Requirement arguments of ``pip install`` lines in fenced blocks under install-like
    headings of the README (``-r``/``-e``/``.`` and options left out: the repository's own
    files say those better)."""
    for name in ("README.md", "README.rst", "README.txt", "README"):
        if (root / name).is_file():
            try:
                text = read_repo_text(root / name)
            except OSError:
                return ()
            break
    else:
        return ()
    found: list[str] = []
    under_install = in_block = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_block = not in_block
            continue
        if not in_block:
            if line.startswith("#"):
                under_install = bool(_INSTALL_HEADING.match(line))
            continue
        if under_install:
            found += _pip_args(line)
    return tuple(dict.fromkeys(found))


def _pip_args(line: str) -> list[str]:
    cmd = line.strip().removeprefix("$ ").strip()
    m = re.match(r"(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*)", cmd)
    if not m:
        return []
    out: list[str] = []
    skip_next = False
    for tok in m.group(1).split():
        if skip_next:
            skip_next = False
            continue
        if tok in ("-r", "-e", "-c", "--requirement", "--editable", "--constraint",
                   "-f", "--find-links", "-i", "--index-url", "--extra-index-url"):
            skip_next = True
            continue
        if tok in ("&&", ";", "|"):
            break
        if tok.startswith(("-", ".", "/")):
            continue
        out.append(tok.strip("'\""))
    return out
