"""C0, host side: find the import statements of a repository's Python files.

Two parsers give the same answer: the stdlib :mod:`ast` (the default, several times faster;
see docs/benchmarks.md) and libcst (``scanner="libcst"``). The repository's own modules —
every package folder and module file name found in it — and relative imports are left out.
Imports that the code itself treats as optional are marked so and reported apart:

* inside ``try:`` whose handlers catch ``ImportError``, ``ModuleNotFoundError``,
  ``Exception``/``BaseException`` or everything;
* under ``if TYPE_CHECKING:`` (also ``typing.TYPE_CHECKING``);
* under ``if sys.version_info …:`` (one branch is meant for another Python).

The metric is the study's: missing import statements / all import statements (one entry per
module named, so ``import a, b`` counts two), over the required ones.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Scanner = Literal["ast", "libcst"]
DEFAULT_SCANNER: Scanner = "ast"
SCANNERS: tuple[Scanner, ...] = ("ast", "libcst")

#: Folders never scanned: VCS data, caches, virtual environments, build output.
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".tox", ".nox", ".eggs", "node_modules", "site-packages", "dist-packages", "build",
    "dist", ".venv", "venv", ".env", "env", ".ipynb_checkpoints",
})

_OPTIONAL_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "Exception",
                                  "BaseException"})

#: Import name -> the distribution that usually provides it, where the two differ.
DISTRIBUTION_HINTS: dict[str, str] = {
    "Crypto": "pycryptodome",
    "Levenshtein": "python-Levenshtein",
    "MinkowskiEngine": "MinkowskiEngine (build from source against your torch/CUDA)",
    "OpenGL": "PyOpenGL",
    "PIL": "pillow",
    "absl": "absl-py",
    "apex": "apex (NVIDIA, build from source)",
    "attr": "attrs",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "dateutil": "python-dateutil",
    "detectron2": "detectron2 (build from source)",
    "docx": "python-docx",
    "dotenv": "python-dotenv",
    "faiss": "faiss-cpu",
    "fitz": "pymupdf",
    "flash_attn": "flash-attn",
    "git": "GitPython",
    "google.protobuf": "protobuf",
    "huggingface_hub": "huggingface-hub",
    "hydra": "hydra-core",
    "jwt": "PyJWT",
    "magic": "python-magic",
    "mmcv": "mmcv",
    "mpl_toolkits": "matplotlib",
    "pkg_resources": "setuptools",
    "pptx": "python-pptx",
    "pytorch_lightning": "pytorch-lightning",
    "serial": "pyserial",
    "skimage": "scikit-image",
    "sklearn": "scikit-learn",
    "tensorboard": "tensorboard",
    "torch_geometric": "torch-geometric",
    "torch_scatter": "torch-scatter",
    "torch_sparse": "torch-sparse",
    "usb": "pyusb",
    "wandb": "wandb",
    "yaml": "pyyaml",
    "zmq": "pyzmq",
}


@dataclass(frozen=True, order=True)
class ImportRef:
    """One module named by one import statement."""

    file: str  # relative to the repository root, POSIX separators
    line: int
    module: str  # absolute dotted name as written (``from a.b import c`` -> ``a.b``)
    optional: str | None = None  # "try", "type_checking", "version_check", or None

    @property
    def top(self) -> str:
        return self.module.split(".", 1)[0]

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ScanResult:
    scanner: Scanner
    files: int
    lines: int
    imports: tuple[ImportRef, ...]  # third-party and stdlib: what the environment must resolve
    own_modules: frozenset[str]
    skipped_own: int  # statements that name the repo's own modules
    relative: int  # relative imports (always the repo's own)
    unparsable: tuple[str, ...] = field(default=())

    @property
    def modules(self) -> list[str]:
        return sorted({i.module for i in self.imports})


def suggest_distribution(module: str) -> str:
    """The distribution a user most likely has to install for ``module``."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        hint = DISTRIBUTION_HINTS.get(".".join(parts[:n]))
        if hint:
            return hint
    return parts[0].replace("_", "-")


