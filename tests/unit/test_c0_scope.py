"""C0's scope, the repo's declared distributions, import classes and install hints."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synth.pyramid.c0_scan import evaluate, install_hint, scan_repo
from synth.pyramid.c0_scope import (
    Declared,
    declared_distributions,
    import_check_modules,
    matches,
    module_name,
    packages,
    requirement_name,
    resolve_scope,
)


def write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(tmp_path, "setup.py", """\
        from setuptools import setup
        EXTRAS = {"io": ["h5py>=3"], "viz": ["open3d"]}
        setup(name="x", install_requires=["numpy", "foo-graphql==1.0"], extras_require=EXTRAS)
        """)
    write(tmp_path, "requirements-demo.txt", "flask\n# comment\n-r requirements.txt\n")
    write(tmp_path, "requirements.txt", "numpy\ngit+https://h/x.git#egg=gitdep\n")
    write(tmp_path, "mypkg/__init__.py", "import numpy\nimport foo\n")
    write(tmp_path, "mypkg/io.py", "import h5py\n")
    write(tmp_path, "mypkg/lazy.py", "def f():\n    import matplotlib\n")
    write(tmp_path, "mypkg/tests/test_x.py", "import pytest\n")
    write(tmp_path, "demo_app/server.py", "import flask\n")
    write(tmp_path, "training/train.py", "import wandb\n")
    write(tmp_path, "run.py", "import helpers\nimport cv2\nif __name__ == '__main__':\n    pass\n")
    write(tmp_path, "helpers.py", "import yaml\n")
    write(tmp_path, "docs/conf.py", "import sphinx\n")
    return tmp_path


def test_globs_cross_folders() -> None:
    assert matches("a/tests/b/c.py", ["*/tests/*"])
    assert matches("demo_app/x.py", ["demo*/*"])
    assert not matches("mypkg/core.py", ["tests/*", "*/tests/*"])


def test_default_scope_is_packages_and_entrypoint_files(repo: Path) -> None:
    scope = resolve_scope(repo, None, None, ["python run.py --steps 3"])
    assert scope.origin == "default"
    assert scope.entrypoints == ("run.py",)
    assert set(scope.include) == {"mypkg/*", "run.py", "helpers.py"}  # run.py imports helpers
    inside = {rel for rel in ("mypkg/io.py", "mypkg/tests/test_x.py", "demo_app/server.py",
                              "training/train.py", "run.py", "helpers.py", "docs/conf.py")
              if rel in scope}
    assert inside == {"mypkg/io.py", "run.py", "helpers.py"}
    whole = resolve_scope(repo / "docs", None, None, [])
    assert whole.include == ("*",)  # no packages, no entrypoints: the whole repo


def test_an_entrypoint_under_examples_is_in_scope_with_what_it_imports(repo: Path) -> None:
    # seen on tensorly: the probe ran examples/regression/plot.py, whose own `import
    # matplotlib` the default exclude had classed out of scope; C0 passed, C1 failed on it
    write(repo, "examples/regression/plot.py", "import matplotlib.pyplot\nimport util\n")
    write(repo, "examples/regression/util.py", "import scipy\n")
    write(repo, "examples/other.py", "import seaborn\n")
    scope = resolve_scope(repo, None, None, ["python examples/regression/plot.py"])
    assert "examples/regression/plot.py" in scope and "examples/regression/util.py" in scope
    assert "examples/other.py" not in scope and "mypkg/tests/test_x.py" not in scope
    found = scan_repo(repo, scope=scope)
    assert {i.module for i in found.imports if i.in_scope} >= {"matplotlib.pyplot", "scipy"}


def test_task_scope_replaces_the_default(repo: Path) -> None:
    scope = resolve_scope(repo, ["training/*"], [], [])
    assert scope.origin == "task"
    assert "training/train.py" in scope and "mypkg/io.py" not in scope


def test_declared_distributions(repo: Path) -> None:
    d = declared_distributions(repo)
    assert set(d.required) == {"numpy", "foo-graphql", "gitdep"}
    assert {c: (e, w) for c, (_n, e, w) in d.extras.items()} == {
        "h5py": ("io", "setup.py"), "open3d": ("viz", "setup.py"),
        "flask": ("demo", "requirements-demo.txt")}
    assert requirement_name("torch==2.3.0+cpu ; python_version>'3'") == "torch"
    assert requirement_name("--index-url https://x") is None


def test_poetry_and_dependency_groups_are_declarations(tmp_path: Path) -> None:
    """poetry's tables and PEP 735 groups: an extra's or a group's import is optional."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "lamatrix"\n'
        '[tool.poetry.dependencies]\npython = "^3.9"\nnumpy = "^1.26"\n'
        'astropy = { version = "^6", optional = true }\n'
        'emcee = { version = "^3", optional = true }\n'
        '[tool.poetry.extras]\nffi = ["astropy"]\n'
        '[tool.poetry.group.docs.dependencies]\nsphinx = "^7"\n'
        '[tool.poetry.dev-dependencies]\npytest = "^8"\n'
        '[dependency-groups]\nlint = ["ruff>=0.6", { include-group = "docs" }]\n')
    d = declared_distributions(tmp_path)
    assert set(d.required) == {"numpy"}
    assert {c: e for c, (_n, e, _w) in d.extras.items()} == {
        "astropy": "ffi", "sphinx": "docs", "pytest": "dev", "ruff": "lint",
        "emcee": "optional"}


