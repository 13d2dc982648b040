"""The structure rules of issue 13, checked on the source (AST) and in fresh interpreters.

- No function over 60 lines, and no CLI command body over 20 lines, in synth/.
- A pure module does not import docker-py; synth/pyramid/ does not import synth.
- No module outside synth/formats/store.py opens a run or artifact file by its name.
- No Python file emits or parses Dockerfile instructions: templates/ alone speaks Dockerfile.
- Probes are stdlib-only and all live in synth/pyramid/probes/: tests/unit/test_verify_probes.py.
- synth/pyramid/ loads no other synth module, in a fresh interpreter:
  tests/unit/test_verify_standalone.py.
- No function imports a synth module outside synth/cli/ (whose command bodies import what
  they run, so that ``synth --help`` stays fast): a dependency is declared at the top of its
  module, where import-linter sees it, unless ``DEFERRED_IMPORTS`` says why not.
- ``synth --help``, ``synth task check`` and ``synth export --plan`` never load docker-py.

Each violation is named ``"<rule> <path>::<function>"`` (stable when lines move).
Any violation fails. ``EXEMPT`` lists the few places the rule does not mean, each with its reason.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from distill_runs import cmd, make_run_dir

from synth.formats import store

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("synth",)
MAX_FUNCTION_LINES = 60
MAX_COMMAND_BODY_LINES = 20

#: Where a rule's pattern matches something the rule is not about.
EXEMPT = frozenset({
    # `docker import --change` takes Dockerfile instructions: the engine's API for the
    # base image's CMD and labels, not an artifact.
    "dockerfile synth/engine/docker.py::DockerEngine.import_image",
    # Report wording ("ENV X=... (from ...)"), shown to people, never built.
    "dockerfile synth/distill/provenance.py::risks",
})


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function, nested ones too, with its qualified name (``Class.method``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + child.name, child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def _top_level(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Module-level code, then each top-level function and method, with its name."""
    loose = [s for s in tree.body if not isinstance(
        s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    yield "<module>", ast.Module(body=loose, type_ignores=[])
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{stmt.name}.{item.name}", item


def _is_command(fn: Function) -> bool:
    """A click/typer command: decorated with ``<app>.command(...)`` or ``.callback(...)``."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in ("command", "callback"):
            return True
    return False


def _body_lines(fn: Function) -> int:
    """Lines of the body after the docstring (the signature holds the options)."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def length_violations() -> set[str]:
    found = set()
    for rel, tree in _sources():
        for name, fn in _functions(tree):
            if (fn.end_lineno or fn.lineno) - fn.lineno + 1 > MAX_FUNCTION_LINES:
                found.add(f"long {rel}::{name}")
            if _is_command(fn) and _body_lines(fn) > MAX_COMMAND_BODY_LINES:
                found.add(f"command-body {rel}::{name}")
    return found


# ------------------------------------------------------------------ files opened by name
#: The base names of the files the store reads (run and artifact files, verify.json).
STORE_FILES = frozenset(v.rel.rsplit("/", 1)[-1] for v in vars(store).values()
                        if isinstance(v, store.FileKind))
#: Calls that read the file their receiver names (``path.read_text()``).
_READ_METHODS = frozenset({"read_text", "read_bytes"})
#: Calls that read the file their first argument names.
_READ_FUNCTIONS = frozenset({"copyfile", "copy", "copy2", "copyfileobj"})


def _names_store_file(value: object) -> bool:
    return isinstance(value, str) and (value.rsplit("/", 1)[-1] in STORE_FILES
                                       or value.startswith("state/"))


def _tainted(expr: ast.AST, names: set[str]) -> bool:
    """Does ``expr`` name a store file: by a literal, ``kind.rel`` or a variable set so?"""
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and _names_store_file(node.value):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "rel":
            return True
        if isinstance(node, ast.Name) and node.id in names:
            return True
    return False


def _tainted_names(scope: ast.AST) -> set[str]:
    """Variables that hold a store file's path (assigned from one), to a fixed point."""
    names: set[str] = set()
    while True:
        before = len(names)
        for node in ast.walk(scope):
            value, targets = None, []
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr | ast.AugAssign):
                value, targets = node.value, [node.target]
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                value, targets = node.context_expr, [node.optional_vars]
            if value is not None and _tainted(value, names):
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            return names


def _read_mode(call: ast.Call, position: int) -> bool:
    """True unless the call's mode (positional ``position`` or ``mode=``) is a write."""
    mode = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return True
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                and set(mode.value) & set("wax+"))