# ------------------------------------------------------------------------------ discovery
def python_files(root: Path) -> Iterator[Path]:
    """The repository's ``.py`` files, sorted, virtual environments and caches left out."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not (here / d / "pyvenv.cfg").exists()
            and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield here / name


def own_module_names(root: Path, files: Iterable[Path]) -> frozenset[str]:
    """Names the repo defines itself: every module file stem and every folder holding one.

    Scripts put their own folder on ``sys.path`` and repos add subfolders by hand, so a name
    defined anywhere in the repo counts as its own.
    """
    names: set[str] = set()
    for f in files:
        rel = f.relative_to(root)
        if f.stem != "__init__":
            names.add(f.stem)
        names.update(part for part in rel.parts[:-1] if part.isidentifier())
    for ext in ("*.so", "*.pyd"):  # compiled modules sitting in the tree
        for so in root.rglob(ext):
            names.add(so.name.split(".", 1)[0])
    return frozenset(names)


# --------------------------------------------------------------------------- ast scanner
def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_version_check(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in ("version_info", "platform"):
            return True
    return False


def _catches_import_error(handlers: Sequence[ast.ExceptHandler]) -> bool:
    for h in handlers:
        if h.type is None:
            return True
        kinds = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        for k in kinds:
            name = k.attr if isinstance(k, ast.Attribute) else getattr(k, "id", None)
            if name in _OPTIONAL_EXCEPTIONS:
                return True
    return False


class _AstCollector:
    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.found: list[tuple[int, str, int, str | None]] = []  # line, module, level, why

    def visit(self, nodes: Iterable[ast.stmt], why: str | None) -> None:
        for node in nodes:
            self.stmt(node, why)

    def stmt(self, node: ast.stmt, why: str | None) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.found.append((node.lineno, alias.name, 0, why))
        elif isinstance(node, ast.ImportFrom):
            self.found.append((node.lineno, node.module or "", node.level, why))
        elif isinstance(node, ast.Try) or (
            hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)
        ):
            body_why = why or ("try" if _catches_import_error(node.handlers) else None)
            self.visit(node.body, body_why)
            for h in node.handlers:
                self.visit(h.body, why)
            self.visit(node.orelse, body_why)
            self.visit(node.finalbody, why)
        elif isinstance(node, ast.If):
            if _is_type_checking(node.test):
                self.visit(node.body, why or "type_checking")
                self.visit(node.orelse, why)
            elif _is_version_check(node.test):
                self.visit(node.body, why or "version_check")
                self.visit(node.orelse, why or "version_check")
            else:
                self.visit(node.body, why)
                self.visit(node.orelse, why)
        else:
            # Function and class bodies, loops, with-blocks, match cases: nested statements.
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.stmt(child, why)
                elif isinstance(child, (ast.match_case, ast.ExceptHandler)):
                    self.visit(child.body, why)


def _scan_ast(source: str, rel: str) -> list[tuple[int, str, int, str | None]]:
    tree = ast.parse(source, filename=rel)
    collector = _AstCollector(rel)
    collector.visit(tree.body, None)
    return collector.found


# ------------------------------------------------------------------------ libcst scanner
def _scan_libcst(source: str, rel: str) -> list[tuple[int, str, int, str | None]]:
    import libcst as cst
    from libcst.helpers import get_full_name_for_node
    from libcst.metadata import MetadataWrapper, PositionProvider

    def catches(handlers: Sequence[cst.ExceptHandler]) -> bool:
        for h in handlers:
            if h.type is None:
                return True
            kinds = ([e.value for e in h.type.elements] if isinstance(h.type, cst.Tuple)
                     else [h.type])
            for k in kinds:
                name = get_full_name_for_node(k) or ""
                if name.rsplit(".", 1)[-1] in _OPTIONAL_EXCEPTIONS:
                    return True
        return False

    def is_version_check(test: cst.BaseExpression) -> bool:
        found = False

        class V(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                nonlocal found
                if node.attr.value in ("version_info", "platform"):
                    found = True

        test.visit(V())
        return found

    class Collector(cst.CSTVisitor):
        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self) -> None:
            super().__init__()
            self.found: list[tuple[int, str, int, str | None]] = []
            # Statement nodes whose nested bodies are optional, and why.
            self.why: list[str | None] = [None]

        def _line(self, node: cst.CSTNode) -> int:
            return int(self.get_metadata(PositionProvider, node).start.line)

        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                name = get_full_name_for_node(alias.name) or ""
                self.found.append((self._line(node), name, 0, self.why[-1]))

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            module = get_full_name_for_node(node.module) if node.module else ""
            self.found.append((self._line(node), module or "", len(node.relative),
                               self.why[-1]))

        # try: body (and else) optional when a handler catches ImportError & co.
        def visit_Try(self, node: cst.Try) -> bool:
            outer = self.why[-1]
            inner = outer or ("try" if catches(node.handlers) else None)
            self.why.append(inner)
            node.body.visit(self)
            if node.orelse is not None:
                node.orelse.visit(self)
            self.why.pop()
            for h in node.handlers:
                h.visit(self)
            if node.finalbody is not None:
                node.finalbody.visit(self)
            return False

        def visit_If(self, node: cst.If) -> bool:
            outer = self.why[-1]
            body_why: str | None
            else_why: str | None
            name = get_full_name_for_node(node.test) or ""
            if name.rsplit(".", 1)[-1] == "TYPE_CHECKING":
                body_why, else_why = outer or "type_checking", outer
            elif is_version_check(node.test):
                body_why = else_why = outer or "version_check"
            else:
                body_why = else_why = outer
            self.why.append(body_why)
            node.body.visit(self)
            self.why.pop()
            if node.orelse is not None:
                self.why.append(else_why)
                if isinstance(node.orelse, cst.If):
                    self.visit_If(node.orelse)
                else:
                    node.orelse.visit(self)
                self.why.pop()
            return False

    module = cst.parse_module(source)
    collector = Collector()
    MetadataWrapper(module, unsafe_skip_copy=True).visit(collector)
    return collector.found


# ------------------------------------------------------------------------------- scanning
def scan_repo(root: Path, scanner: Scanner = DEFAULT_SCANNER) -> ScanResult:
    """Every import statement of the repo at ``root``, own modules and relative ones apart."""
    root = root.resolve()
    files = list(python_files(root))
    own = own_module_names(root, files)
    parse = _scan_ast if scanner == "ast" else _scan_libcst
    refs: list[ImportRef] = []
    unparsable: list[str] = []
    skipped_own = relative = lines = 0
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            source = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            unparsable.append(rel)
            continue
        lines += source.count("\n") + (0 if source.endswith("\n") or not source else 1)
        try:
            found = parse(source, rel)
        except Exception:  # SyntaxError, libcst's ParserSyntaxError, Python 2 files
            unparsable.append(rel)
            continue
        for line, module, level, why in found:
            if level:
                relative += 1
            elif not module or module.split(".", 1)[0] in own or module == "__future__":
                skipped_own += module != "__future__"
            else:
                refs.append(ImportRef(rel, line, module, why))
    return ScanResult(
        scanner=scanner, files=len(files), lines=lines, imports=tuple(sorted(refs)),
        own_modules=own, skipped_own=skipped_own, relative=relative,
        unparsable=tuple(unparsable),
    )


@dataclass(frozen=True)
class MissingModule:
    module: str
    distribution: str
    status: str  # "missing" or "errored"
    error: str | None
    locations: tuple[str, ...]  # file:line
    optional: bool

    def to_json(self) -> dict[str, object]:
        return {"module": self.module, "distribution": self.distribution,
                "status": self.status, "error": self.error,
                "locations": list(self.locations), "optional": self.optional}


@dataclass(frozen=True)
class C0Outcome:
    total: int
    missing: int
    optional_total: int
    optional_missing: int
    unique_missing: tuple[MissingModule, ...]
    unique_optional_missing: tuple[MissingModule, ...]

    @property
    def ratio(self) -> float:
        return self.missing / self.total if self.total else 0.0


def evaluate(scan: ScanResult, resolved: dict[str, dict[str, str]]) -> C0Outcome:
    """Combine the scan with the probe's verdict per module name."""
    def status(module: str) -> str:
        return resolved.get(module, {}).get("status", "missing")

    required = [i for i in scan.imports if i.optional is None]
    optional = [i for i in scan.imports if i.optional is not None]

    def unique(refs: list[ImportRef], is_optional: bool) -> tuple[MissingModule, ...]:
        by_module: dict[str, list[ImportRef]] = {}
        for r in refs:
            if status(r.module) != "found":
                by_module.setdefault(r.module, []).append(r)
        return tuple(
            MissingModule(
                module=m, distribution=suggest_distribution(m), status=status(m),
                error=resolved.get(m, {}).get("error"),
                locations=tuple(r.where for r in sorted(rs)), optional=is_optional,
            )
            for m, rs in sorted(by_module.items())
        )

    return C0Outcome(
        total=len(required),
        missing=sum(status(r.module) != "found" for r in required),
        optional_total=len(optional),
        optional_missing=sum(status(r.module) != "found" for r in optional),
        unique_missing=unique(required, False),
        unique_optional_missing=unique(optional, True),
    )
