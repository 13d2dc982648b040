"""Run the pyramid on one runtime (a container or the host) and return a :class:`Report`.

The probe scripts (and the JSON requests they read) are staged on the host, then copied into
a fresh temporary folder of the runtime with ``copy_in`` — only now, after the agent is done.
Every probe and task command runs with the target interpreter's bin folder first on ``PATH``
and the task's ``probes.workdir`` as working directory.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import c0_scan, c0_scope
from .claims import (
    BadClaims,
    Claims,
    Evidence,
    check_claims,
    claimed_distributions,
    claimed_native_modules,
    claimed_paths,
)
from .levels import GpuAccess, gate
from .result import LEVELS, Level, LevelResult, Report
from .runtime import ExecOutcome as ExecResult
from .runtime import PyramidTask, Runtime, RuntimeFailure

PROBES_DIR = Path(__file__).resolve().parent / "probes"
PROBE_SCRIPTS = ("c0_resolve.py", "import_check.py", "facts.py", "framework.py", "kernel.py",
                 "ddp.py")
#: C0i: seconds per module import, and for the whole probe.
IMPORT_TIMEOUT = 120
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TAIL = 3000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PyramidSpec:
    """What to verify and how; built by ``synth verify`` from a run, an artifact or a task."""

    #: The target interpreter, as a path inside the runtime.
    python: str
    task: PyramidTask | None = None
    #: Working directory for probes and task commands (defaults to the task's probes.workdir).
    workdir: str | None = None
    #: A host copy of the repository for C0's scan; None: copied out of the runtime.
    repo_dir: Path | None = None
    #: Where the repository is in the runtime, copied out for C0's scan when there is no
    #: host copy (a task's probes may run elsewhere, even from ``/``); None: the working
    #: directory.
    repo_in_runtime: str | None = None
    #: The agent's claims; :class:`~synth.pyramid.claims.BadClaims` says why its claims.json
    #: cannot be used (C5 fails with it).
    claims: Claims = None
    levels: frozenset[Level] = frozenset(LEVELS)
    gpu_access: GpuAccess = "probe"
    scanner: c0_scan.Scanner = c0_scan.DEFAULT_SCANNER
    target: Mapping[str, Any] = field(default_factory=dict)
    probe_timeout: int = 600
    #: Values never shown in a level's reason or details (an agent's secrets: ``***``).
    redact: tuple[str, ...] = ()

    @property
    def cwd(self) -> str:
        if self.workdir:
            return self.workdir
        return self.task.workdir if self.task else "/workspace"


def _tail(text: str) -> str:
    return text[-TAIL:]


#: Lines of an entrypoint's own output a failing level's reason quotes.
WHY_LINES = 3
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def redacted(text: str, secrets: Sequence[str]) -> str:
    for value in secrets:
        if value:
            text = text.replace(value, "***")
    return text


def why(info: Mapping[str, Any], secrets: Sequence[str] = ()) -> str:
    """The last lines a failing command printed (stderr, else stdout), one line, without
    control characters or secrets: what it said about its failure (an assertion, a CUDA
    error), for the level's reason."""
    for key in ("stderr_tail", "stdout_tail"):
        lines = [ln.strip() for ln in _CONTROL.sub("", str(info.get(key) or "")).splitlines()
                 if ln.strip()]
        if lines:
            return redacted(" | ".join(lines[-WHY_LINES:]), secrets)[-400:]
    return ""


def parse_probe_output(stdout: str) -> dict[str, Any] | None:
    """The probe's JSON object: the last stdout line that parses as one."""
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


def _exec_summary(res: ExecResult) -> dict[str, Any]:
    return {"argv": list(res.argv), "exit_code": res.exit_code, "timed_out": res.timed_out,
            "stdout_tail": _tail(res.stdout), "stderr_tail": _tail(res.stderr)}


