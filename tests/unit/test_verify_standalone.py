"""synth/pyramid/ stands on its own: it imports nothing of synth outside itself (synth adapts
to the pyramid's types), so it runs wherever its folder is, under any package name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYRAMID_MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in (ROOT / "synth" / "pyramid").glob("*.py") if p.name != "__init__.py")


def test_there_is_something_to_import() -> None:
    assert {"synth.pyramid.runner", "synth.pyramid.runtime",
            "synth.pyramid.claims"} <= set(PYRAMID_MODULES)


@pytest.mark.parametrize("module", PYRAMID_MODULES)
def test_a_pyramid_module_imports_no_other_synth(module: str) -> None:
    code = ("import importlib, sys\n"
            f"importlib.import_module({module!r})\n"
            "leaked = sorted(m for m in sys.modules if m.startswith('synth.')\n"
            "                and not m.startswith('synth.pyramid'))\n"
            "assert not leaked, leaked\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_the_pyramid_runs_under_another_name(tmp_path: Path) -> None:
    # Its imports are relative: copied anywhere as any package, it imports alone.
    import shutil

    shutil.copytree(ROOT / "synth" / "pyramid", tmp_path / "standalone_pyramid")
    code = ("import sys; import standalone_pyramid.runner\n"
            "assert not [m for m in sys.modules if m == 'synth' or m.startswith('synth.')]\n")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_synth_task_adapts_to_the_pyramid_task(tmp_path: Path) -> None:
    from synth.formats.task import load_task
    from synth.verify.command import pyramid_task
    from tests.unit.test_verify_cmd import make_task

    task = load_task(make_task(tmp_path))
    pt = pyramid_task(task)
    assert pt.name == "hosttask" and pt.workdir == "/workspace"
    assert pt.cpu is not None and (pt.cpu.command, pt.cpu.timeout) == ("python main.py", 60)
    assert pt.gpu is None and pt.ddp is None
    assert dict(pt.not_applicable) == {"C3": "CPU only", "C4": "CPU only"}
    assert pt.c0.include is None and pt.c0.max_missing_ratio == 0.0
    assert pt.commands == ["python main.py"]


def test_a_runtime_that_cannot_host_the_probes_is_a_verify_error(tmp_path: Path) -> None:
    from synth.engine.base import ExecResult
    from synth.errors import VerifyError
    from synth.pyramid.runner import PyramidSpec
    from synth.verify.command import _pyramid

    class NoTmp:
        description = "a runtime without /tmp"

        def exec(self, argv: object, **_kw: object) -> ExecResult:
            return ExecResult(("x",), 1, "", "mktemp: no space")

        def copy_in(self, src: Path, dest: str) -> None: ...

        def copy_out(self, src: str, dest: Path) -> None: ...

    with pytest.raises(VerifyError, match="Cannot make a temporary folder"):
        _pyramid(NoTmp(), PyramidSpec(python="/p", levels=frozenset({"C1"})), lambda _m: None)


def test_c0_scans_the_repository_folder_not_the_probes_working_directory(
        tmp_path: Path) -> None:
    """A task's probes may run from ``/`` (so that the installed package, not the working
    tree, is imported): C0 still copies out only the repository's folder."""
    from synth.engine.base import ExecResult
    from synth.pyramid.runner import PyramidSpec, _prepare_scan, _Probing

    copied: list[str] = []

    class Runtime:
        description = "a fake runtime"

        def exec(self, argv: list[str], **_kw: object) -> ExecResult:
            ok = argv[:2] != ["test", "-d"] or argv[2] in ("/", "/workspace")
            return ExecResult(tuple(argv), 0 if ok else 1, "", "")

        def copy_in(self, src: Path, dest: str) -> None: ...

        def copy_out(self, src: str, dest: Path) -> None:
            copied.append(src)
            (dest / (src.rstrip("/").rsplit("/", 1)[-1] or "root")).mkdir(parents=True)

    for repo_in_runtime, want in (("/workspace", "/workspace"), (None, "/"),
                                  ("/not-there", "/")):
        copied.clear()
        spec = PyramidSpec(python="/p", workdir="/", repo_in_runtime=repo_in_runtime,
                           levels=frozenset({"C0"}))
        requests: dict[str, object] = {}
        _prepare_scan(_Probing(Runtime(), spec, lambda _m: None), {}, requests)
        assert copied == [want]
        assert "c0_names.json" in requests
