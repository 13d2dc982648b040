"""C2 probe: which GPU frameworks are installed, and does each see the GPU?

Usage: python framework.py

Each framework is imported in its own child interpreter (torch and tensorflow in one process
can clash, and a broken install must not hide the others). Reports the driver version and the
CUDA version it supports (nvidia-smi), torch.version.cuda, device capabilities and torch's
compiled arch list.
"""
import json
import re
import subprocess
import sys

CHILD_TIMEOUT = 240

TORCH = r"""
import json, torch
r = {"version": torch.__version__, "cuda": torch.version.cuda,
     "hip": getattr(torch.version, "hip", None)}
r["cuda_available"] = bool(torch.cuda.is_available())
r["device_count"] = torch.cuda.device_count() if r["cuda_available"] else 0
try:
    r["arch_list"] = list(torch.cuda.get_arch_list())
except Exception as exc:
    r["arch_list"] = []
r["devices"] = []
for i in range(r["device_count"]):
    major, minor = torch.cuda.get_device_capability(i)
    r["devices"].append({"index": i, "name": torch.cuda.get_device_name(i),
                         "capability": "%d.%d" % (major, minor)})
try:
    r["driver"] = torch._C._cuda_getDriverVersion() if r["cuda_available"] else None
except Exception:
    r["driver"] = None
print(json.dumps(r))
"""

JAX = r"""
import json, jax
devs = jax.devices()
gpu = [d for d in devs if d.platform in ("gpu", "cuda", "rocm")]
print(json.dumps({"version": jax.__version__, "backend": jax.default_backend(),
                  "devices": [str(d) for d in devs], "gpu_count": len(gpu),
                  "cuda_available": bool(gpu)}))
"""

TENSORFLOW = r"""
import json, os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
gpus = tf.config.list_physical_devices("GPU")
info = {}
try:
    info = dict(tf.sysconfig.get_build_info())
except Exception:
    pass
print(json.dumps({"version": tf.__version__, "gpu_count": len(gpus),
                  "cuda_available": bool(gpus), "cuda": info.get("cuda_version"),
                  "built_with_cuda": bool(tf.test.is_built_with_cuda())}))
"""

CUPY = r"""
import json, cupy
r = {"version": cupy.__version__}
try:
    r["gpu_count"] = cupy.cuda.runtime.getDeviceCount()
    r["runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    r["driver"] = cupy.cuda.runtime.driverGetVersion()
except Exception as exc:
    r["gpu_count"] = 0
    r["error"] = "%s: %s" % (type(exc).__name__, exc)
r["cuda_available"] = r["gpu_count"] > 0
print(json.dumps(r))
"""

FRAMEWORKS = (("torch", "torch", TORCH), ("jax", "jax", JAX),
              ("tensorflow", "tensorflow", TENSORFLOW), ("cupy", "cupy", CUPY))


def installed(module):
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:
        return False


def child(code):
    try:
        out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timed out after %ds" % CHILD_TIMEOUT}
    lines = out.stdout.decode("utf-8", "replace").strip().splitlines()
    if out.returncode != 0 or not lines:
        err = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return {"ok": False, "error": "\n".join(err[-8:]) or "exit %d" % out.returncode}
    try:
        data = json.loads(lines[-1])
    except ValueError:
        return {"ok": False, "error": "unreadable output: %s" % lines[-1][:200]}
    data["ok"] = True
    return data


def driver():
    info = {"version": None, "cuda": None, "gpus": []}
    try:
        out = subprocess.run(["nvidia-smi"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=60)
        text = out.stdout.decode("utf-8", "replace")
        m = re.search(r"Driver Version:\s*([0-9.]+)", text)
        info["version"] = m.group(1) if m else None
        m = re.search(r"CUDA Version:\s*([0-9.]+)", text)
        info["cuda"] = m.group(1) if m else None
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,compute_cap,memory.total",
             "--format=csv,noheader"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        for line in q.stdout.decode("utf-8", "replace").splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 3 and parts[0].isdigit():
                info["gpus"].append({"index": int(parts[0]), "name": parts[1],
                                     "capability": parts[2],
                                     "memory": parts[3] if len(parts) > 3 else None})
    except Exception as exc:
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
    if info["version"] is None:
        try:
            with open("/proc/driver/nvidia/version") as fh:
                m = re.search(r"Kernel Module\s+([0-9.]+)", fh.read())
                info["version"] = m.group(1) if m else None
        except Exception:
            pass
    return info


def main():
    frameworks = {}
    for name, module, code in FRAMEWORKS:
        if not installed(module):
            frameworks[name] = {"installed": False}
            continue
        result = child(code)
        result["installed"] = True
        frameworks[name] = result
    out = {"probe": "framework", "python": sys.executable, "driver": driver(),
           "frameworks": frameworks}
    sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