class _Probing:
    """One verification pass: the staged probes, the environment, and the results so far."""

    def __init__(self, runtime: Runtime, spec: PyramidSpec, progress: Progress) -> None:
        self.rt = runtime
        self.spec = spec
        self.progress = progress
        self.remote_dir = ""
        self.env: dict[str, str] = {}
        self.facts: dict[str, Any] | None = None
        self.facts_exec: ExecResult | None = None
        self.framework: dict[str, Any] | None = None
        self.done: dict[Level, LevelResult] = {}
        self.scan: c0_scan.ScanResult | None = None
        self.scan_seconds = 0.0
        self.declared = c0_scope.Declared()
        self.import_modules: list[str] = []
        #: Top-level modules only an optional extra of the repo provides.
        self.extra_tops: frozenset[str] = frozenset()
        #: C0i's modules -> the stems of the ``.py`` files beside each.
        self.beside: dict[str, frozenset[str]] = {}
        #: C5: module -> its import, for each compiled extension the claims name.
        self.native_imports: dict[str, Any] = {}

    # ------------------------------------------------------------------ staging
    def stage(self, requests: Mapping[str, Any]) -> None:
        with tempfile.TemporaryDirectory(prefix="synth-probes-") as tmp:
            staging = Path(tmp) / "probes"
            staging.mkdir()
            for name in PROBE_SCRIPTS:
                (staging / name).write_bytes((PROBES_DIR / name).read_bytes())
            for name, data in requests.items():
                (staging / name).write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
            made = self.rt.exec(["mktemp", "-d", "/tmp/synth-verify.XXXXXX"])
            if not made.ok:
                raise RuntimeFailure(f"Cannot make a temporary folder in {self.rt.description}: "
                                  f"{made.output.strip()}")
            base = made.stdout.strip()
            self.rt.copy_in(staging, base)
            self.remote_dir = f"{base}/probes"
        path = self.rt.exec(["printenv", "PATH"]).stdout.strip() or DEFAULT_PATH
        bindir = self.spec.python.rsplit("/", 1)[0] if "/" in self.spec.python else ""
        parts = [bindir] if bindir else []
        parts += [p for p in path.split(":") if p and p != bindir]
        self.env = {"PATH": ":".join(parts)}

    def cleanup(self) -> None:
        if self.remote_dir:
            self.rt.exec(["rm", "-rf", self.remote_dir.rsplit("/", 1)[0]])

    def cwd(self) -> str | None:
        if self.rt.exec(["test", "-d", self.spec.cwd]).ok:
            return self.spec.cwd
        return None

    def run(self, argv: list[str], *, timeout: float | None = None,
            env: Mapping[str, str] | None = None) -> ExecResult:
        return self.rt.exec(argv, env={**self.env, **(env or {})}, workdir=self.cwd(),
                            timeout=timeout)

    def probe(self, script: str, *args: str, timeout: float | None = None,
              env: Mapping[str, str] | None = None) -> tuple[dict[str, Any] | None, ExecResult]:
        argv = [self.spec.python, f"{self.remote_dir}/{script}", *args]
        res = self.run(argv, timeout=timeout or self.spec.probe_timeout, env=env)
        return parse_probe_output(res.stdout), res

    def request(self, name: str) -> str:
        return f"{self.remote_dir}/{name}"


# ----------------------------------------------------------------------------- levels
def _c0(p: _Probing) -> LevelResult:
    spec = p.spec
    if p.facts is None:
        return _interpreter_failed("C0", p)
    assert p.scan is not None
    data, res = p.probe("c0_resolve.py", p.request("c0_names.json"))
    if data is None:
        return LevelResult("C0", "fail", "the import resolver did not run",
                           details={"exec": _exec_summary(res)})
    limit = spec.task.c0.max_missing_ratio if spec.task else 0.0
    outcome = c0_scan.evaluate(p.scan, data.get("results", {}), p.declared, limit)
    metrics = {
        "import_statements": outcome.total,
        "missing_statements": outcome.missing,
        "missing_statement_ratio": round(outcome.ratio, 4),
        "max_missing_ratio": limit,
        "researchenvbench_top_modules": outcome.top_modules,
        "researchenvbench_missing_top_modules": outcome.top_missing,
        "researchenvbench_missing_ratio": round(outcome.top_ratio, 4),
        "unique_missing": len(outcome.unique_missing),
        "optional_statements": outcome.optional_total,
        "optional_missing_statements": outcome.optional_missing,
        "classes": {k: dict(v) for k, v in outcome.classes.items()},
        "files": p.scan.files,
        "files_in_scope": len(p.scan.scope_files),
        "lines": p.scan.lines,
        "scanner": spec.scanner,
        "scan_seconds": round(p.scan_seconds, 3),
    }
    details = {
        "scope": p.scan.scope.to_json() if p.scan.scope else None,
        "missing": [m.to_json() for m in outcome.unique_missing],
        "optional_missing": [m.to_json() for m in outcome.unique_optional_missing],
        "unparsable": list(p.scan.unparsable),
        "own_modules_skipped": p.scan.skipped_own,
        "relative_imports": p.scan.relative,
    }
    if not outcome.passed:
        names = ", ".join(f"{m.module} ({m.distribution})" for m in outcome.unique_missing[:5])
        extra = len(outcome.unique_missing) - 5
        more = f" and {extra} more" if extra > 0 else ""
        return LevelResult("C0", "fail",
                           f"{outcome.missing}/{outcome.total} required imports unresolved: "
                           f"{names}{more}", metrics, details)
    return LevelResult("C0", "pass", None, metrics, details)


