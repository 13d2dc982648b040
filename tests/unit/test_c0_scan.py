"""C0's host-side scan: own modules, relative imports, optional imports, both parsers agree."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from synth.pyramid.c0_scan import (
    SCANNERS,
    ImportRef,
    evaluate,
    scan_repo,
    suggest_distribution,
)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(tmp_path, "src/mypkg/__init__.py", """\
        from __future__ import annotations
        import os, sys
        import numpy as np
        from . import helpers
        from .helpers import thing
        from mypkg.helpers import other
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            import pandas
        try:
            import ujson as json
        except ImportError:
            import json
        try:
            import yaml
        except (ValueError, ModuleNotFoundError):
            yaml = None
        try:
            import cv2
        except RuntimeError:
            cv2 = None
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        """)
    write(tmp_path, "src/mypkg/helpers.py", """\
        def f():
            import sklearn.cluster
            class K:
                from PIL import Image
            return sklearn
        thing = other = 1
        """)
    write(tmp_path, "scripts/train.py", """\
        import utils
        import torch.nn as nn
        import typing
        if typing.TYPE_CHECKING:
            from torch import Tensor
        """)
    write(tmp_path, "scripts/utils.py", "import wandb\n")
    write(tmp_path, "py2.py", "print 'hello'\n")
    write(tmp_path, ".venv/lib/site.py", "import never_scanned\n")
    write(tmp_path, "build/lib/x.py", "import never_scanned\n")
    (tmp_path / "env2").mkdir()
    (tmp_path / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    write(tmp_path, "env2/lib/y.py", "import never_scanned\n")
    return tmp_path


def modules(refs: tuple[ImportRef, ...], optional: bool | None = None) -> set[str]:
    return {r.module for r in refs
            if optional is None or (r.optional is not None) == optional}


@pytest.mark.parametrize("scanner", SCANNERS)
def test_scan_finds_imports_and_leaves_own_modules_out(repo: Path, scanner: str) -> None:
    scan = scan_repo(repo, scanner)  # type: ignore[arg-type]
    assert "never_scanned" not in scan.modules
    assert scan.unparsable == ("py2.py",)
    # Own: mypkg (a package under src/), helpers, utils (a sibling script module).
    assert {"mypkg", "mypkg.helpers", "utils", "helpers"}.isdisjoint(scan.modules)
    assert scan.relative == 2
    assert scan.skipped_own == 2  # `from mypkg.helpers import other`, `import utils`
    assert modules(scan.imports, optional=False) == {
        "os", "sys", "numpy", "typing", "json", "torch.nn",
        "cv2", "wandb",  # cv2: `except RuntimeError` does not make it optional
    }
    assert modules(scan.imports, optional=True) == {
        "pandas", "ujson", "yaml", "tomllib", "tomli", "torch", "sklearn.cluster", "PIL",
    }
    why = {r.module: r.optional for r in scan.imports}
    assert why["pandas"] == "type_checking"
    assert why["torch"] == "type_checking"
    assert why["ujson"] == "try"
    assert why["yaml"] == "try"
    assert why["tomli"] == "version_check"
    assert why["json"] is None  # the fallback in the handler is required
    assert why["sklearn.cluster"] == why["PIL"] == "function"  # runs only when called
    lines = {r.module: r.where for r in scan.imports}
    assert lines["numpy"] == "src/mypkg/__init__.py:3"
    assert lines["sklearn.cluster"] == "src/mypkg/helpers.py:2"


def test_ast_and_libcst_agree(repo: Path) -> None:
    a, b = scan_repo(repo, "ast"), scan_repo(repo, "libcst")
    assert a.imports == b.imports
    assert (a.files, a.lines, a.relative, a.skipped_own) == (
        b.files, b.lines, b.relative, b.skipped_own)


def test_metric_counts_statements_and_lists_unique_missing(repo: Path) -> None:
    scan = scan_repo(repo)
    found = {"os", "sys", "typing", "json", "numpy", "torch.nn", "wandb"}
    resolved = {m: {"status": "found" if m in found else "missing"} for m in scan.modules}
    resolved["PIL"] = {"status": "errored", "error": "ImportError: libjpeg"}
    out = evaluate(scan, resolved)
    assert out.total == 9  # `typing` is imported twice
    assert out.missing == 1  # cv2
    assert out.ratio == pytest.approx(1 / 9)
    assert not out.passed  # max_missing_ratio defaults to 0
    assert evaluate(scan, resolved, max_missing_ratio=0.2).passed
    by = {m.module: m for m in out.unique_missing}
    assert set(by) == {"cv2"}
    assert (by["cv2"].distribution, by["cv2"].distribution_source) == ("opencv-python",
                                                                       "mapping")
    opt = {m.module: m for m in out.unique_optional_missing}
    assert set(opt) == {"pandas", "ujson", "yaml", "tomllib", "tomli", "torch",
                        "sklearn.cluster", "PIL"}
    assert opt["PIL"].distribution == "pillow"
    assert opt["PIL"].status == "errored"
    assert opt["PIL"].klass == "function_body"
    assert opt["yaml"].klass == "guarded"
    assert opt["sklearn.cluster"].distribution == "scikit-learn"
    assert opt["sklearn.cluster"].locations == ("src/mypkg/helpers.py:2",)
    assert out.classes["function_body"] == {"statements": 2, "missing": 2}


def test_empty_repo_has_no_imports(tmp_path: Path) -> None:
    out = evaluate(scan_repo(tmp_path), {})
    assert (out.total, out.missing, out.ratio) == (0, 0, 0.0)


@pytest.mark.parametrize(("module", "dist"), [
    ("cv2", "opencv-python"), ("yaml", "pyyaml"), ("skimage.io", "scikit-image"),
    ("bs4", "beautifulsoup4"), ("google.protobuf.message", "protobuf"),
    ("some_pkg.sub", "some-pkg"),
])
def test_distribution_suggestions(module: str, dist: str) -> None:
    assert suggest_distribution(module) == dist


@pytest.mark.timeout(60)
def test_the_host_scan_reads_regular_repository_files_only(tmp_path: Path) -> None:
    """The repository C0 reads on the host is the agent's (an artifact's source/): a .py
    that is a link (to a host file) or a FIFO is never read, and a setup.cfg, pyproject.toml
    or requirements file that is not UTF-8, not a file, or full of `%` is no traceback."""
    import os

    from synth.pyramid.c0_scan import python_files
    from synth.pyramid.c0_scope import declared_distributions

    host = tmp_path / "host-secret.py"
    host.write_text("import host_secret_module\n")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("import numpy\n")
    (repo / "evil.py").symlink_to(host)
    os.mkfifo(repo / "block.py")
    (repo / "pyproject.toml").write_bytes(b"[project]\ndependencies = ['\xff']\n")
    (repo / "setup.cfg").write_text("[options]\ninstall_requires = torch%(x)s\n")
    os.mkfifo(repo / "requirements.txt")
    assert [p.name for p in python_files(repo)] == ["__init__.py"]
    report = scan_repo(repo)
    assert "host_secret_module" not in str(report)
    assert set(declared_distributions(repo).required) == {"torch"}  # setup.cfg, `%` as text
