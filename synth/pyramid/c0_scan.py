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
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .c0_scope import Declared, Scope, module_matches_distribution, read_repo_text

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
    "tensorboardX": "tensorboardX",
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
    #: "try", "type_checking", "version_check", "function" (inside a def), or None
    optional: str | None = None
    in_scope: bool = True  # the file is in C0's scope (see synth.pyramid.c0_scope)

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
    #: The parsed files in C0's scope (repo-relative), and the scope itself.
    scope_files: tuple[str, ...] = field(default=())
    scope: Scope | None = None

    @property
    def modules(self) -> list[str]:
        """Every module name the environment must resolve, top-level names included (the
        ResearchEnvBench metric counts distinct top-level modules)."""
        return sorted({i.module for i in self.imports} | {i.top for i in self.imports})


def suggest_distribution(module: str) -> str:
    """The distribution usually installed for ``module`` (the maintained mapping, else the
    import name itself; see :func:`install_hint` for one that says which)."""
    return _mapped(module) or module.split(".", 1)[0].replace("_", "-")


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
            # A regular file only: a link (to a host file) or a FIFO is never read.
            if name.endswith(".py") and stat.S_ISREG(os.lstat(here / name).st_mode):
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
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.visit(node.body, why or "function")
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
    """The libcst scanner (:mod:`synth.pyramid.c0_libcst`), imported only when selected."""
    # libcst is optional (a target environment may lack it) and heavy: only --scanner libcst
    # loads it.
    from .c0_libcst import scan

    return scan(source, rel, _OPTIONAL_EXCEPTIONS)


# ------------------------------------------------------------------------------- scanning
def scan_repo(root: Path, scanner: Scanner = DEFAULT_SCANNER,
              scope: Scope | None = None) -> ScanResult:
    """Every import statement of the repo at ``root``, own modules and relative ones apart;
    each marked in or out of ``scope`` (None: every file is in scope)."""
    root = root.resolve()
    files = list(python_files(root))
    own = own_module_names(root, files)
    parse = _scan_ast if scanner == "ast" else _scan_libcst
    refs: list[ImportRef] = []
    unparsable: list[str] = []
    skipped_own = relative = lines = 0
    in_scope: list[str] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        inside = scope is None or rel in scope
        try:
            source = read_repo_text(f)
        except OSError:
            unparsable.append(rel)
            continue
        lines += source.count("\n") + (0 if source.endswith("\n") or not source else 1)
        try:
            found = parse(source, rel)
        except Exception:  # SyntaxError, libcst's ParserSyntaxError, Python 2 files
            unparsable.append(rel)
            continue
        if inside:
            in_scope.append(rel)
        for line, module, level, why in found:
            if level:
                relative += 1
            elif not module or module.split(".", 1)[0] in own or module == "__future__":
                skipped_own += module != "__future__"
            else:
                refs.append(ImportRef(rel, line, module, why, inside))
    return ScanResult(
        scanner=scanner, files=len(files), lines=lines, imports=tuple(sorted(refs)),
        own_modules=own, skipped_own=skipped_own, relative=relative,
        unparsable=tuple(unparsable), scope_files=tuple(in_scope), scope=scope,
    )


#: Import classes, in precedence order; only "required" fails C0.
IMPORT_CLASSES: tuple[str, ...] = ("out_of_scope", "extra", "guarded", "function_body",
                                   "required")
_GUARDS = frozenset({"try", "type_checking", "version_check"})


def import_class(ref: ImportRef, extra_tops: frozenset[str]) -> str:
    """The class an import statement falls in (see IMPORT_CLASSES)."""
    if not ref.in_scope:
        return "out_of_scope"
    if ref.top in extra_tops:
        return "extra"
    if ref.optional in _GUARDS:
        return "guarded"
    if ref.optional == "function":
        return "function_body"
    return "required"


def install_hint(module: str, declared: Declared | None = None) -> tuple[str, str]:
    """(distribution, where the name comes from) for a missing ``module``: the repo's own
    declaration first ("declared in setup.py"), then the maintained mapping ("mapping"),
    else the import name itself, marked "guess"."""
    top = module.split(".", 1)[0]
    mapped = _mapped(module)
    for canon, (name, where) in sorted((declared or Declared()).all_names().items()):
        if module_matches_distribution(top, canon, mapped):
            return name, f"declared in {where}"
    if mapped is not None:
        return mapped, "mapping"
    return top.replace("_", "-"), "guess"