def classify_import(result: Mapping[str, Any], extra_tops: frozenset[str],
                    beside: Mapping[str, frozenset[str]] | None = None) -> dict[str, Any]:
    """A module that fails only because a module is missing that no environment is to
    provide is reported, never failing C0i: ``optional: "extra"`` for an optional extra's
    module (the ModuleNotFoundError itself, or one the ImportError it raised was handling:
    ``except ImportError: raise ImportError("pip install pkg[extra]")``); ``"script"`` for a
    bare name that is a module file beside it (``beside``: module -> the stems of the
    ``.py`` files in its folder), which only a script that puts that folder on ``sys.path``
    imports (a ``setup.py`` helper)."""
    out = dict(result)
    if result.get("ok") is not False or result.get("error_class") not in (
            "ModuleNotFoundError", "ImportError"):
        return out
    missing = str(result.get("missing_module") or "")
    if not missing and result.get("error_class") == "ModuleNotFoundError":
        missing = str(result.get("missing_name") or "")  # a result from before the field
    if missing and missing.split(".", 1)[0] in extra_tops:
        out["optional"] = "extra"
    elif missing and "." not in missing and missing in (beside or {}).get(
            str(result.get("module")), frozenset()):
        out["optional"] = "script"
    return out


def _c0i(p: _Probing) -> LevelResult:
    """Import every in-scope module of the repo in a fresh interpreter, GPU hidden."""
    if p.facts is None:
        return _interpreter_failed("C0i", p)
    if not p.import_modules:
        return LevelResult("C0i", "not_applicable",
                           "no importable module of the repo in C0's scope")
    p.progress(f"C0i: importing {len(p.import_modules)} module(s)")
    data, res = p.probe("import_check.py", p.request("import_check.json"),
                        timeout=p.spec.probe_timeout + 180)
    if data is None:
        return LevelResult("C0i", "fail", "the import check did not run",
                           details={"exec": _exec_summary(res)})
    results = [classify_import(r, p.extra_tops, p.beside) for r in data.get("results") or []]
    failed = [r for r in results if r.get("ok") is False and not r.get("optional")]
    optional = [r for r in results if r.get("ok") is False and r.get("optional")]
    untried = [r for r in results if r.get("ok") is None]
    pip = data.get("pip_check") or {}
    metrics = {"modules": len(results), "ok": sum(r.get("ok") is True for r in results),
               "failed": len(failed), "optional_failed": len(optional),
               "untried": len(untried), "pip_check_exit": pip.get("exit_code")}
    details = {"results": results, "failed": failed, "optional_failed": optional,
               "pip_check": pip}
    if failed or untried:
        first = (failed or untried)[0]
        where = f" at {first['where']}" if first.get("where") else ""
        words = (f"{first['module']} raises {first.get('error_class')}: "
                 f"{str(first.get('message'))[:200]}{where}{hidden_copy(first)}")
        more = len(failed) + len(untried) - 1
        return LevelResult("C0i", "fail", words + (f" (and {more} more)" if more else ""),
                           metrics, details)
    return LevelResult("C0i", "pass", None, metrics, details)


