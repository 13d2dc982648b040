"""Facts about the environment, gathered without importing any framework.

Usage: python facts.py [REQUEST.json]
       with {"paths": [...], "interpreters": [...], "distributions": [...]}

Reports the interpreter and what kind of environment its prefix is, versions of framework
distributions and of the requested ones (from metadata only; None: not installed), whether
given paths exist, the versions and environments of given interpreters, and how many GPUs
are visible.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

FRAMEWORKS = ("torch", "jax", "jaxlib", "tensorflow", "cupy", "cupy-cuda12x", "cupy-cuda11x")


def dist_version(name):
    try:
        from importlib import metadata
    except ImportError:
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def torch_build():
    """torch's build (CUDA or ROCm version, or None) and the version ``torch.__version__``
    reports, read from torch/version.py without importing. That version carries the build's
    local part (``2.5.0+cu124``), which the distribution's metadata lacks for the wheels
    PyPI serves (``2.5.0``: an index takes no local versions)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("torch")
    except Exception:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    info = {"cuda": None, "hip": None, "version": None}
    for loc in spec.submodule_search_locations:
        try:
            with open(os.path.join(loc, "version.py")) as fh:
                text = fh.read()
        except OSError:
            continue
        for key, name in (("cuda", "cuda"), ("hip", "hip"), ("version", "__version__")):
            m = re.search(r"^%s(?:\s*:[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]" % name, text, re.M)
            if m:
                info[key] = m.group(1)
        return info
    return None


def gpu_frameworks():
    """Which installed frameworks could use CUDA at all (from metadata and files only)."""
    plugins = [n for n in ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda11-plugin")
               if dist_version(n)]
    jaxlib = dist_version("jaxlib") or ""
    cupy = [n for n in ("cupy", "cupy-cuda12x", "cupy-cuda11x", "cupy-cuda13x")
            if dist_version(n)]
    return {
        "torch": torch_build(),
        "jax_cuda": bool(plugins) or "cuda" in jaxlib,
        "jax": dist_version("jax") is not None,
        "tensorflow": dist_version("tensorflow") is not None,
        "cupy": bool(cupy),
    }


def environment(prefix):
    """What kind of environment ``prefix`` is: a conda prefix (``conda-meta/``), a virtual
    environment (``pyvenv.cfg``: the keys that say what made it), or neither."""
    venv = None
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8", errors="replace") as fh:
            venv = {}
            for line in fh.read(65536).splitlines():
                key, eq, value = line.partition("=")
                if eq and key.strip() in ("uv", "virtualenv", "prompt", "home"):
                    venv[key.strip()] = value.strip()
    except OSError:
        pass
    return {"prefix": prefix, "conda": os.path.isdir(os.path.join(prefix, "conda-meta")),
            "venv": venv}


def located(path):
    """A path as it is; a bare name (``python``) where PATH finds it, else as it is."""
    if "/" in path:
        return path
    return shutil.which(path) or path


def interpreter_version(path):
    try:
        out = subprocess.run(
            [path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3]); "
             "print(sys.prefix)"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
        )
    except Exception as exc:
        return {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if out.returncode != 0:
        return {"ok": False, "error": out.stderr.decode("utf-8", "replace")[-300:]}
    lines = out.stdout.decode("utf-8", "replace").splitlines()
    if not lines:
        return {"ok": False, "error": "printed nothing"}
    info = {"ok": True, "version": lines[0].strip()}
    if len(lines) > 1:
        info["environment"] = environment(lines[1])
    return info


def gpus():
    info = {"nvidia_smi": None, "count": 0, "source": None, "names": []}
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=60)
        lines = [line for line in out.stdout.decode("utf-8", "replace").splitlines()
                 if line.startswith("GPU ")]
        info["nvidia_smi"] = out.returncode == 0
        if out.returncode == 0:
            info["count"] = len(lines)
            info["names"] = lines
            info["source"] = "nvidia-smi -L"
    except Exception:
        info["nvidia_smi"] = False
    if info["source"] is None:
        devices = [d for d in glob.glob("/dev/nvidia*") if re.match(r"/dev/nvidia\d+$", d)]
        info["count"] = len(devices)
        info["source"] = "/dev/nvidia*"
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        visible = [d for d in cvd.split(",") if d.strip() and d.strip() != "-1"]
        info["count"] = min(info["count"], len(visible))
        info["cuda_visible_devices"] = cvd
    return info


def main():
    request = {}
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as fh:
            request = json.load(fh)
    out = {
        "probe": "facts",
        "python": {
            "executable": sys.executable,
            "version": "%d.%d.%d" % sys.version_info[:3],
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "environment": environment(sys.prefix),
        },
        "distributions": {n: dist_version(n)
                          for n in sorted(set(FRAMEWORKS) | set(request.get("distributions", [])))},
        "paths": {p: os.path.exists(located(p)) for p in request.get("paths", [])},
        "interpreters": {p: interpreter_version(located(p))
                         for p in request.get("interpreters", []) if os.path.exists(located(p))},
        "gpus": gpus(),
        "gpu_frameworks": gpu_frameworks(),
    }
    sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