def _mapped(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        hint = DISTRIBUTION_HINTS.get(".".join(parts[:n]))
        if hint:
            return hint
    return None


def extra_modules(tops: Iterable[str], declared: Declared) -> frozenset[str]:
    """The top-level modules that only a declared optional extra provides."""
    out = set()
    for top in tops:
        mapped = _mapped(top)
        if any(module_matches_distribution(top, c, mapped) for c in declared.required):
            continue
        if any(module_matches_distribution(top, c, mapped) for c in declared.extras):
            out.add(top)
    return frozenset(out)


@dataclass(frozen=True)
class MissingModule:
    module: str
    distribution: str
    status: str  # "missing" or "errored"
    error: str | None
    locations: tuple[str, ...]  # file:line
    optional: bool
    klass: str = "required"
    #: Where ``distribution`` comes from: "declared in <file>", "mapping", "guess".
    distribution_source: str = "guess"

    def to_json(self) -> dict[str, object]:
        return {"module": self.module, "distribution": self.distribution,
                "distribution_source": self.distribution_source,
                "status": self.status, "error": self.error, "class": self.klass,
                "locations": list(self.locations), "optional": self.optional}


@dataclass(frozen=True)
class C0Outcome:
    total: int  # required import statements in scope
    missing: int  # ... of which unresolved
    optional_total: int
    optional_missing: int
    unique_missing: tuple[MissingModule, ...]  # required
    unique_optional_missing: tuple[MissingModule, ...]  # every other class
    #: class -> {"statements": n, "missing": m}
    classes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: ResearchEnvBench: distinct top-level modules imported anywhere / missing of them.
    top_modules: int = 0
    top_missing: int = 0
    max_missing_ratio: float = 0.0

    @property
    def ratio(self) -> float:
        """synth's metric: missing / all required import statements in scope."""
        return self.missing / self.total if self.total else 0.0

    @property
    def top_ratio(self) -> float:
        """ResearchEnvBench's metric: distinct missing top-level modules / distinct imported
        top-level modules (every file, every class)."""
        return self.top_missing / self.top_modules if self.top_modules else 0.0

    @property
    def passed(self) -> bool:
        return self.ratio <= self.max_missing_ratio


def evaluate(scan: ScanResult, resolved: Mapping[str, Mapping[str, str]],
             declared: Declared | None = None, max_missing_ratio: float = 0.0) -> C0Outcome:
    """Combine the scan with the probe's verdict per module name."""
    declared = declared or Declared()

    def status(module: str) -> str:
        return str(resolved.get(module, {}).get("status", "missing"))

    extras = extra_modules({i.top for i in scan.imports}, declared)
    by_class: dict[str, list[ImportRef]] = {k: [] for k in IMPORT_CLASSES}
    for ref in scan.imports:
        by_class[import_class(ref, extras)].append(ref)
    unique = {k: _unique(refs, k, status, resolved, declared) for k, refs in by_class.items()}
    classes = {k: {"statements": len(refs),
                   "missing": sum(status(r.module) != "found" for r in refs)}
               for k, refs in by_class.items()}
    required = by_class["required"]
    others = [r for k, refs in by_class.items() if k != "required" for r in refs]
    tops = {i.top for i in scan.imports}
    return C0Outcome(
        total=len(required),
        missing=classes["required"]["missing"],
        optional_total=len(others),
        optional_missing=sum(status(r.module) != "found" for r in others),
        unique_missing=unique["required"],
        unique_optional_missing=tuple(sorted(
            (m for k, ms in unique.items() if k != "required" for m in ms),
            key=lambda m: (m.module, m.klass))),
        classes=classes,
        top_modules=len(tops),
        top_missing=sum(status(t) != "found" for t in tops),
        max_missing_ratio=max_missing_ratio,
    )


def _unique(refs: list[ImportRef], klass: str, status: Callable[[str], str],
            resolved: Mapping[str, Mapping[str, str]],
            declared: Declared) -> tuple[MissingModule, ...]:
    by_module: dict[str, list[ImportRef]] = {}
    for r in refs:
        if status(r.module) != "found":
            by_module.setdefault(r.module, []).append(r)
    out = []
    for m, rs in sorted(by_module.items()):
        dist, source = install_hint(m, declared)
        out.append(MissingModule(
            module=m, distribution=dist, status=status(m),
            error=resolved.get(m, {}).get("error"),
            locations=tuple(r.where for r in sorted(rs)), optional=klass != "required",
            klass=klass, distribution_source=source))
    return tuple(out)
