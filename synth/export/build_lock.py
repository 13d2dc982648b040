"""What the rebuild's installer and its builds take, pinned with sha256 hashes.

- ``installer.lock``: the uv the image installs its lock with, at the version of the uv
  that locked it, hashed like every other pin (``install-uv.py`` unpacks the wheel for the
  image's platform after checking its sha256: no pip in the build).
- ``build-constraints.lock`` (one per environment): every build requirement of what the
  rebuild builds from source — the lock's sdists (pins with no wheel for the image's
  platform) and the isolated builds of local projects (``pip install /workspace``, with what
  hatchling asks for beyond ``[build-system]``: :func:`backend_build_requires`). A local
  project's build backend is pinned at the version that built it live, which its installed
  distribution's ``WHEEL`` file names (``Generator: setuptools (84.2.1)``: the plan's
  ``build_backend``); otherwise the lock's own versions win where a build requirement is
  also installed (setuptools, wheel, numpy …: "pinned from the lock"); the rest is resolved
  on the host, for the image's Python and platform, with hashes. uv installs with
  ``--build-constraints`` and ``--require-build-hashes``, so a build requirement missing
  from this file fails the build naming it: nothing is taken unpinned from the index.
"""

from __future__ import annotations

import dataclasses
import io
import json
import posixpath
import re
import ssl
import subprocess
import tarfile
import tempfile
import tomllib
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.utils import canonicalize_name

from synth.distill.native import installs_into
from synth.distill.plan import DEFAULT_INDEX, BuildPlan, PythonEnvPlan
from synth.errors import LockError, SynthError
from synth.export.lock import (
    Lock,
    LockedPin,
    LockTarget,
    _compile_argv,
    checked_pin,
    checked_requirement,
    parse_compiled,
    run_locker,
    wheelhouse_files,
)
from synth.util import safe_io


def _name(name: str) -> str:
    return str(canonicalize_name(name))


#: PEP 517's fallback for a project without ``[build-system]`` (what pip and uv use), with
#: ``wheel``, which setuptools < 70.1 asks for at build time.
DEFAULT_BUILD_REQUIRES = ("setuptools>=40.8.0", "wheel")
_NO_WHEEL = re.compile(r"Wheels are required for `([^`]+)`|Because ([A-Za-z0-9._-]+)==\S+ "
                       r"has no usable wheels")


#: The artifact's script that unpacks installer.lock's uv in the build (templates/).
INSTALL_UV_SCRIPT = "install-uv.py"


def uv_version() -> str:
    """The version of the uv that locks (and that the image installs with)."""
    try:
        return version("uv")
    except PackageNotFoundError as exc:  # pragma: no cover - uv is a dependency
        raise LockError("The uv Python package is not installed; synth locks with it.") from exc


def _run_compile(argv: Sequence[str], target: LockTarget,
                 cwd: str) -> subprocess.CompletedProcess[str]:
    try:
        return run_locker(argv, target, cwd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LockError(f"{argv[0]} could not run: {exc}") from exc


def _compile(env: PythonEnvPlan, target: LockTarget, requirements: Sequence[str], *,
             extra: Sequence[str] = (), constraints: Sequence[str] = (),
             no_deps: bool = True) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="synth-build-lock-") as tmp:
        infile = Path(tmp) / "build.in"
        infile.write_text("".join(checked_requirement(r, "a build requirement") + "\n"
                                  for r in requirements), encoding="utf-8")
        argv = _compile_argv("uv", env, target, infile)
        opts = list(extra)
        if not no_deps:
            argv = [a for a in argv if a != "--no-deps"]
        if constraints:
            cfile = Path(tmp) / "constraints.txt"
            cfile.write_text("".join(checked_requirement(c, "a build constraint") + "\n"
                                     for c in constraints), encoding="utf-8")
            opts += ["--constraints", str(cfile)]
        return _run_compile([*argv[:-1], *opts, argv[-1]], target, tmp)


def installer_key(env: PythonEnvPlan, target: LockTarget) -> tuple[str, ...]:
    """What :func:`lock_installer`'s answer depends on: its locker call's arguments (with a
    fixed input file) and the CA bundle it trusts. Environments with the same key get the
    same pin, so an export asks it once for them."""
    return (*_compile_argv("uv", env, target, Path("installer.in")), str(target.ca_bundle))


