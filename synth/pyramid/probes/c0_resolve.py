"""C0 probe: resolve module names in this environment, in one process.

Usage: python c0_resolve.py NAMES.json   (a JSON list of dotted module names)

Resolution is static first (importlib's path finders walk the parent package's search path
without running its __init__), then importlib.util.find_spec, which imports parent packages;
an exception raised there is reported as "errored", not as "missing".
"""
import importlib.machinery
import importlib.util
import json
import os
import sys


def _static(name):
    """Find ``name`` without executing any package code; None when undecidable."""
    parts = name.split(".")
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
    except Exception:
        return None
    if spec is None:
        if parts[0] in sys.builtin_module_names:
            return True
        try:
            spec = importlib.util.find_spec(parts[0])  # frozen modules, meta-path finders
        except Exception:
            return None
        if spec is None:
            return False
    for i in range(1, len(parts)):
        locations = spec.submodule_search_locations
        if locations is None:
            return None  # a module, not a package: the rest may be attributes
        try:
            spec = importlib.machinery.PathFinder.find_spec(
                ".".join(parts[: i + 1]), list(locations))
        except Exception:
            return None
        if spec is None:
            return None  # maybe created at import time (six.moves, namespace tricks)
    return True


def resolve(name):
    found = _static(name)
    if found is True:
        return {"status": "found"}
    if found is False:
        return {"status": "missing"}
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError as exc:
        return {"status": "missing", "error": "%s: %s" % (type(exc).__name__, exc)}
    except BaseException as exc:  # a parent package raised while being imported
        return {"status": "errored", "error": "%s: %s" % (type(exc).__name__, exc)}
    return {"status": "found"} if spec is not None else {"status": "missing"}


def main():
    with open(sys.argv[1]) as fh:
        names = json.load(fh)
    # Scripts run from the working directory see it on sys.path, as `python train.py` would.
    sys.path.insert(0, os.getcwd())
    results = {}
    for name in sorted(set(names)):
        results[name] = resolve(name)
    out = {
        "probe": "c0_resolve",
        "python": sys.executable,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "results": results,
    }
    sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