def hidden_copy(result: Mapping[str, Any]) -> str:
    """What a failed import's ``hides`` says, as words to append; "" where it says nothing."""
    hides = result.get("hides")
    if not isinstance(hides, Mapping) or not hides.get("imported") or not hides.get("hidden"):
        return ""
    return (f" (imported from {hides['imported']}, which hides another copy at "
            f"{hides['hidden']}: a checkout run from its root is imported before what was "
            "installed, and a plain install leaves its compiled parts only in the installed "
            "copy; `pip install -e` builds them in the checkout)")


def _interpreter_failed(level: Level, p: _Probing) -> LevelResult:
    res = p.facts_exec
    return LevelResult(level, "fail", f"target interpreter {p.spec.python} does not run",
                       details={"exec": _exec_summary(res) if res else None})


def _task_command(p: _Probing, level: Level, command: str, timeout: int,
                  env: Mapping[str, str] | None = None) -> tuple[bool, dict[str, Any]]:
    p.progress(f"{level}: {command}")
    res = p.run(["bash", "-c", command], timeout=timeout, env=env)
    summary = _exec_summary(res)
    for key in ("stdout_tail", "stderr_tail"):
        summary[key] = redacted(summary[key], p.spec.redact)
    info = {"command": command, "timeout": timeout, **summary}
    return res.ok, info


#: Seconds C1 gives the task's native modules to import, all of them together.
NATIVE_IMPORT_TIMEOUT = 300


def _c1(p: _Probing) -> LevelResult:
    task = p.spec.task
    if task is None or task.cpu is None:
        return LevelResult("C1", "not_applicable", "no CPU entrypoint (no task)")
    cpu_env = {"CUDA_VISIBLE_DEVICES": ""}
    details: dict[str, Any] = {}
    native = task.native_modules
    if native:
        data, res = p.probe("import_check.py", p.request("native_modules.json"),
                            timeout=NATIVE_IMPORT_TIMEOUT + 30)
        results = (data or {}).get("results") or []
        details["native_import"] = {"modules": list(native), "results": results,
                                    **_exec_summary(res)}
        failed = [r for r in results if r.get("ok") is not True]
        if data is None or failed:
            names = "; ".join(
                f"{r.get('module')} ({r.get('error_class')}: {str(r.get('message'))[:160]})"
                f"{hidden_copy(r)}" for r in failed)
            return LevelResult("C1", "fail",
                               f"native module(s) do not import: {names or ', '.join(native)}",
                               details=details)
    ok, info = _task_command(p, "C1", task.cpu.command, task.cpu.timeout, cpu_env)
    details["entrypoint"] = info
    if ok:
        return LevelResult("C1", "pass", None, {"exit_code": 0}, details)
    ended = (f"timed out after {task.cpu.timeout}s" if info["timed_out"]
             else f"exit {info['exit_code']}")
    said = why(info, p.spec.redact)
    return LevelResult("C1", "fail", f"CPU entrypoint failed ({ended})"
                       + (f": {said}" if said else ""), {"exit_code": info["exit_code"]},
                       details)


