"""C0's scope and the repository's declared distributions (host side, pure file reading).

*Scope*: which Python files C0 and the C0i import check judge. A task sets it in
``[verify.c0]`` (``include`` / ``exclude`` globs over repo-relative POSIX paths, where ``*``
also crosses ``/``); by default it is the repo's importable packages (folders with an
``__init__.py`` at the root, under ``src/``, or in a folder holding its own Python project
such as ``PythonAPI/setup.py``) and the probes' entrypoint files with the
repo modules they import, minus tests/, test/, docs/, examples/ and demo*/ at any depth.
A repo with neither packages nor entrypoints is judged whole.

*Declared distributions*: what the repo itself says it needs — ``[project.dependencies]`` /
``[project.optional-dependencies]`` (pyproject.toml), ``install_requires`` /
``extras_require`` (setup.py literals, setup.cfg), and requirement files, where
``requirements.txt`` (and ``requirements/base.txt`` & co.) are required and any other
(``requirements-dev.txt``, ``requirements/viz.txt``) names an extra. Used to put imports of
an optional extra in their own class and to give install hints in the repo's own words.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import os
import posixpath
import re
import shlex
import stat
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_EXCLUDE: tuple[str, ...] = tuple(
    pat for d in ("tests", "test", "docs", "examples", "demo*") for pat in (f"{d}/*", f"*/{d}/*")
)
#: Requirement files under these stems are the base requirements, not an extra.
_BASE_STEMS = frozenset({"requirements", "base", "core", "main", "common", "install",
                         "runtime", "prod", "production", "default"})
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Declared:
    """Distributions the repo declares: canonical name -> (name as written, where), and for
    extras the extra's name too."""

    required: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    extras: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)  # name, extra, where

    def all_names(self) -> dict[str, tuple[str, str]]:
        out = {c: (n, f"{w} [{e}]") for c, (n, e, w) in self.extras.items()}
        out.update(self.required)
        return out


def requirement_name(line: str) -> str | None:
    """The distribution a requirement line names (None for options, URLs, comments)."""
    egg = re.search(r"#egg=([A-Za-z0-9._-]+)", line)
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-") or "://" in line.split(";", 1)[0].split("@", 1)[0]:
        return egg.group(1) if egg and "://" in line else None
    m = _REQ_NAME.match(line)
    return m.group(1) if m else None