def test_classes_metrics_and_hints(repo: Path) -> None:
    declared = declared_distributions(repo)
    scope = resolve_scope(repo, None, None, ["python run.py"])
    scan = scan_repo(repo, scope=scope)
    found = {"numpy"}
    resolved = {m: {"status": "found" if m in found else "missing"} for m in scan.modules}
    out = evaluate(scan, resolved, declared)
    by = {m.module: m for m in (*out.unique_missing, *out.unique_optional_missing)}
    assert by["h5py"].klass == "extra"  # io extra, in the package
    assert by["matplotlib"].klass == "function_body"
    assert by["flask"].klass == by["wandb"].klass == by["sphinx"].klass == "out_of_scope"
    assert {m.module for m in out.unique_missing} == {"foo", "cv2", "yaml"}
    # The repo declares foo-graphql: never "install foo".
    assert (by["foo"].distribution, by["foo"].distribution_source) == (
        "foo-graphql", "declared in setup.py")
    assert (by["cv2"].distribution, by["cv2"].distribution_source) == ("opencv-python",
                                                                       "mapping")
    assert out.classes["required"] == {"statements": 4, "missing": 3}
    assert out.ratio == pytest.approx(3 / 4)
    # ResearchEnvBench: distinct top-level modules, every file and class.
    assert out.top_modules == 11  # setup.py's setuptools too
    assert out.top_missing == 10
    assert out.top_ratio == pytest.approx(10 / 11)


def test_install_hint_marks_a_guess() -> None:
    assert install_hint("somelib.sub") == ("somelib", "guess")
    assert install_hint("yaml", Declared(required={"pyyaml": ("PyYAML", "setup.py")})) == (
        "PyYAML", "declared in setup.py")


def test_import_check_modules(repo: Path) -> None:
    write(repo, "src/other/__init__.py")
    write(repo, "src/other/__main__.py", "print('run')\n")
    write(repo, "scripts/tool.py", "if __name__ == '__main__':\n    pass\n")
    files = ["mypkg/__init__.py", "mypkg/io.py", "run.py", "helpers.py",
             "src/other/__init__.py", "src/other/__main__.py", "scripts/tool.py"]
    assert module_name(repo, "mypkg/io.py") == "mypkg.io"
    assert module_name(repo, "src/other/__init__.py") == "other"
    # helpers.py has no __main__ guard (importing it runs it); scripts/ is no package.
    assert import_check_modules(repo, files) == ["mypkg", "mypkg.io", "other", "run"]


def test_a_python_project_in_a_subfolder_is_a_package_root(tmp_path: Path) -> None:
    # cocoapi keeps its Python package in PythonAPI/ (PythonAPI/setup.py): C0i said "no
    # importable module of the repo in C0's scope" and no task field could change that.
    repo = tmp_path / "repo"
    write(repo, "PythonAPI/setup.py", "from setuptools import setup\nsetup()\n")
    write(repo, "PythonAPI/pycocotools/__init__.py")
    write(repo, "PythonAPI/pycocotools/coco.py", "import numpy\n")
    write(repo, "LuaAPI/init.lua")
    write(repo, "examples/demo/setup.py")  # excluded folders hold no package root
    write(repo, "examples/demo/pkg/__init__.py")
    write(repo, "build/lib/setup.py")
    write(repo, "build/lib/gen/__init__.py")
    assert packages(repo) == ["PythonAPI/pycocotools"]
    scope = resolve_scope(repo, None, None)
    assert "PythonAPI/pycocotools/coco.py" in scope
    assert module_name(repo, "PythonAPI/pycocotools/coco.py") == "pycocotools.coco"
    assert import_check_modules(repo, ["PythonAPI/pycocotools/__init__.py",
                                       "PythonAPI/pycocotools/coco.py",
                                       "PythonAPI/setup.py"]) == ["pycocotools",
                                                                  "pycocotools.coco"]