def _arch_supported(capability: str, arch_list: list[str]) -> bool:
    """Can a device of ``capability`` ("9.0") run code compiled for ``arch_list``?

    A cubin (sm_XY) runs on the same major with an equal or higher minor; PTX (compute_XY)
    is JIT-compiled for any equal or newer device.
    """
    try:
        major, minor = (int(x) for x in capability.split(".")[:2])
    except ValueError:
        return False
    for arch in arch_list:
        kind, _, num = arch.partition("_")
        digits = "".join(ch for ch in num if ch.isdigit())
        if len(digits) < 2:
            continue
        a_major, a_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def _major_minor(version: str | None) -> tuple[int, int] | None:
    if not version:
        return None
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def c2_verdict(data: Mapping[str, Any]) -> tuple[bool, list[str], dict[str, Any]]:
    """Judge the framework probe's output: (passed, problems, metrics)."""
    frameworks: Mapping[str, Any] = data.get("frameworks", {})
    driver: Mapping[str, Any] = data.get("driver", {})
    present = sorted(n for n, f in frameworks.items() if f.get("installed"))
    problems: list[str] = []
    metrics: dict[str, Any] = {"frameworks": present, "driver_version": driver.get("version"),
                               "driver_cuda": driver.get("cuda")}
    if not present:
        return False, ["no GPU framework installed (torch, jax, tensorflow, cupy)"], metrics
    for name in present:
        f = frameworks[name]
        if not f.get("ok"):
            problems.append(f"{name} does not import: {str(f.get('error', ''))[-200:]}")
        elif not f.get("cuda_available"):
            problems.append(f"{name} {f.get('version')} does not see a GPU")
    torch = frameworks.get("torch", {})
    if torch.get("ok"):
        metrics["torch_version"] = torch.get("version")
        metrics["torch_cuda"] = torch.get("cuda")
        metrics["gpu_count"] = torch.get("device_count", 0)
        if torch.get("cuda") is None and not torch.get("hip"):
            problems.append(f"torch {torch.get('version')} is a CPU-only build")
        t_cuda, d_cuda = _major_minor(torch.get("cuda")), _major_minor(driver.get("cuda"))
        if t_cuda and d_cuda:
            if t_cuda[0] > d_cuda[0]:
                problems.append(f"torch is built for CUDA {torch.get('cuda')} but the driver "
                                f"{driver.get('version')} supports CUDA {driver.get('cuda')}")
            elif t_cuda > d_cuda:
                metrics["cuda_minor_version_compatibility"] = True
        arch_list = list(torch.get("arch_list") or [])
        metrics["arch_list"] = arch_list
        for dev in torch.get("devices", []):
            if arch_list and not _arch_supported(str(dev.get("capability")), arch_list):
                problems.append(f"GPU {dev.get('index')} ({dev.get('name')}, capability "
                                f"{dev.get('capability')}) is not in torch's arch list "
                                f"{' '.join(arch_list)}")
    else:
        counts = [int(f.get("gpu_count", 0)) for f in frameworks.values() if f.get("ok")]
        metrics["gpu_count"] = max(counts, default=0)
    return not problems, problems, metrics


def _c2(p: _Probing) -> LevelResult:
    p.progress("C2: framework probe")
    data, res = p.probe("framework.py")
    if data is None:
        said = why(_exec_summary(res), p.spec.redact)
        return LevelResult("C2", "fail", "the framework probe did not run"
                           + (f": {said}" if said else ""),
                           details={"exec": _exec_summary(res)})
    p.framework = data
    ok, problems, metrics = c2_verdict(data)
    details = {"frameworks": data.get("frameworks"), "driver": data.get("driver")}
    if ok:
        return LevelResult("C2", "pass", None, metrics, details)
    return LevelResult("C2", "fail", "; ".join(problems), metrics, details)


def _c3(p: _Probing) -> LevelResult:
    task = p.spec.task
    p.progress("C3: kernel probe")
    data, res = p.probe("kernel.py", p.request("kernel.json"))
    details: dict[str, Any] = {"probe": data, "exec": _exec_summary(res) if data is None else None}
    problems: list[str] = []
    ran_something = False
    if data is None:
        said = why(_exec_summary(res), p.spec.redact)
        problems.append("the kernel probe did not run" + (f": {said}" if said else ""))
    else:
        matmul = data.get("matmul")
        if matmul is not None:
            ran_something = True
            if not matmul.get("ok"):
                error = str(matmul.get("error") or "wrong result")[:300]
                problems.append(f"matmul on GPU: {error}")
        for name, nat in (data.get("native") or {}).items():
            if not nat.get("ok"):
                problems.append(f"native module {name}: {nat.get('error')}")
    if task is not None and task.gpu is not None:
        ok, info = _task_command(p, "C3", task.gpu.command, task.gpu.timeout)
        details["entrypoint"] = info
        ran_something = True
        if not ok:
            said = why(info, p.spec.redact)
            problems.append(f"GPU entrypoint failed (exit {info['exit_code']})"
                            + (f": {said}" if said else ""))
    if not ran_something and not problems:
        problems.append("nothing ran on the GPU: no torch and no GPU entrypoint")
    metrics = {"matmul_ok": bool(data and (data.get("matmul") or {}).get("ok"))}
    if problems:
        return LevelResult("C3", "fail", "; ".join(problems), metrics, details)
    return LevelResult("C3", "pass", None, metrics, details)


