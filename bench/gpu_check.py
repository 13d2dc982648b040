"""The GPU levels, reproducibly: a kit made here, run on a GPU host without Docker or network.

    python bench/gpu_check.py prepare --out gpu-kit [--python-version 3.12]   # here (./dev gpu)
    python3 gpu-kit/gpu_check.py run                                          # on the GPU host

``prepare`` (on a machine with network) writes a self-contained folder: a wheelhouse of synth
and its dependencies for the GPU host's Python (``--python-version``, manylinux x86_64), the
bundled torch-op task (a PyTorch C++/CUDA operator), and this script. ``run`` (on the GPU
host, no network):

1. finds the interpreter that has the GPU framework (``$SYNTH_GPU_PYTHON``, else ``python3``
   and ``python`` on PATH, the first whose torch imports): the *target*;
2. installs synth offline into the kit's own virtual environment, made from the target's
   base interpreter (a venv with ``--system-site-packages`` of a venv does not see the
   venv's torch, so synth and the target are kept apart: synth runs from its venv, the
   probes under the target);
3. builds torch-op's extension with the host's nvcc against the target's torch, twice: with
   its CUDA kernels, and CPU-only (``TORCHOP_CPU_ONLY=1``), the negative control;
4. runs ``synth verify --runtime host`` on each build, writes each ``verify.json`` and a
   ``summary.json``, and prints one line per level. It exits 0 when the CUDA build passes
   C0-C3 (C4 passes on two GPUs or more, else is skipped with its reason) and the CPU-only
   build fails C3 with the entrypoint's own message in the reason.

Without a visible GPU it says so and exits 2 (nothing to check), never reporting a pass.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = "torch-op"
#: What a passing CUDA build must show, and what the CPU-only control must fail.
EXPECT_PASS = ("C0", "C1", "C2", "C3")
CONTROL_REASON = "built without its CUDA kernels"


def sh(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(argv), flush=True)
    return subprocess.run(argv, text=True, check=True, **kw)  # type: ignore[call-overload]


# ------------------------------------------------------------------------- prepare
def prepare(out: Path, python_version: str) -> None:
    """The kit: wheels for ``python_version``, the task, this script."""
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    tag = python_version.replace(".", "")
    venv_bin = Path(sys.executable).parent
    reqs = out / "requirements.txt"
    sh([str(venv_bin / "uv"), "pip", "compile", str(ROOT / "pyproject.toml"), "--quiet",
        "--python-version", python_version, "--python-platform", "x86_64-manylinux_2_28",
        "--no-header", "-o", str(reqs)])
    sh([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
        "--python-version", python_version, "--implementation", "cp", "--abi", f"cp{tag}",
        "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
        "--platform", "manylinux_2_17_x86_64", "--platform", "any",
        "-r", str(reqs), "-d", str(wheels)])
    sh([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels),
        str(ROOT)])
    shutil.copytree(ROOT / "tasks" / TASK, out / "tasks" / TASK)
    shutil.copy2(Path(__file__), out / "gpu_check.py")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"kit: {out} ({size / 1e6:.1f} MB, Python {python_version})")
    print(f"on the GPU host:  python3 {out.name}/gpu_check.py run")


# ----------------------------------------------------------------------------- run
def find_target() -> str | None:
    """The first interpreter whose torch imports: $SYNTH_GPU_PYTHON, python3, python."""
    candidates = [os.environ.get("SYNTH_GPU_PYTHON"), shutil.which("python3"),
                  shutil.which("python")]
    for c in candidates:
        if c and subprocess.run([c, "-c", "import torch"], capture_output=True,
                                check=False).returncode == 0:
            return c
    return None


def target_facts(python: str) -> dict[str, object]:
    code = ("import json, sys, torch; print(json.dumps({'python': sys.version.split()[0], "
            "'base': sys.base_prefix, 'torch': torch.__version__, 'cuda': torch.version.cuda, "
            "'gpus': torch.cuda.device_count() if torch.cuda.is_available() else 0}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    facts: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return facts


def synth_venv(kit: Path, facts: dict[str, object]) -> Path:
    """synth in its own venv, offline, from the target's base interpreter."""
    version = ".".join(str(facts["python"]).split(".")[:2])
    base = Path(str(facts["base"])) / "bin" / f"python{version}"
    home = kit / ".synth-venv"
    if not (home / "bin" / "synth").exists():
        sh([str(base), "-m", "venv", str(home)])
        sh([str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index",
            "--find-links", str(kit / "wheels"), "synth"])
    return home / "bin" / "synth"