def lock_installer(env: PythonEnvPlan, target: LockTarget) -> LockedPin:
    """uv's own pin with its hashes, for the image's platform."""
    ver = uv_version()
    proc = _compile(env, target, [f"uv=={ver}"])
    got = parse_compiled(proc.stdout).get("uv") if proc.returncode == 0 else None
    if not got or not got[1]:
        raise LockError(f"Could not lock the installer uv=={ver} from "
                        f"{env.index_url or DEFAULT_INDEX}:\n{proc.stderr.strip()[-2000:]}",
                        hint="Was the index reachable (pass --ca-bundle behind a TLS proxy)?",
                        lock_file=env.lock_file)
    return LockedPin(name="uv", version=got[0], hashes=got[1])


def sdist_pins(lock: Lock, target: LockTarget) -> list[str]:
    """Pins with no wheel for the image's platform: the rebuild builds them from source.

    Asks the locker with building disabled; each failure names one such pin, which is
    set aside until the rest resolves from wheels alone."""
    pins = {_name(p.name): checked_pin(p.name, p.version, f"{lock.env.python} "
                                       "(state/python.json)") for p in lock.pins}
    out: list[str] = []
    for _ in range(len(pins)):
        rest = [spec for name, spec in pins.items() if name not in out]
        if not rest:
            break
        proc = _compile(lock.env, target, rest, extra=["--no-build"])
        if proc.returncode == 0:
            return sorted(out)
        m = _NO_WHEEL.search(proc.stderr)
        name = _name(m.group(1) or m.group(2)) if m else None
        if name is None or name not in pins or name in out:
            raise LockError(f"Could not tell which pins of {lock.env.python} need a build "
                            f"from source:\n{proc.stderr.strip()[-2000:]}",
                            lock_file=lock.env.lock_file)
        out.append(name)
    return sorted(out)


def _ssl_context(target: LockTarget) -> ssl.SSLContext:
    return ssl.create_default_context(
        cafile=str(target.ca_bundle) if target.ca_bundle else None)


def _fetch(url: str, target: LockTarget, accept: str | None = None) -> bytes:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=120, context=_ssl_context(target)) as resp:
            data: bytes = resp.read()
            return data
    except (OSError, ValueError) as exc:
        raise LockError(f"Could not fetch {url}: {exc}",
                        hint="Pass --ca-bundle behind a TLS proxy.") from exc


def _sdist_bytes(pin: LockedPin, env: PythonEnvPlan, target: LockTarget) -> bytes:
    """The pin's sdist, from the wheelhouse or the index's JSON API (PEP 691), checked
    against one of the lock's hashes."""
    import hashlib

    for f in wheelhouse_files(target.wheelhouse).get((_name(pin.name), pin.version), []):
        if not f.name.endswith(".whl"):
            return f.read_bytes()
    index = (env.index_url or DEFAULT_INDEX).rstrip("/")
    page = json.loads(_fetch(f"{index}/{_name(pin.name)}/", target,
                             "application/vnd.pypi.simple.v1+json"))
    for f in page.get("files", []):
        digest = (f.get("hashes") or {}).get("sha256")
        if digest in pin.hashes and not str(f.get("filename", "")).endswith(".whl"):
            data = _fetch(urllib.parse.urljoin(f"{index}/{_name(pin.name)}/", f["url"]),
                          target)
            if hashlib.sha256(data).hexdigest() != digest:
                raise LockError(f"The sdist of {pin.name}=={pin.version} does not match "
                                "its sha256.")
            return data
    raise LockError(f"No sdist of {pin.name}=={pin.version} with a locked hash on {index}.")


