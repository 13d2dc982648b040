"""C0i probe: import each module in a fresh interpreter, with the GPU hidden and a timeout.

Usage: python import_check.py REQUEST.json
REQUEST: {"modules": ["pkg", "pkg.sub"], "timeout": 120, "total_timeout": 600, "workers": 4,
          "pip_check": true}

Modules are imported by up to ``workers`` interpreters at a time (each its own process).

For each module: ok (with the file it was loaded from and whether that is a compiled
extension, one of the interpreter's extension suffixes), or the exception's class and
message, the innermost frame of the traceback (file:line), the module a
ModuleNotFoundError names (the exception itself, or one an ImportError was raised while
handling) and, where the package imported hides another copy of it further along
``sys.path`` (a checkout run from its root, in front of the installed copy), both files;
or a timeout. Then
``python -m pip check`` (its exit code and output; ``"pip_check": false`` leaves it out), a
finding and not a verdict. Prints one JSON line. Stdlib only, Python >= 3.8.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, sys, traceback
name = sys.argv[1]
out = {"ok": True}
try:
    __import__(name)
    import importlib.machinery
    loaded = getattr(sys.modules.get(name), "__file__", None)
    out["file"] = loaded
    out["extension"] = bool(loaded) and str(loaded).endswith(
        tuple(importlib.machinery.EXTENSION_SUFFIXES))
except BaseException as exc:
    frames = traceback.extract_tb(exc.__traceback__)
    where = None
    if frames:
        where = "%s:%s" % (frames[-1].filename, frames[-1].lineno)
    elif isinstance(exc, SyntaxError) and exc.filename:
        where = "%s:%s" % (exc.filename, exc.lineno)
    # The module a ModuleNotFoundError names, this one or one an ImportError was raised
    # while handling (``except ImportError: raise ImportError("pip install pkg[extra]")``).
    missing, link, depth = None, exc, 0
    while isinstance(link, ImportError) and depth < 8:
        if isinstance(link, ModuleNotFoundError) and link.name:
            missing = link.name
            break
        link, depth = link.__cause__ or link.__context__, depth + 1
    out = {"ok": False, "error_class": type(exc).__name__, "message": str(exc)[:2000],
           "where": where, "missing_name": getattr(exc, "name", None)
           if isinstance(exc, ImportError) else None, "missing_module": missing}
    # Another copy of the top-level package further along sys.path, which the one imported
    # hides: a checkout run from its root hides the installed copy (and its compiled parts).
    try:
        import importlib.machinery, os
        top = name.split(".")[0]
        first = importlib.machinery.PathFinder.find_spec(top)
        if first is not None and first.origin:
            base = os.path.dirname(first.origin)
            if first.submodule_search_locations:
                base = os.path.dirname(base)
            rest = [p for p in sys.path
                    if os.path.abspath(p or os.curdir) != os.path.abspath(base)]
            other = importlib.machinery.PathFinder.find_spec(top, rest)
            if other is not None and other.origin and other.origin != first.origin:
                out["hides"] = {"imported": first.origin, "hidden": other.origin}
    except Exception:
        pass
sys.stdout.write("\n" + json.dumps(out) + "\n")
sys.stdout.flush()
"""


def _last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def check(name, timeout, env):
    started = time.time()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, name], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, env=env,
        )
    except subprocess.TimeoutExpired:
        return {"module": name, "ok": False, "error_class": "Timeout",
                "message": "import did not finish within %ss" % timeout, "where": None,
                "seconds": round(time.time() - started, 3)}
    data = _last_json(proc.stdout)
    if data is None:
        data = {"ok": False, "error_class": "Crash",
                "message": "the interpreter exited %s while importing: %s"
                % (proc.returncode, proc.stderr.strip()[-1000:]), "where": None}
    data["module"] = name
    data["seconds"] = round(time.time() - started, 3)
    return data


def pip_check(env, timeout):
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "check"], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout, env=env,
        )
    except subprocess.TimeoutExpired:
        return {"ran": False, "exit_code": None, "output": "timed out"}
    except OSError as exc:
        return {"ran": False, "exit_code": None, "output": str(exc)}
    no_pip = "No module named pip" in proc.stdout
    return {"ran": not no_pip, "exit_code": proc.returncode, "output": proc.stdout[-4000:]}


def main():
    with open(sys.argv[1]) as fh:
        request = json.load(fh)
    timeout = float(request.get("timeout", 120))
    budget = float(request.get("total_timeout", 600))
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.time()

    def one(name):
        left = budget - (time.time() - started)
        if left <= 1:
            return {"module": name, "ok": None, "error_class": None,
                    "message": "not tried: the probe's time budget ran out", "where": None}
        return check(name, min(timeout, left), env)

    modules = list(request.get("modules", []))
    workers = max(1, min(int(request.get("workers", 4)), os.cpu_count() or 1, len(modules)))
    if workers == 1:
        results = [one(name) for name in modules]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, modules))  # in request order
    out = {
        "probe": "import_check",
        "python": sys.executable,
        "results": results,
    }
    if request.get("pip_check", True):
        out["pip_check"] = pip_check(env, min(120.0, max(budget - (time.time() - started),
                                                         10.0)))
    sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