def _literal(node: ast.expr | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


#: A repository file C0 reads: at most this many bytes (a bigger one reads as unreadable).
MAX_REPO_FILE = 16 << 20


def read_repo_text(path: Path, errors: str = "replace") -> str:
    """A repository file's text. The repository is the agent's (an artifact's ``source/``):
    a regular file reached without following a link at its name, opened without blocking
    (a FIFO is refused, never waited on), at most :data:`MAX_REPO_FILE` bytes; OSError
    otherwise (``errors="strict"``: UnicodeDecodeError for bytes that are not UTF-8)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REPO_FILE:
            raise OSError(f"{path}: not a regular file of at most {MAX_REPO_FILE} bytes")
        data = fh.read(MAX_REPO_FILE + 1)
    if len(data) > MAX_REPO_FILE:
        raise OSError(f"{path}: over {MAX_REPO_FILE} bytes")
    return data.decode("utf-8", errors)


def _setup_py(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """install_requires and extras_require of setup.py, where they are literals."""
    try:
        tree = ast.parse(read_repo_text(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return [], {}
    names: dict[str, ast.expr] = {}
    req: list[str] = []
    extras: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                value = names.get(kw.value.id, kw.value) if isinstance(
                    kw.value, ast.Name) else kw.value
                got = _literal(value)
                if kw.arg == "install_requires" and isinstance(got, list | tuple):
                    req += [str(x) for x in got]
                elif kw.arg == "extras_require" and isinstance(got, dict):
                    extras.update({str(k): [str(x) for x in v] for k, v in got.items()
                                   if isinstance(v, list | tuple)})
    return req, extras


def _pyproject(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    try:
        data = tomllib.loads(read_repo_text(path, errors="strict"))
    except (OSError, ValueError, RecursionError):  # TOMLDecodeError and bad UTF-8 are both
        return [], {}
    project = data.get("project") or {}
    req = [str(x) for x in project.get("dependencies") or []]
    extras = {str(k): [str(x) for x in v] for k, v in
              (project.get("optional-dependencies") or {}).items() if isinstance(v, list)}
    # PEP 735 dependency groups (uv's dev group): not needed to run, as an extra is not.
    for group, items in (data.get("dependency-groups") or {}).items():
        if isinstance(items, list):
            extras.setdefault(str(group), []).extend(x for x in items if isinstance(x, str))
    poetry_req, poetry_extras = _poetry(data.get("tool", {}).get("poetry") or {})
    req += poetry_req
    for name, names in poetry_extras.items():
        extras.setdefault(name, []).extend(names)
    return req, extras


def _poetry(poetry: dict[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
    """poetry's own tables: ``[tool.poetry.dependencies]`` (``python`` is the interpreter;
    one marked ``optional = true`` is an extra's), ``[tool.poetry.extras]`` and the groups
    (``[tool.poetry.group.<name>.dependencies]``, the older ``dev-dependencies``), which are
    not needed to run, as an extra is not."""
    if not isinstance(poetry, dict):
        return [], {}
    deps = poetry.get("dependencies") or {}
    deps = deps if isinstance(deps, dict) else {}
    optional = {str(n) for n, spec in deps.items()
                if isinstance(spec, dict) and spec.get("optional") is True}
    req = [str(n) for n in deps if str(n).lower() != "python" and str(n) not in optional]
    extras: dict[str, list[str]] = {}
    for name, names in (poetry.get("extras") or {}).items():
        if isinstance(names, list):
            extras[str(name)] = [str(x) for x in names]
    groups = {str(g): (t or {}).get("dependencies") for g, t in
              (poetry.get("group") or {}).items() if isinstance(t, dict)}
    groups.setdefault("dev", poetry.get("dev-dependencies"))
    for group, table in groups.items():
        if isinstance(table, dict):
            extras.setdefault(group, []).extend(str(n) for n in table)
    leftover = optional - {n for names in extras.values() for n in names}
    if leftover:  # optional, in no extra: still not needed to run
        extras.setdefault("optional", []).extend(sorted(leftover))
    return req, extras


def _setup_cfg(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    cfg = configparser.ConfigParser(interpolation=None)  # a `%` in a value is text
    try:
        cfg.read_string(read_repo_text(path, errors="strict"), str(path))
        req = cfg.get("options", "install_requires", fallback="").splitlines()
        extras = {k: v.splitlines() for k, v in cfg.items("options.extras_require")} if (
            cfg.has_section("options.extras_require")) else {}
    except (OSError, ValueError, configparser.Error):
        return [], {}
    return req, extras


def requirement_files(root: Path) -> Iterable[tuple[Path, str | None]]:
    """(file, extra name or None for the base requirements)."""
    for f in sorted(root.glob("requirements*.txt")):
        stem = f.stem
        extra = stem[len("requirements"):].lstrip("-_.")
        yield f, (extra or None) if extra not in _BASE_STEMS else None
    for f in sorted((root / "requirements").glob("*.txt")) if (
            root / "requirements").is_dir() else []:
        yield f, None if f.stem in _BASE_STEMS else f.stem


def declared_distributions(root: Path) -> Declared:
    """Every distribution the repo at ``root`` declares, required and per extra."""
    required: dict[str, tuple[str, str]] = {}
    extras: dict[str, tuple[str, str, str]] = {}

    def add(lines: Iterable[str], where: str, extra: str | None) -> None:
        for line in lines:
            name = requirement_name(line)
            if not name:
                continue
            if extra is None:
                required.setdefault(canonical(name), (name, where))
            else:
                extras.setdefault(canonical(name), (name, extra, where))

    for fname, reader in (("pyproject.toml", _pyproject), ("setup.py", _setup_py),
                          ("setup.cfg", _setup_cfg)):
        if (root / fname).is_file():
            req, ext = reader(root / fname)
            add(req, fname, None)
            for extra_name, extra_lines in ext.items():
                add(extra_lines, fname, extra_name)
    for f, extra in requirement_files(root):
        try:
            lines = read_repo_text(f).splitlines()
        except OSError:
            continue
        add(lines, f.relative_to(root).as_posix(), extra)
    # A distribution the base requirements name is required, whatever an extra says too.
    return Declared(required, {c: v for c, v in extras.items() if c not in required})


def module_matches_distribution(top: str, dist: str, mapped: str | None) -> bool:
    """Could distribution ``dist`` provide top-level module ``top``? By name (``foo`` ~
    ``foo``, ``foo-graphql``, ``python-foo``) or through the maintained mapping ``mapped``."""
    c, t = canonical(dist), canonical(top)
    if mapped is not None and canonical(mapped.split(" ", 1)[0]) == c:
        return True
    return c == t or c.startswith(t + "-") or c.endswith("-" + t)


# ---------------------------------------------------------------------------------- scope
def matches(rel: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


_PROJECT_FILES = ("setup.py", "setup.cfg", "pyproject.toml")
#: Folders never searched for a Python project: build output, environments, VCS.
_NOT_PROJECTS = frozenset({"build", "dist", "node_modules", "site-packages", "venv", ".venv",
                           "env", "__pycache__"})


def package_roots(root: Path) -> list[Path]:
    """Where the repo's packages are imported from: the root and ``src/``, and each folder
    up to two levels down that holds its own Python project (``setup.py``, ``setup.cfg`` or
    ``pyproject.toml``: cocoapi's ``PythonAPI/``) with its ``src/`` — tests, docs, examples
    and demos left out."""
    found = [root, root / "src"]
    for depth in ("*", "*/*"):
        for project in sorted(root.glob(depth)):
            rel = project.relative_to(root).as_posix()
            if (not project.is_dir() or any(p.startswith(".") or p in _NOT_PROJECTS
                                            for p in rel.split("/"))
                    or matches(rel + "/x", DEFAULT_EXCLUDE)):
                continue
            if any((project / f).is_file() for f in _PROJECT_FILES):
                found += [project, project / "src"]
    return [d for d in dict.fromkeys(found) if d.is_dir()]


def packages(root: Path) -> list[str]:
    """Repo-relative folders of the importable top-level packages (:func:`package_roots`)."""
    out = []
    for base in package_roots(root):
        for d in sorted(base.iterdir()):
            if d.is_dir() and (d / "__init__.py").is_file() and d.name.isidentifier():
                out.append(d.relative_to(root).as_posix())
    return out


def entrypoint_files(root: Path, commands: Iterable[str]) -> list[str]:
    """Repo files the probe commands run: ``x.py`` arguments and ``-m pkg.mod`` modules."""
    found: list[str] = []
    for command in commands:
        try:
            tokens = shlex.split(command)
        except ValueError:
            tokens = command.split()
        for i, tok in enumerate(tokens):
            cands: list[str] = []
            if tok.endswith(".py"):
                cands = [tok.removeprefix("./")]
            elif tok == "-m" and i + 1 < len(tokens):
                mod = tokens[i + 1].replace(".", "/")
                cands = [f"{mod}.py", f"{mod}/__main__.py", f"src/{mod}.py"]
            for cand in cands:
                if (root / cand).is_file() and cand not in found:
                    found.append(cand)
                    break
    return found


def entrypoint_closure(root: Path, entry: Iterable[str]) -> list[str]:
    """The files ``entry`` are and every repo file they import, transitively, in the order
    found."""
    todo, seen = list(entry), []
    while todo:
        rel = todo.pop(0)
        if rel not in seen:
            seen.append(rel)
            todo += _local_imports(root, rel)
    return seen


def _local_imports(root: Path, rel: str) -> list[str]:
    """Repo files that ``rel`` imports by absolute name from its folder or the root."""
    try:
        tree = ast.parse(read_repo_text(root / rel))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and not n.level]
    here = (root / rel).parent
    out = []
    for name in names:
        path = name.replace(".", "/")
        for base in (here, root):
            for cand in (base / f"{path}.py", base / path / "__init__.py"):
                if cand.is_file():
                    out.append(cand.relative_to(root).as_posix())
    return out


@dataclass(frozen=True)
class Scope:
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    #: "task" (from [verify.c0]) or "default".
    origin: str
    entrypoints: tuple[str, ...] = ()

    def __contains__(self, rel: object) -> bool:
        """In scope: a file ``include`` names exactly (the probes' entrypoints and what they
        import, under ``examples/`` too), else one its globs match and ``exclude``'s do not."""
        if not isinstance(rel, str):
            return False
        return rel in self.include or (matches(rel, self.include)
                                       and not matches(rel, self.exclude))

    def to_json(self) -> dict[str, object]:
        return {"include": list(self.include), "exclude": list(self.exclude),
                "origin": self.origin, "entrypoints": list(self.entrypoints)}


def resolve_scope(root: Path, include: Sequence[str] | None, exclude: Sequence[str] | None,
                  commands: Iterable[str] = ()) -> Scope:
    """The scope for the repo at ``root``: the task's globs where given, else the default."""
    excl = tuple(exclude) if exclude is not None else DEFAULT_EXCLUDE
    entry = entrypoint_files(root, commands)
    if include is not None:
        return Scope(tuple(include), excl, "task", tuple(entry))
    incl = [f"{p}/*" for p in packages(root)]
    covered = Scope(tuple(incl), excl, "default")
    incl += [rel for rel in entrypoint_closure(root, entry) if rel not in covered]
    if not incl:
        incl = ["*"]
    return Scope(tuple(incl), excl, "default", tuple(entry))


def module_name(root: Path, rel: str, roots: Sequence[Path] | None = None) -> str | None:
    """The dotted name ``rel`` is imported by, when it sits in a package chain rooted at
    one of :func:`package_roots` (``roots``, when the caller has them); None for scripts
    outside packages."""
    roots = package_roots(root) if roots is None else roots
    path = root / rel
    parts = [path.stem] if path.name != "__init__.py" else []
    d = path.parent
    while (d / "__init__.py").is_file() and d != root:
        parts.insert(0, d.name)
        d = d.parent
    if not parts or d not in roots or path.parent == d:
        return None
    if not all(p.isidentifier() for p in parts) or parts[-1] == "__main__":
        return None
    return ".".join(parts)


def _guarded_script(path: Path) -> bool:
    """Does the script keep its work under ``if __name__ == "__main__":``?"""
    try:
        text = read_repo_text(path)
    except OSError:
        return False
    return bool(re.search(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", text, re.M))


def import_check_modules(root: Path, files: Iterable[str]) -> list[str]:
    """What C0i imports: every in-scope module of the repo's packages, and each root-level
    entrypoint script that guards its work with ``if __name__ == "__main__":``."""
    return sorted(import_check_files(root, files))


def import_check_files(root: Path, files: Iterable[str]) -> dict[str, str]:
    """:func:`import_check_modules`' modules -> their files (repo-relative)."""
    out: dict[str, str] = {}
    roots = package_roots(root)
    for rel in files:
        name = module_name(root, rel, roots)
        if name is None and "/" not in rel and rel not in ("setup.py", "conftest.py") and (
                _guarded_script(root / rel)):
            name = Path(rel).stem
        if name and all(p.isidentifier() for p in name.split(".")):
            out.setdefault(name, rel)
    return out


def modules_beside(root: Path, modules: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """Each of ``modules`` (:func:`import_check_files`) -> the stems of the other ``.py``
    files in its folder: names only a script run from there imports bare."""
    out: dict[str, frozenset[str]] = {}
    folders: dict[str, frozenset[str]] = {}
    for name, rel in modules.items():
        folder = posixpath.dirname(rel)
        if folder not in folders:
            folders[folder] = frozenset(
                f.stem for f in (root / folder).glob("*.py")
                if f.stem != "__init__" and f.is_file() and not f.is_symlink())
        out[name] = folders[folder] - {name.rsplit(".", 1)[-1]}
    return out
