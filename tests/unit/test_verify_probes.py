"""Probe scripts: stdlib-only, Python 3.8 syntax, one JSON object out; C2's judgement."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synth.pyramid.claims import Evidence, check_claims
from synth.pyramid.runner import (
    PROBE_SCRIPTS,
    PROBES_DIR,
    _arch_supported,
    _torch_version,
    c2_verdict,
    cuda_capability,
    parse_probe_output,
)

STDLIB = set(sys.stdlib_module_names)
#: Every script in synth/pyramid/probes/: the pyramid's (PROBE_SCRIPTS) and the session's
#: interpreter probe (python_env.py), which synth passes to ``python -c`` in the container.
ALL_PROBES = sorted(p.name for p in PROBES_DIR.glob("*.py") if p.name != "__init__.py")


def test_every_probe_is_in_the_one_folder() -> None:
    assert set(PROBE_SCRIPTS) | {"python_env.py"} <= set(ALL_PROBES)
    root = Path(__file__).resolve().parents[2]
    elsewhere = [p for p in root.glob("synth/**/probes/*.py")
                 if p.parent != root / "synth" / "pyramid" / "probes"]
    assert not elsewhere, elsewhere


@pytest.mark.parametrize("name", ALL_PROBES)
def test_probe_is_py38_and_stdlib_only(name: str) -> None:
    source = (PROBES_DIR / name).read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    # torch is imported by the GPU probes only inside functions run where it exists.
    assert imported - STDLIB <= {"torch"}, imported - STDLIB


def run_probe(name: str, *args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, str(PROBES_DIR / name), *args],
                         capture_output=True, text=True, check=True, timeout=300)
    data = parse_probe_output(out.stdout)
    assert data is not None, out.stdout
    return data


def test_c0_resolver(tmp_path: Path) -> None:
    names = tmp_path / "names.json"
    names.write_text(json.dumps(["json", "os.path", "xml.etree.ElementTree",
                                 "no_such_module_xyz", "json.no_such_sub"]))
    data = run_probe("c0_resolve.py", str(names))
    res = data["results"]
    assert isinstance(res, dict)
    assert res["json"]["status"] == res["os.path"]["status"] == "found"
    assert res["xml.etree.ElementTree"]["status"] == "found"
    assert res["no_such_module_xyz"]["status"] == "missing"
    assert res["json.no_such_sub"]["status"] == "missing"


def test_c0_resolver_reports_a_parent_that_raises(tmp_path: Path) -> None:
    pkg = tmp_path / "boom"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('broken at import')\n")
    names = tmp_path / "names.json"
    names.write_text(json.dumps(["boom.sub"]))
    out = subprocess.run([sys.executable, str(PROBES_DIR / "c0_resolve.py"), str(names)],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    data = parse_probe_output(out.stdout)
    assert data is not None
    assert data["results"]["boom.sub"]["status"] == "errored"
    assert "broken at import" in data["results"]["boom.sub"]["error"]


def test_facts_probe(tmp_path: Path) -> None:
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"paths": [sys.executable, "/no/such/python"],
                               "interpreters": [sys.executable]}))
    data = run_probe("facts.py", str(req))
    assert data["paths"] == {sys.executable: True, "/no/such/python": False}
    interp = data["interpreters"][sys.executable]  # type: ignore[index]
    assert interp["ok"] and interp["version"].startswith(f"{sys.version_info[0]}.")
    assert "count" in data["gpus"]  # type: ignore[operator]


def test_torchs_own_version_reaches_c5_with_its_local_part(tmp_path: Path) -> None:
    """PyPI's torch wheels say ``2.15.0`` in their metadata (an index takes no local
    versions) while ``torch.__version__`` says ``2.15.0+cu132``: an agent that claims what
    torch told it is right, and C5 reads torch/version.py to see so (without importing)."""
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.15.0+cu132'\n"
        "cuda: Optional[str] = '13.2'\nhip: Optional[str] = None\n")
    (site / "torch-2.15.0.dist-info").mkdir()
    (site / "torch-2.15.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\n")
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"distributions": ["torch"]}))
    out = subprocess.run([sys.executable, str(PROBES_DIR / "facts.py"), str(req)],
                         capture_output=True, text=True, check=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(site)})
    facts = parse_probe_output(out.stdout)
    assert facts is not None, out.stdout
    assert facts["distributions"]["torch"] == "2.15.0"
    assert facts["gpu_frameworks"]["torch"] == {"cuda": "13.2", "hip": None,
                                                "version": "2.15.0+cu132"}
    assert _torch_version(facts) == "2.15.0+cu132"
    ev = Evidence(torch_version=_torch_version(facts), distributions=facts["distributions"])
    told = {c.field: c.verdict for c in check_claims({"torch_version": "2.15.0+cu132"}, ev).checks}
    assert told["torch_version"] == "true"
    wrong = {c.field: c.verdict for c in check_claims({"torch_version": "2.15.0+cpu"}, ev).checks}
    assert wrong["torch_version"] == "hallucination"
    # without torch/version.py (or without torch) the metadata's version stands
    assert _torch_version({"distributions": {"torch": "2.15.0"}}) == "2.15.0"
    assert _torch_version({"distributions": {"torch": None},
                           "gpu_frameworks": {"torch": {"version": "2.15.0"}}}) is None


def test_framework_probe_without_frameworks_here() -> None:
    data = run_probe("framework.py")
    assert set(data["frameworks"]) == {"torch", "jax", "tensorflow", "cupy"}  # type: ignore[call-overload]


@pytest.mark.parametrize(("cap", "archs", "ok"), [
    ("9.0", ["sm_80", "sm_90"], True),
    ("8.6", ["sm_80"], True),          # same major, lower minor cubin runs
    ("9.0", ["sm_80", "sm_86"], False),
    ("9.0", ["sm_80", "compute_80"], True),  # PTX JIT
    ("10.0", ["sm_90", "sm_100"], True),
    ("12.0", ["sm_90", "sm_100"], False),
])
def test_arch_support(cap: str, archs: list[str], ok: bool) -> None:
    assert _arch_supported(cap, archs) is ok


def torch_fw(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "installed": True, "ok": True, "version": "2.11.0+cu130", "cuda": "13.0",
        "cuda_available": True, "device_count": 1, "arch_list": ["sm_90", "sm_100"],
        "devices": [{"index": 0, "name": "NVIDIA H200", "capability": "9.0"}]}
    base.update(kw)
    return base


def c2(torch: dict[str, object], driver_cuda: str = "13.0") -> tuple[bool, list[str]]:
    ok, problems, _ = c2_verdict({
        "driver": {"version": "580.65", "cuda": driver_cuda},
        "frameworks": {"torch": torch, "jax": {"installed": False}}})
    return ok, problems


def test_c2_verdicts() -> None:
    assert c2(torch_fw()) == (True, [])
    ok, problems = c2(torch_fw(), driver_cuda="12.4")
    assert not ok and "built for CUDA 13.0" in problems[0]
    ok, problems = c2(torch_fw(arch_list=["sm_80"]))
    assert not ok and "not in torch's arch list" in problems[0]
    ok, problems = c2(torch_fw(cuda=None, cuda_available=False, version="2.13.0+cpu"))
    assert not ok and any("CPU-only build" in p for p in problems)
    ok, problems, _ = c2_verdict({"driver": {}, "frameworks": {"torch": {"installed": False}}})
    assert not ok and "no GPU framework installed" in problems[0]
    assert c2(torch_fw(), driver_cuda="13.1")[0]  # minor-version compatibility


def test_cuda_capability_from_facts() -> None:
    cpu = {"gpu_frameworks": {"torch": {"cuda": None, "hip": None}, "jax": False,
                              "jax_cuda": False, "tensorflow": False, "cupy": False}}
    capable, note, torch_cuda = cuda_capability(cpu)
    assert capable is False and "CPU-only" in note and torch_cuda is None
    gpu = {"gpu_frameworks": {**cpu["gpu_frameworks"], "torch": {"cuda": "13.0"}}}
    assert cuda_capability(gpu)[0] is True
    tf = {"gpu_frameworks": {**cpu["gpu_frameworks"], "torch": None, "tensorflow": True}}
    assert cuda_capability(tf)[0] is None
    assert cuda_capability({})[0] is None


def test_import_check_names_the_raising_module_and_its_line(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text("import json\n")
    (pkg / "bad.py").write_text("import json\n\n"
                                "raise RuntimeError('operator nms does not exist')\n")
    (pkg / "slow.py").write_text("import time\ntime.sleep(30)\n")
    (pkg / "gpu.py").write_text("import os\nassert os.environ['CUDA_VISIBLE_DEVICES'] == ''\n")
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"modules": ["pkg.good", "pkg.bad", "pkg.slow", "pkg.gpu",
                                           "pkg.nope"], "timeout": 2, "total_timeout": 60}))
    out = subprocess.run([sys.executable, str(PROBES_DIR / "import_check.py"), str(req)],
                         capture_output=True, text=True, check=True, cwd=tmp_path, timeout=120)
    data = parse_probe_output(out.stdout)
    assert data is not None
    res = {r["module"]: r for r in data["results"]}
    assert res["pkg.good"]["ok"] is True
    assert res["pkg.gpu"]["ok"] is True  # the GPU is hidden
    bad = res["pkg.bad"]
    assert (bad["ok"], bad["error_class"]) == (False, "RuntimeError")
    assert bad["message"] == "operator nms does not exist"
    assert bad["where"] == f"{pkg / 'bad.py'}:3"
    assert res["pkg.slow"]["error_class"] == "Timeout"
    assert res["pkg.nope"]["error_class"] == "ModuleNotFoundError"
    assert res["pkg.nope"]["missing_name"] == "pkg.nope"
    assert set(data["pip_check"]) == {"ran", "exit_code", "output"}


def test_an_import_failing_on_an_optional_extra_does_not_fail_c0i() -> None:
    from synth.pyramid.runner import classify_import

    extra = {"module": "pkg.io", "ok": False, "error_class": "ModuleNotFoundError",
             "message": "No module named 'h5py'", "missing_name": "h5py"}
    assert classify_import(extra, frozenset({"h5py"}))["optional"] == "extra"
    assert "optional" not in classify_import(extra, frozenset({"open3d"}))
    raising = {**extra, "error_class": "RuntimeError", "missing_name": None}
    assert "optional" not in classify_import(raising, frozenset({"h5py"}))


def test_what_no_environment_provides_does_not_fail_c0i(tmp_path: Path) -> None:
    """C0i on the host runtime, on the two patterns of real libraries: an ImportError of its
    own raised while handling a missing extra's module (POT's ot.dr), and a setup.py helper
    importing the file beside it by a bare name (POT's ot.helpers.openmp_helpers). A
    missing module of the package itself (a native extension that was not built) still
    fails, bare or dotted, as does an ImportError with no missing module behind it."""
    from synth.engine.host import HostRuntime
    from synth.pyramid.runner import PyramidSpec, run_pyramid

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nversion = "1"\n'
        '[project.optional-dependencies]\ndr = ["autograd"]\n')
    pkg = tmp_path / "pkg"
    (pkg / "helpers").mkdir(parents=True)
    for rel, text in {
        "__init__.py": "",
        "dr.py": "try:\n    import autograd.numpy\nexcept ImportError:\n"
                 "    raise ImportError('Missing dependency: pip install pkg[dr]')\n",
        "plain.py": "try:\n    import autograd\nexcept ImportError:\n"
                    "    raise ImportError('no autograd') from None\n",
        "fast.py": "from pkg import _ext\n",
        "bare.py": "import _ext\n",
        "vague.py": "raise ImportError('this platform is not supported')\n",
        "helpers/__init__.py": "",
        "helpers/openmp.py": "from pre_build import compile_test\n",
        "helpers/pre_build.py": "compile_test = None\n",
    }.items():
        (pkg / rel).write_text(text)
    spec = PyramidSpec(python=sys.executable, repo_dir=tmp_path, workdir=str(tmp_path),
                       gpu_access="none", levels=frozenset({"C0i"}))
    c0i = run_pyramid(HostRuntime(Path(sys.executable)), spec).get("C0i")
    assert c0i is not None
    res = {r["module"]: r for r in c0i.details["results"]}
    assert res["pkg.dr"]["missing_module"] == "autograd"  # the cause, not the message
    assert res["pkg.dr"]["optional"] == res["pkg.plain"]["optional"] == "extra"
    assert res["pkg.helpers.openmp"]["optional"] == "script"
    assert sorted(r["module"] for r in c0i.details["failed"]) == ["pkg.bare", "pkg.fast",
                                                                  "pkg.vague"]
    assert res["pkg"]["ok"] is True and res["pkg.helpers.pre_build"]["ok"] is True
    assert c0i.status == "fail"
    # Without the three the package's own fault, the level passes.
    for name in ("fast", "bare", "vague"):
        (pkg / f"{name}.py").unlink()
    c0i = run_pyramid(HostRuntime(Path(sys.executable)), spec).get("C0i")
    assert c0i is not None and c0i.status == "pass", c0i


def test_session_interpreter_probe_loads_from_the_probes_folder() -> None:
    from synth.record.snapshot import probe_source

    assert probe_source() == (PROBES_DIR / "python_env.py").read_text(encoding="utf-8")