def _opens_store_file(call: ast.Call, names: set[str]) -> bool:
    func = call.func
    first = call.args[0] if call.args else None
    if isinstance(func, ast.Name) and func.id == "open":
        return first is not None and _tainted(first, names) and _read_mode(call, 1)
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _READ_METHODS:
        return _tainted(func.value, names)
    if func.attr == "open":  # Path.open(mode), os.open(path, flags), io.open(path, mode)
        if isinstance(func.value, ast.Name) and func.value.id in ("os", "io"):
            return first is not None and _tainted(first, names) and (
                func.value.id == "os" or _read_mode(call, 1))
        return _tainted(func.value, names) and _read_mode(call, 0)
    if func.attr in _READ_FUNCTIONS:
        return first is not None and _tainted(first, names)
    return False


def store_violations() -> set[str]:
    found = set()
    for rel, tree in _sources():
        if rel == "synth/formats/store.py":
            continue
        for name, scope in _top_level(tree):
            names = _tainted_names(scope)
            if any(isinstance(n, ast.Call) and _opens_store_file(n, names)
                   for n in ast.walk(scope)):
                found.add(f"opens-store-file {rel}::{name}")
    return found


# ------------------------------------------------------------------ Dockerfile instructions
INSTRUCTIONS = ("FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK",
                "SHELL", "MAINTAINER")


def _speaks_dockerfile(text: str) -> bool:
    """A line of ``text`` starts with an instruction (``RUN ``, ``ENV A=1``...)."""
    return any(line.lstrip().startswith(f"{word} ") for line in text.splitlines()
               for word in INSTRUCTIONS)


def _compared_keywords(scope: ast.AST) -> set[int]:
    """Bare keywords compared with something (``word == "ENV"``): parsing a Dockerfile.
    A bare keyword elsewhere is left alone: ``ENV`` and ``USER`` are also variables."""
    ids = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and operand.value in INSTRUCTIONS:
                    ids.add(id(operand))
    return ids


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            ids.add(id(node.body[0].value))
    return ids


def dockerfile_violations() -> set[str]:
    """String literals (f-strings' literal parts too) that start a Dockerfile instruction,
    and instruction keywords compared with a word."""
    found = set()
    for rel, tree in _sources():
        docs = _docstrings(tree)
        for name, scope in _top_level(tree):
            compared = _compared_keywords(scope)
            for node in ast.walk(scope):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and id(node) not in docs \
                        and (id(node) in compared or _speaks_dockerfile(node.value)):
                    found.add(f"dockerfile {rel}::{name}")
    return found