def sdist_build_requires(data: bytes) -> list[str]:
    """``[build-system].requires`` of an sdist's top ``pyproject.toml``, else PEP 517's
    fallback (setuptools, wheel)."""
    text: str | None = None
    try:
        if data[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = [n for n in zf.namelist() if n.count("/") == 1
                         and n.endswith("/pyproject.toml")]
                text = zf.read(names[0]).decode() if names else None
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
                members = [m for m in tf.getmembers() if m.isfile() and m.name.count("/") == 1
                           and m.name.endswith("/pyproject.toml")]
                fh = tf.extractfile(members[0]) if members else None
                text = fh.read().decode() if fh else None
    except (OSError, tarfile.TarError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise LockError(f"Could not read an sdist: {exc}") from exc
    return project_build_requires(text)


def project_build_requires(pyproject: str | None) -> list[str]:
    """Build requirements a ``pyproject.toml`` declares (None or no table: the fallback)."""
    if pyproject is None:
        return list(DEFAULT_BUILD_REQUIRES)
    try:
        table = tomllib.loads(pyproject).get("build-system")
    except tomllib.TOMLDecodeError:
        return list(DEFAULT_BUILD_REQUIRES)
    if not isinstance(table, dict) or not isinstance(table.get("requires"), list):
        return list(DEFAULT_BUILD_REQUIRES)
    reqs = [str(r) for r in table["requires"]]
    # setuptools < 70.1 asks for wheel at build time (get_requires_for_build_wheel).
    if any(_name(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) == "setuptools" for r in reqs):
        reqs.append("wheel")
    return reqs


def lock_build(lock: Lock, target: LockTarget, requires: Iterable[str]) -> tuple[LockedPin, ...]:
    """Hashed pins for ``requires`` and their dependencies; the lock's versions first."""
    reqs = sorted(set(requires))
    if not reqs:
        return ()
    # A build requirement pinned exactly (a local project's backend, as built live) is
    # not held to the environment's own version of it.
    exact = {_req_name(r) for r in reqs if "==" in r}
    from_lock = [f"{p.name}=={p.version}" for p in lock.pins if _name(p.name) not in exact]
    proc = _compile(lock.env, target, reqs, constraints=from_lock, no_deps=False)
    if proc.returncode != 0:  # the build needs versions the environment does not have
        proc = _compile(lock.env, target, reqs, no_deps=False)
    if proc.returncode != 0:
        raise LockError(f"Could not lock the build requirements {', '.join(reqs)} for "
                        f"{lock.env.python}:\n{proc.stderr.strip()[-2000:]}",
                        lock_file=lock.env.lock_file)
    hashes = {(_name(p.name), p.version): p.hashes for p in lock.pins}
    return tuple(
        LockedPin(name=name, version=ver, hashes=tuple(sorted(set(hs) | set(
            hashes.get((name, ver), ())))))
        for name, (ver, hs) in sorted(parse_compiled(proc.stdout).items()))


def local_build_requires(plan: BuildPlan, env: PythonEnvPlan,
                         source_dir: Path | None) -> list[str]:
    """Build requirements of the isolated local builds (``pip install /workspace`` without
    ``--no-build-isolation``) that run in ``env``, read from the artifact's source."""
    reqs: list[str] = []
    dest = plan.source.dest.rstrip("/")
    for step in plan.native:
        runs_in_env = installs_into(step, [env]) is not None or (
            step.argv and step.argv[0].rsplit("/", 1)[-1] == "uv" and env.python in step.argv)
        if not (step.network and step.tool.endswith("-local") and runs_in_env):
            continue
        path = step.argv[-1]
        if source_dir is None or not (path == dest or path.startswith(dest + "/")):
            reqs += DEFAULT_BUILD_REQUIRES
            continue
        text = _repo_text(source_dir, posixpath.join(path[len(dest):].lstrip("/"),
                                                     "pyproject.toml"))
        editable = "-e" in step.argv or "--editable" in step.argv
        reqs += _with_backend([*project_build_requires(text),
                               *backend_build_requires(text, editable=editable)],
                              step.build_backend)
    return reqs


#: What hatchling asks for to build an editable wheel (its
#: ``get_requires_for_build_editable``), beside its build targets' and hooks' own.
HATCHLING_EDITABLE = "editables~=0.3"


def backend_build_requires(pyproject: str | None, *, editable: bool) -> list[str]:
    """What the build backend asks for at build time beyond ``[build-system].requires``
    (PEP 517's ``get_requires_for_build_wheel``/``_editable``), read from the project's
    configuration where the backend takes it from there: hatchling's ``editables`` for an
    editable build, and the ``dependencies`` of its ``[tool.hatch.build]`` tables, its
    wheel target and their build hooks. The hooks themselves are never called here: they
    may run the project's own code (``hatch_build.py``, ``setup.py``). setuptools' ``wheel``
    is :func:`project_build_requires`'s."""
    try:
        data = tomllib.loads(pyproject) if pyproject else {}
    except tomllib.TOMLDecodeError:
        return []
    system = data.get("build-system")
    if not isinstance(system, dict) or system.get("build-backend") != "hatchling.build":
        return []
    build = _table(_table(data.get("tool")).get("hatch")).get("build")
    wheel = _table(_table(_table(build).get("targets")).get("wheel"))
    found: list[str] = [HATCHLING_EDITABLE] if editable else []
    for section in (_table(build), wheel):
        found += _strings(section.get("dependencies"))
        for hook in _table(section.get("hooks")).values():
            found += _strings(_table(hook).get("dependencies"))
    return found


def _table(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def agreeing(requires: Sequence[str]) -> list[str]:
    """``requires`` without the exact pins (``name==version``) of a package that two of them
    pin at different versions: one build environment holds one version, so such builds
    take the lock's (or the newest) instead of failing the lock."""
    exact: dict[str, set[str]] = {}
    for r in requires:
        if "==" in r:
            exact.setdefault(_req_name(r), set()).add(r.replace(" ", ""))
    split = {name for name, pins in exact.items() if len(pins) > 1}
    return [r for r in requires if "==" not in r or _req_name(r) not in split]


def _req_name(req: str) -> str:
    return _name(re.split(r"[<>=!~;\[ @]", req, maxsplit=1)[0])


def _with_backend(requires: list[str], backend: str | None) -> list[str]:
    """``requires`` and the backend that built the project live (``name==version``, its
    WHEEL generator), when the project builds with it: the rebuild takes that version, not
    the newest the index has nor the environment's own."""
    if backend and _req_name(backend) in {_req_name(r) for r in requires}:
        return [*requires, backend]
    return requires


def _repo_text(source_dir: Path, rel: str) -> str | None:
    """A pyproject.toml of the artifact's source (the agent's): a regular file under
    ``source_dir``, through no link that leads out of it, at most 1 MiB, UTF-8; None where
    there is none or it is not one."""
    try:
        return safe_io.decode_utf8(safe_io.read_beneath(source_dir, rel, 1 << 20),
                                   source_dir / rel)
    except SynthError:
        return None


def complete_lock(lock: Lock, target: LockTarget, local: Sequence[str] = (), *,
                  installer: Callable[[], LockedPin] | None = None,
                  backends: Mapping[str, str] | None = None) -> Lock:
    """``lock`` with its installer's pin (``installer``: where it comes from, when not
    :func:`lock_installer` itself) and its build constraints. ``backends``: canonical name
    -> ``name==version`` of the backend that built each installed distribution live (its
    WHEEL generator): an sdist is built with it again, as a local project is."""
    if not lock.pins and not local:
        return lock
    sdists = tuple(sdist_pins(lock, target)) if lock.pins else ()
    names = set(sdists)
    reqs = list(local)
    for pin in lock.pins:
        if _name(pin.name) in names:
            reqs += _with_backend(sdist_build_requires(_sdist_bytes(pin, lock.env, target)),
                                  (backends or {}).get(_name(pin.name)))
    build = lock_build(lock, target, agreeing(reqs))
    uv = installer() if installer is not None else lock_installer(lock.env, target)
    return dataclasses.replace(lock, installer=uv, build=build, sdists=sdists)


def lock_manifest(lock: Lock) -> dict[str, object]:
    """The manifest's entry for one lock: its pins, locker, installer and build constraints."""
    return {"python": lock.env.python, "pins": len(lock.pins), "locker": lock.locker,
            "installer": f"uv=={lock.installer.version}" if lock.installer else None,
            "build_constraints": lock.build_file if lock.build else None,
            "sdists": list(lock.sdists)}


def native_build_constraints(plan: BuildPlan,
                             locks: Sequence[Lock]) -> dict[str, dict[str, str]]:
    """For each isolated local build (a native step that builds a project with build
    isolation), the build constraints it takes (``assign``: the variables set before it;
    ``var``: the first, which names the installer). A step run by an environment's pip reads
    the pins of the environment's ``build-constraints.lock`` (versions only: pip turns hash
    checking on for the whole install when a constraint has a hash) through
    ``PIP_CONSTRAINT``, which pip before 25.3 reads into its isolated build, and
    ``PIP_BUILD_CONSTRAINT``, the only one pip 26.2 and later read there (each pip ignores
    the variable it has no option for); a step run by uv reads the hashed file through
    ``UV_BUILD_CONSTRAINT``."""
    out: dict[str, dict[str, str]] = {}
    pip_file = "/tmp/synth/pip-build-constraints.txt"
    for step in plan.native:
        if not (step.network and step.tool.endswith("-local")):
            continue
        for lk in (lk for lk in locks if lk.build):
            if installs_into(step, [lk.env]) is not None:
                out[step.ref] = {"file": lk.build_file, "var": "PIP_CONSTRAINT", "assign":
                                 f"PIP_CONSTRAINT={pip_file} PIP_BUILD_CONSTRAINT={pip_file}"}
            elif step.argv and posixpath.basename(step.argv[0]) == "uv":
                out[step.ref] = {"file": lk.build_file, "var": "UV_BUILD_CONSTRAINT",
                                 "assign": f"UV_BUILD_CONSTRAINT=/tmp/synth/{lk.build_file}"}
            else:
                continue
            break
    return out