def build(kit: Path, python: str, name: str, cpu_only: bool) -> Path:
    """torch-op's extension built against the target's torch, into a site folder of its
    own (the target environment is not changed)."""
    work = kit / "work" / name
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(kit / "tasks" / TASK, work / "task")
    env = {**os.environ, "MAX_JOBS": str(os.cpu_count() or 2),
           "TORCHOP_CPU_ONLY": "1" if cpu_only else "0"}
    sh([python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
        "--no-index", "--target", str(work / "site"), str(work / "task" / "repo")], env=env)
    return work


def verify(synth: Path, python: str, work: Path) -> dict[str, object]:
    out = work / "verify"
    env = {**os.environ, "PYTHONPATH": str(work / "site")}
    subprocess.run([str(synth), "verify", str(work / "task"), "--runtime", "host",
                    "--python", python, "--repo", str(work / "task" / "repo"),
                    "-o", str(out), "--levels", "C0,C0i,C1,C2,C3,C4", "--require", "C3"],
                   env=env, check=False)
    doc: dict[str, object] = json.loads((out / "verify.json").read_text())
    return doc


def levels(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    reports = doc["reports"]
    assert isinstance(reports, dict)
    return {str(r["level"]): r for r in reports["host"]["levels"]}


def judge(cuda: dict[str, dict[str, object]], cpu: dict[str, dict[str, object]],
          gpus: int) -> list[str]:
    """What is wrong with the two verdicts; empty when the GPU levels behave."""
    wrong = [f"CUDA build: {lv} is {cuda[lv]['status']} ({cuda[lv].get('reason')})"
             for lv in EXPECT_PASS if cuda.get(lv, {}).get("status") != "pass"]
    c4 = cuda.get("C4", {})
    if gpus >= 2 and c4.get("status") != "pass":
        wrong.append(f"CUDA build: C4 is {c4.get('status')} on {gpus} GPUs")
    if gpus < 2 and c4.get("status") != "skipped":
        wrong.append(f"CUDA build: C4 is {c4.get('status')} with {gpus} GPU, not skipped")
    c3 = cpu.get("C3", {})
    if c3.get("status") != "fail" or CONTROL_REASON not in str(c3.get("reason")):
        wrong.append(f"CPU-only control: C3 is {c3.get('status')} ({c3.get('reason')}), "
                     f"expected a failure saying '{CONTROL_REASON}'")
    return wrong


def run(kit: Path) -> int:
    python = find_target()
    if python is None:
        print("no interpreter with torch found (set SYNTH_GPU_PYTHON)")
        return 2
    facts = target_facts(python)
    print(f"target: {python} {json.dumps(facts)}")
    if not facts["cuda"] or not facts["gpus"]:
        print("no GPU visible to torch: the GPU levels cannot be checked here")
        return 2
    synth = synth_venv(kit, facts)
    docs = {name: verify(synth, python, build(kit, python, name, cpu_only))
            for name, cpu_only in (("cuda", False), ("cpu-only", True))}
    found = {name: levels(doc) for name, doc in docs.items()}
    for name, lv in found.items():
        for level, r in lv.items():
            print(f"{name:9} {level:4} {r['status']:15} {r.get('reason') or ''}")
    wrong = judge(found["cuda"], found["cpu-only"], int(str(facts["gpus"])))
    summary = {"target": facts, "python": python, "levels": {
        n: {k: {"status": v["status"], "reason": v.get("reason")} for k, v in lv.items()}
        for n, lv in found.items()}, "wrong": wrong}
    (kit / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("OK: the GPU levels behave" if not wrong else "WRONG:\n  " + "\n  ".join(wrong))
    return 0 if not wrong else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=ROOT / "gpu-kit")
    p.add_argument("--python-version", default="3.12")
    r = sub.add_parser("run")
    r.add_argument("--kit", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args.out.resolve(), args.python_version)
        return 0
    return run(args.kit.resolve())


if __name__ == "__main__":
    sys.exit(main())
