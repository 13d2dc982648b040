"""C3 probe: a real kernel on the GPU, checked against the CPU; the task's native modules on GPU.

Usage: python kernel.py [REQUEST.json]  with {"native_modules": ["pkg._ext", ...]}

A native module may offer a smoke test: a callable ``synth_gpu_smoke(device)`` (returning
truthy on success) is called with "cuda:0"; otherwise the module is imported after CUDA is
initialised, which catches extensions built for the wrong torch or CUDA.
"""
import importlib
import json
import sys
import time
import traceback


def matmul_check(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=gen, dtype=torch.float32)
    b = torch.randn(512, 512, generator=gen, dtype=torch.float32)
    expected = a @ b
    start = time.time()
    got = (a.cuda() @ b.cuda())
    torch.cuda.synchronize()
    got = got.cpu()
    err = float((got - expected).abs().max())
    return {"ok": bool(torch.allclose(got, expected, rtol=1e-3, atol=1e-3)),
            "max_abs_error": err, "seconds": round(time.time() - start, 4),
            "device": torch.cuda.get_device_name(0), "shape": [512, 512]}


def native_check(name):
    try:
        module = importlib.import_module(name)
    except BaseException as exc:
        return {"ok": False, "imported": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    smoke = getattr(module, "synth_gpu_smoke", None)
    if not callable(smoke):
        return {"ok": True, "imported": True, "op_run": False,
                "file": getattr(module, "__file__", None)}
    try:
        ok = bool(smoke("cuda:0"))
    except BaseException as exc:
        return {"ok": False, "imported": True, "op_run": True,
                "error": "%s: %s" % (type(exc).__name__, exc)}
    return {"ok": ok, "imported": True, "op_run": True}


def main():
    request = {}
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as fh:
            request = json.load(fh)
    out = {"probe": "kernel", "python": sys.executable}
    try:
        import torch
    except BaseException as exc:
        out["torch"] = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        torch = None
    if torch is not None:
        if not torch.cuda.is_available():
            out["matmul"] = {"ok": False, "error": "torch.cuda.is_available() is False"}
        else:
            try:
                out["matmul"] = matmul_check(torch)
            except BaseException:
                out["matmul"] = {"ok": False, "error": traceback.format_exc(limit=3)[-800:]}
    out["native"] = {name: native_check(name) for name in request.get("native_modules", [])}
    sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