# ------------------------------------------------------------------ imports
def _imports(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def verify_imports_synth() -> set[str]:
    """synth/pyramid/ imports itself relatively and nothing named ``synth``."""
    return {f"imports-synth {rel}" for rel, tree in _sources() if rel.startswith("synth/pyramid/")
            and any(m == "synth" or m.startswith("synth.") for m in _imports(tree))}


# ------------------------------------------------------------------ function-level imports
#: Function-level imports of synth modules outside synth/cli/, each with its reason.
DEFERRED_IMPORTS = frozenset({
    # libcst is an optional, heavy third-party library (a target environment may lack it):
    # only `verify --scanner libcst` loads the scanner that needs it.
    "deferred-import synth/pyramid/c0_scan.py::_scan_libcst",
    # The session's watchdog runs as a process of its own that outlives synth; docker-py is
    # loaded (and an engine handle opened) in that process only, never on synth's side,
    # where the session reaches the engine through the protocols of synth/engine/base.py.
    "deferred-import synth/record/watchdog.py::stop_container",
})


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _synth_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "synth" or a.name.startswith("synth.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or node.module == "synth" or bool(
            node.module and node.module.startswith("synth."))
    return False


def _deferred_in(node: ast.AST, where: str, inside: bool) -> Iterator[str]:
    """Imports of synth inside a function (``inside``), a ``TYPE_CHECKING`` block left out."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            continue
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _deferred_in(child, f"{where}{child.name}.", True)
        elif isinstance(child, ast.ClassDef):
            yield from _deferred_in(child, f"{where}{child.name}.", inside)
        elif inside and _synth_import(child):
            yield where.rstrip(".")
        else:
            yield from _deferred_in(child, where, inside)


def deferred_imports() -> set[str]:
    return {f"deferred-import {rel}::{name}" for rel, tree in _sources()
            if not rel.startswith("synth/cli/") for name in _deferred_in(tree, "", False)}


def _check(found: set[str]) -> None:
    found = sorted(found - EXEMPT)
    assert not found, "structure violations: " + ", ".join(found)


def test_exemptions_are_still_needed() -> None:
    found = (length_violations() | store_violations() | dockerfile_violations()
             | verify_imports_synth())
    unused = sorted(EXEMPT - found)
    assert not unused, "no longer matched, remove from EXEMPT: " + ", ".join(unused)
    unused = sorted(DEFERRED_IMPORTS - deferred_imports())
    assert not unused, "no longer matched, remove from DEFERRED_IMPORTS: " + ", ".join(unused)


def test_no_function_imports_synth_to_hide_a_dependency() -> None:
    found = sorted(deferred_imports() - DEFERRED_IMPORTS)
    assert not found, ("move these imports to the top of their module (or say in "
                       "DEFERRED_IMPORTS why not): " + ", ".join(found))


def test_functions_and_commands_are_short() -> None:
    _check(length_violations())


def test_only_the_store_opens_run_and_artifact_files() -> None:
    _check(store_violations())


def test_only_templates_speak_dockerfile() -> None:
    _check(dockerfile_violations())


def test_verify_does_not_import_synth_statically() -> None:
    _check(verify_imports_synth())


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)


def _modules(package: str, skip: tuple[str, ...] = ()) -> list[str]:
    mods = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        mod = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if not mod.startswith(skip):
            mods.append(mod)
    return mods


@pytest.mark.parametrize("package", ["synth.distill", "synth.pyramid", "synth.formats",
                                     "synth.compare"])
def test_pure_packages_do_not_load_docker(package: str) -> None:
    # tests/unit/test_store.py::test_pure_modules_do_not_load_docker checks the named pure
    # modules (model, render, diff, store, engine.base, distill.plan/load); this covers every
    # module of the pure packages, so that a new one cannot start docker-py either.
    mods = _modules(package.replace(".", "/"), skip=("synth.pyramid.probes",))
    proc = _run("import importlib, sys\n"
                f"for m in {mods!r}:\n"
                "    importlib.import_module(m)\n"
                "    assert 'docker' not in sys.modules, m\n")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("args", [
    ["--help"],
    ["task", "check", "tasks/numpy-ext"],
    ["export", "--plan", "--artifacts", "{artifacts}"],
])
def test_commands_that_need_no_engine_do_not_load_docker(args: list[str],
                                                         tmp_path: Path) -> None:
    # The engine handle is opened by the commands that use it (synth.cli.app.open_engine):
    # these never ask it, so docker-py is never imported.
    make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv")])
    argv = [a.replace("{artifacts}", str(tmp_path)) for a in args]
    proc = _run("import sys\n"
                "from synth.cli import main\n"
                f"sys.argv = ['synth', *{argv!r}]\n"
                "try:\n"
                "    main()\n"
                "except SystemExit as exc:\n"
                "    assert exc.code in (0, None), exc.code\n"
                "assert 'docker' not in sys.modules, 'docker-py was loaded'\n")
    assert proc.returncode == 0, proc.stderr


def test_command_options_are_frozen() -> None:
    """Each command builds one options object and passes it on with the settings (and the
    engine): a frozen dataclass, with no list, dict or set a callee could change."""
    from dataclasses import fields, is_dataclass

    from synth.bench.run import BenchOptions
    from synth.cli.demo import DemoOptions
    from synth.compare.load import DiffOptions
    from synth.export.artifact import ExportOptions
    from synth.record.runner import RunOptions
    from synth.verify.outcome import VerifyOptions

    for kind in (RunOptions, ExportOptions, VerifyOptions, DiffOptions, BenchOptions,
                 DemoOptions):
        assert is_dataclass(kind) and kind.__dataclass_params__.frozen, kind  # type: ignore[attr-defined]
        mutable = [f.name for f in fields(kind)
                   if str(f.type).startswith(("list[", "dict[", "set[", "Mapping", "Sequence"))]
        assert not mutable, (kind.__name__, mutable)