def _c4(p: _Probing, visible: int) -> LevelResult:
    task = p.spec.task
    task_gpus = task.ddp.gpus if task and task.ddp else 2
    world = min(task_gpus, visible)
    p.progress(f"C4: torchrun over {world} GPUs")
    argv = [p.spec.python, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={world}", f"{p.remote_dir}/ddp.py"]
    res = p.run(argv, timeout=p.spec.probe_timeout)
    data = parse_probe_output(res.stdout)
    details: dict[str, Any] = {"probe": data, "exec": _exec_summary(res)}
    problems = []
    if not res.ok or data is None:
        said = why(_exec_summary(res), p.spec.redact)
        problems.append(f"NCCL all_reduce/DDP probe failed (exit {res.exit_code})"
                        + (f": {said}" if said else ""))
    if task is not None and task.ddp is not None:
        ok, info = _task_command(p, "C4", task.ddp.command, task.ddp.timeout)
        details["entrypoint"] = info
        if not ok:
            said = why(info, p.spec.redact)
            problems.append(f"DDP entrypoint failed (exit {info['exit_code']})"
                            + (f": {said}" if said else ""))
    metrics = {"world_size": world}
    if problems:
        return LevelResult("C4", "fail", "; ".join(problems), metrics, details)
    return LevelResult("C4", "pass", None, metrics, details)


def cuda_capability(facts: Mapping[str, Any]) -> tuple[bool | None, str, str | None]:
    """From the facts probe: could anything installed use CUDA? (capable, why not, torch's
    CUDA build). Unknown (None) where a framework's build cannot be read without importing."""
    fw = facts.get("gpu_frameworks")
    if not isinstance(fw, Mapping):
        return None, "", ""
    torch = fw.get("torch")
    torch_cuda: str | None = None
    if isinstance(torch, Mapping):
        torch_cuda = torch.get("cuda") or torch.get("hip")
    if torch_cuda or fw.get("cupy") or fw.get("jax_cuda"):
        return True, "", torch_cuda
    if fw.get("tensorflow"):
        return None, "", torch_cuda
    found = []
    if isinstance(torch, Mapping):
        found.append("torch is a CPU-only build")
    if fw.get("jax"):
        found.append("jax has no CUDA plugin")
    note = ("no CUDA-capable framework installed" + (f" ({'; '.join(found)})" if found
                                                    else " (no torch, jax, tensorflow, cupy)"))
    return False, note, torch_cuda


def _torch_version(facts: Mapping[str, Any]) -> str | None:
    """The version ``torch.__version__`` reports (torch/version.py, local part included:
    ``2.5.0+cu124``) where torch is installed, else its distribution's metadata version."""
    installed = (facts.get("distributions") or {}).get("torch")
    fw = facts.get("gpu_frameworks")
    build = fw.get("torch") if isinstance(fw, Mapping) else None
    if installed and isinstance(build, Mapping) and isinstance(build.get("version"), str):
        return str(build["version"])
    return str(installed) if installed else None


def _evidence(p: _Probing) -> Evidence:
    facts = p.facts or {}
    fw = (p.framework or {}).get("frameworks", {})
    cuda: bool | None = None
    count: int | None = None
    if p.framework is not None:
        seen = [f for f in fw.values() if f.get("ok")]
        cuda = any(bool(f.get("cuda_available")) for f in seen)
        torch = fw.get("torch", {})
        count = int(torch["device_count"]) if torch.get("ok") else max(
            (int(f.get("gpu_count", 0)) for f in seen), default=0)
    elif facts:
        count = int(facts.get("gpus", {}).get("count", 0))
    versions = {k: v["version"] for k, v in facts.get("interpreters", {}).items()
                if v.get("ok")}
    environments = {k: v["environment"] for k, v in facts.get("interpreters", {}).items()
                    if v.get("ok") and isinstance(v.get("environment"), Mapping)}
    own = facts.get("python", {}).get("environment")
    if isinstance(own, Mapping):
        environments[""] = own
    capable, note, torch_cuda = cuda_capability(facts)
    return Evidence(
        cuda_capable=capable, cuda_capable_note=note, torch_cuda_build=torch_cuda,
        paths=facts.get("paths", {}),
        interpreter_versions=versions, environments=environments,
        python_version=facts.get("python", {}).get("version"),
        torch_version=_torch_version(facts),
        distributions=dict(facts.get("distributions") or {}),
        native_imports=p.native_imports,
        cuda_available=cuda,
        gpu_count=count,
        levels=dict(p.done),
    )


def _import_native_claims(p: _Probing) -> None:
    """Each compiled extension the claims name, imported by the target interpreter (GPU
    hidden): whether it imports, and from a compiled extension file."""
    p.progress("C5: importing the claimed native modules")
    data, _res = p.probe("import_check.py", p.request("native_claims.json"),
                         timeout=p.spec.probe_timeout)
    p.native_imports = {str(r.get("module")): r for r in (data or {}).get("results") or []}


#: A path exists; a bare name (``python``) is found on PATH (as the facts probe reads it).
_EXISTS = 'case "$1" in */*) test -e "$1";; *) command -v -- "$1" >/dev/null;; esac'


def _c5(p: _Probing) -> LevelResult:
    claims = p.spec.claims
    if isinstance(claims, BadClaims):
        return LevelResult("C5", "fail", f"claims.json cannot be checked: {claims.reason}")
    if not isinstance(claims, Mapping):
        return LevelResult("C5", "not_applicable", "claims.json is not a JSON object")
    if p.facts is None and claims.get("python_path"):
        # The target interpreter did not run: check the claimed paths from outside.
        p.facts = {"paths": {path: p.rt.exec(["sh", "-c", _EXISTS, "sh", path]).ok
                             for path in claimed_paths(claims)}}
    elif claimed_native_modules(claims):
        _import_native_claims(p)
    outcome = check_claims(claims, _evidence(p))
    metrics = outcome.metrics()
    details = {"checks": [c.to_json() for c in outcome.checks],
               "not_checked": [u.to_json() for u in outcome.unchecked]}
    if outcome.hallucinations:
        fields = ", ".join(c.field for c in outcome.checks if c.verdict == "hallucination")
        return LevelResult("C5", "fail", f"{outcome.hallucinations} false claim(s): {fields}",
                           metrics, details)
    if not metrics["checked"]:
        return LevelResult("C5", "skipped",
                           f"no claim could be checked here ({metrics['unverifiable']} "
                           f"unverifiable, {metrics['unknown']} unknown)", metrics, details)
    return LevelResult("C5", "pass", None, metrics, details)


# ----------------------------------------------------------------------------- driver
def _scan_root(spec: PyramidSpec, root: Path, p: _Probing) -> c0_scan.ScanResult:
    task = spec.task
    c0 = task.c0 if task else None
    scope = c0_scope.resolve_scope(root, c0.include if c0 else None,
                                   c0.exclude if c0 else None, task.commands if task else [])
    scan = c0_scan.scan_repo(root, spec.scanner, scope)
    p.declared = c0_scope.declared_distributions(root)
    modules = c0_scope.import_check_files(root, scan.scope_files)
    p.import_modules = sorted(modules)
    p.beside = c0_scope.modules_beside(root, modules)
    p.extra_tops = c0_scan.extra_modules({i.top for i in scan.imports}, p.declared)
    return scan


def _scan(spec: PyramidSpec, runtime: Runtime, cwd: str | None,
          p: _Probing) -> c0_scan.ScanResult:
    """C0's scan, its scope, the repo's declared distributions and C0i's module list, from
    the host copy of the repo or a copy of ``cwd`` (the repository's folder) taken out of
    the runtime."""
    if spec.repo_dir is not None:
        return _scan_root(spec, spec.repo_dir.resolve(), p)
    with tempfile.TemporaryDirectory(prefix="synth-repo-") as tmp:
        if cwd is None:  # no working directory: nothing to scan
            return _scan_root(spec, Path(tmp), p)
        runtime.copy_out(cwd, Path(tmp))
        name = cwd.rstrip("/").rsplit("/", 1)[-1] or "root"
        return _scan_root(spec, Path(tmp) / name, p)


def _not_applicable(spec: PyramidSpec) -> dict[str, str]:
    """level -> why it does not apply: the task's reasons, and C5 without claims."""
    out = {str(k): v for k, v in spec.task.not_applicable.items()} if spec.task else {}
    if spec.claims is None:
        out.setdefault("C5", "no claims (the agent wrote no claims.json)")
    return out


def _requests(spec: PyramidSpec) -> dict[str, Any]:
    """The JSON requests the facts and kernel probes read."""
    claims = spec.claims if isinstance(spec.claims, Mapping) else {}
    claimed_python = claims.get("python_path")
    native = list(spec.task.native_modules) if spec.task else []
    return {
        "facts.json": {"paths": claimed_paths(claims),
                       "interpreters": [str(claimed_python)] if claimed_python else [],
                       "distributions": claimed_distributions(claims)},
        "kernel.json": {"native_modules": native},
        "native_claims.json": {"modules": claimed_native_modules(claims), "timeout": 120,
                               "total_timeout": spec.probe_timeout, "pip_check": False},
        "native_modules.json": {"modules": native, "timeout": NATIVE_IMPORT_TIMEOUT,
                                "total_timeout": NATIVE_IMPORT_TIMEOUT, "workers": 1,
                                "pip_check": False},
    }


def _prepare_scan(p: _Probing, not_applicable: Mapping[str, str],
                  requests: dict[str, Any]) -> None:
    """C0's scan (on the host), when C0 or C0i will run; adds their requests."""
    spec = p.spec
    if not any(lv in spec.levels and lv not in not_applicable for lv in ("C0", "C0i")):
        return
    t0 = time.monotonic()
    cwd_in_runtime = next((d for d in (spec.repo_in_runtime, spec.cwd)
                           if d and p.rt.exec(["test", "-d", d]).ok), None)
    p.progress("C0: scanning the repository's imports")
    p.scan = _scan(spec, p.rt, cwd_in_runtime, p)
    p.scan_seconds = time.monotonic() - t0
    requests["c0_names.json"] = p.scan.modules
    requests["import_check.json"] = {"modules": p.import_modules,
                                     "timeout": IMPORT_TIMEOUT,
                                     "total_timeout": spec.probe_timeout}


def _run_levels(p: _Probing, not_applicable: Mapping[str, str],
                gpus_visible: int | None) -> None:
    """Each level in order: gated (a result saying why not) or run and timed."""
    runners: dict[Level, Callable[[], LevelResult]] = {
        "C0": lambda: _c0(p),
        "C0i": lambda: _c0i(p),
        "C1": lambda: _c1(p) if p.facts is not None else _interpreter_failed("C1", p),
        "C2": lambda: _c2(p),
        "C3": lambda: _c3(p),
        "C4": lambda: _c4(p, gpus_visible or 0),
        "C5": lambda: _c5(p),
    }
    for level in LEVELS:
        verdict = gate(level, not_applicable=not_applicable, selected=p.spec.levels,
                       done=p.done, gpu_access=p.spec.gpu_access, gpus_visible=gpus_visible)
        if not verdict.run:
            assert verdict.result is not None
            p.done[level] = verdict.result
            continue
        start = time.monotonic()
        result = runners[level]()
        p.done[level] = LevelResult(result.level, result.status, result.reason,
                                    result.metrics, result.details,
                                    time.monotonic() - start
                                    + (p.scan_seconds if level == "C0" else 0.0))
        p.progress(f"{level}: {p.done[level].summary}")


def run_pyramid(runtime: Runtime, spec: PyramidSpec,
                progress: Progress | None = None) -> Report:
    """Run C0-C5 (as selected and applicable) on ``runtime``; never raises for a failed level
    (:class:`~synth.pyramid.runtime.RuntimeFailure` when the runtime cannot host the probes)."""
    p = _Probing(runtime, spec, progress or (lambda _msg: None))
    not_applicable = _not_applicable(spec)
    requests = _requests(spec)
    _prepare_scan(p, not_applicable, requests)
    p.stage(requests)
    try:
        facts, res = p.probe("facts.py", p.request("facts.json"))
        p.facts, p.facts_exec = facts, res
        gpus_visible = int(facts["gpus"]["count"]) if facts else None
        _run_levels(p, not_applicable, gpus_visible)
    finally:
        p.cleanup()
    target = {**spec.target, "python": spec.python, "runtime": runtime.description,
              "workdir": spec.cwd}
    if facts:
        target["python_version"] = facts.get("python", {}).get("version")
        target["gpus_visible"] = gpus_visible
    return Report(target=target, levels=tuple(p.done[level] for level in LEVELS))
