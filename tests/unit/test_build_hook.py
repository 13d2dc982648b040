"""The wheel's build hook (hatch_build.py) and its list of modules to compile, read as text:
the hook imports hatchling, which only a build has. Compiling and testing the result is
./dev test's pass on the built wheel (SYNTH_TEST_COMPILED, tests/conftest.py)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import msgspec
from compiled_core import compile_list, module_name

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_compiles_with_the_mypy_the_lock_pins() -> None:
    hook = ast.parse((ROOT / "hatch_build.py").read_text())
    (pin,) = [node.value.value for node in ast.walk(hook)
              if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
              and any(isinstance(t, ast.Name) and t.id == "MYPY" for t in node.targets)]
    locked = re.search(r"^mypy==(\S+) ", (ROOT / "requirements-dev.lock").read_text(), re.M)
    assert locked is not None
    assert pin == f"mypy=={locked[1]}"


def test_every_compiled_module_is_one_mypyc_compiles_as_written() -> None:
    # docs/architecture.md, "The compiled core": no msgspec Struct, no generic class.
    modules = compile_list()
    assert modules and len(set(modules)) == len(modules)
    for rel in modules:
        assert (ROOT / rel).is_file() and rel.startswith("synth/"), rel
        name = module_name(rel)
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if not isinstance(cls, type) or cls.__module__ != name:
                continue
            assert not issubclass(cls, msgspec.Struct), f"{name}.{cls.__qualname__}: a Struct"
            assert not getattr(cls, "__parameters__", ()), f"{name}.{cls.__qualname__}: generic"


def test_the_rule_finds_the_classes_it_names() -> None:
    # The two kinds that keep a module off the list, where synth has them.
    from synth.formats.export_report import ExportReport
    from synth.formats.store import FileKind

    assert issubclass(ExportReport, msgspec.Struct)
    assert FileKind.__parameters__
