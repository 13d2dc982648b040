"""``requirements.lock``: exact pins with sha256 hashes, for installs with ``--require-hashes``.

The plan says *which* distributions at *which* versions (the final state); the locker asks
the indexes the run used for the hashes of those exact versions — ``uv pip compile
--generate-hashes --no-deps`` over the pinned set, on the host, for the image's Python
version and platform rather than the host's. Wheels from a wheelhouse (``--find-links``)
are hashed from the files themselves, since a resolver reports no hash for a local file.
pip-tools is the alternative locker (``--locker pip-tools``), kept for the benchmark.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from synth.config import CONTAINER_WHEELHOUSE
from synth.distill.envs import DEFAULT_INDEX
from synth.errors import LockError
from synth.formats.plan import PythonEnvPlan
from synth.formats.store import sha256_file
from synth.util.urls import without_credentials

LOCKERS = ("uv", "pip-tools")


@dataclass(frozen=True)
class LockedPin:
    name: str
    version: str
    hashes: tuple[str, ...]
    #: Wheelhouse files this pin is satisfied by (file names), empty for index pins.
    wheel_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lock:
    env: PythonEnvPlan
    pins: tuple[LockedPin, ...]
    locker: str
    #: The uv the image installs this lock with (``installer.lock``); None: no uv pin known.
    installer: LockedPin | None = None
    #: Build requirements of what the rebuild builds from source (``build_file``).
    build: tuple[LockedPin, ...] = ()
    #: Canonical names of the pins with no wheel for the image (built from their sdist).
    sdists: tuple[str, ...] = ()
    #: The py-rattler that recreates the environment's conda prefix first
    #: (``conda-installer.lock``, synth.export.conda_lock); None: not a recreated prefix.
    conda_installer: LockedPin | None = None

    @property
    def wheel_files(self) -> tuple[str, ...]:
        return tuple(sorted({f for p in self.pins for f in p.wheel_files}))

    @property
    def build_file(self) -> str:
        """``build-constraints.lock`` beside ``requirements.lock`` (a second environment's
        ``requirements-usr.lock`` gets ``build-constraints-usr.lock``)."""
        stem = self.env.lock_file.removesuffix(".lock").removeprefix("requirements")
        return f"build-constraints{stem}.lock"


@dataclass(frozen=True)
class LockTarget:
    """Where the lock is for: the image's Python and platform, and the host wheelhouse."""

    python_version: str
    platform: str
    wheelhouse: Path | None
    ca_bundle: Path | None


def target_for(env: PythonEnvPlan, glibc: str | None, wheelhouse: Path | None,
               ca_bundle: Path | None) -> LockTarget:
    m = re.match(r"(\d+)\.(\d+)", env.version)
    py = f"{m.group(1)}.{m.group(2)}" if m else "3.11"
    g = re.match(r"(\d+)\.(\d+)", glibc or "")
    platform = f"x86_64-manylinux_{g.group(1)}_{g.group(2)}" if g else "x86_64-manylinux_2_28"
    return LockTarget(py, platform, wheelhouse, ca_bundle)


def _wheel_key(filename: str) -> tuple[str, str] | None:
    """(canonical name, version) of a wheel or sdist file name; None for anything else."""
    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return str(name), str(version)


def wheelhouse_files(wheelhouse: Path | None) -> dict[tuple[str, str], list[Path]]:
    out: dict[tuple[str, str], list[Path]] = {}
    if wheelhouse is None or not wheelhouse.is_dir():
        return out
    for f in sorted(wheelhouse.iterdir()):
        key = _wheel_key(f.name)
        if key and f.is_file():
            out.setdefault(key, []).append(f)
    return out


def _host_find_links(env: PythonEnvPlan, target: LockTarget) -> list[str]:
    out: list[str] = []
    for fl in env.find_links:
        if "://" in fl and not fl.startswith("file://"):
            out.append(fl)
        elif target.wheelhouse is not None and (fl.rstrip("/") == CONTAINER_WHEELHOUSE
                                                or fl.startswith(CONTAINER_WHEELHOUSE + "/")):
            out.append(str(target.wheelhouse))
    if target.wheelhouse is not None and str(target.wheelhouse) not in out and any(
        "+" in v for _, v in env.pins
    ):
        # A local version label (torch 2.13.0+cpu) comes from a wheelhouse, never PyPI.
        out.append(str(target.wheelhouse))
    return out


def clean_env(ca_bundle: Path | None, keep: Collection[str] = ()) -> dict[str, str]:
    """This process's environment for a host pip or uv: no ``PIP_*``, ``UV_*`` (but
    ``keep``) or active venv, no pip configuration file, and ``ca_bundle`` trusted."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith(("PIP_", "UV_")) or k in keep) and k != "VIRTUAL_ENV"}
    if ca_bundle is not None:
        env["SSL_CERT_FILE"] = str(ca_bundle)
        env["REQUESTS_CA_BUNDLE"] = str(ca_bundle)
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


_PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def parse_compiled(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``name -> (version, hashes)`` from a ``--generate-hashes`` requirements file."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _PIN_LINE.match(line)
        if m:
            current = canonicalize_name(m.group(1))
            out[current] = (m.group(2), ())
        for h in _HASH.findall(line):
            if current is not None:
                version, hashes = out[current]
                out[current] = (version, (*hashes, h))
    return out


#: A requirement line synth writes for the host's locker: PEP 508 names and PEP 440-like
#: versions only. Both come from the run (its final state, the repository's pyproject.toml:
#: the agent's), and a requirements file reads a line starting with `-` as an option
#: (`-i URL`, `-r /a/host/file`, `-e PATH`).
_PIN_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_PIN_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def checked_pin(name: str, version: str, where: str) -> str:
    """``name==version`` for a requirements file, or LockError naming what is wrong."""
    if not (_PIN_NAME.fullmatch(name) and _PIN_VERSION.fullmatch(version)):
        raise LockError(f"{where}: {name[:100]!r}=={version[:100]!r} is not a distribution "
                        "name and version; synth does not give it to the locker.")
    return f"{name}=={version}"


def checked_requirement(text: str, where: str) -> str:
    """A PEP 508 requirement (a build requirement a pyproject.toml declares) for a
    requirements file: no option, no URL or path (``name @ file:///…``), one line; else
    LockError naming it."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement:
        req = None
    if req is None or req.url is not None or "\n" in text or text.lstrip().startswith("-"):
        raise LockError(f"{where}: {text[:200]!r} is not a requirement synth gives the locker "
                        "(a name with versions and markers; no option, URL or path).")
    return text.strip()


def _index(url: str) -> str:
    """An index the run used, for the host's locker: an http(s) URL only (a ``file://``
    index would read a host folder)."""
    if not url.startswith(("https://", "http://")):
        raise LockError(f"The index {url[:200]!r} is not an http(s) URL; synth's locker "
                        "reads no local index.")
    return url


def _compile_argv(locker: str, env: PythonEnvPlan, target: LockTarget,
                  infile: Path) -> list[str]:
    indexes = ["--index-url", _index(env.index_url or DEFAULT_INDEX)]
    for u in env.extra_index_urls:
        indexes += ["--extra-index-url", _index(u)]
    links: list[str] = []
    for fl in _host_find_links(env, target):
        links += ["--find-links", fl]
    if locker == "uv":
        from uv import find_uv_bin

        return [find_uv_bin(), "pip", "compile", "--no-config", "--generate-hashes",
                "--no-deps", "--no-header", "--no-annotate", "--quiet",
                "--python-version", target.python_version, "--python-platform", target.platform,
                *(["--index-strategy", "unsafe-best-match"] if env.extra_index_urls else []),
                *indexes, *links, str(infile)]
    if locker == "pip-tools":
        exe = shutil.which("pip-compile") or str(Path(sys.executable).parent / "pip-compile")
        return [exe, "--generate-hashes", "--no-header", "--no-annotate", "--allow-unsafe",
                "--quiet", "--output-file", "-", "--pip-args", "--no-deps",
                *indexes, *links, str(infile)]
    raise LockError(f"unknown locker {locker!r}; choose one of {', '.join(LOCKERS)}")


#: uv's answer for a pin no index page it read lists.
_NO_VERSION = re.compile(r"there is no version of ([A-Za-z0-9][A-Za-z0-9._-]*)==")


def refreshed(argv: Sequence[str],
              proc: subprocess.CompletedProcess[str]) -> list[str] | None:
    """``argv`` again with ``--refresh-package NAME`` where uv failed because no version of
    a pin the run installed was listed: an index page of uv's cache older than the release
    (or one read while another uv rewrote it), which uv then fetches again; None otherwise
    (one retry, uv only)."""
    m = _NO_VERSION.search(proc.stderr) if proc.returncode != 0 else None
    if m is None or Path(argv[0]).name != "uv" or "--refresh-package" in argv:
        return None
    return [*argv[:-1], "--refresh-package", m.group(1), argv[-1]]


def run_locker(argv: Sequence[str], target: LockTarget,
               cwd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a locker (its environment without the host's settings, the CA bundle given),
    asked once more with a package refreshed where :func:`refreshed` says so. OSError or
    TimeoutExpired are the caller's to name."""
    def run(words: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(words), capture_output=True, text=True, timeout=600,
                              env=clean_env(target.ca_bundle), cwd=cwd, check=False)

    proc = run(argv)
    again = refreshed(argv, proc)
    return run(again) if again is not None else proc


def lock_env(env: PythonEnvPlan, target: LockTarget, *, locker: str = "uv") -> Lock:
    """Hashes for every pin of ``env``; raises :class:`LockError` naming what failed."""
    wheels = wheelhouse_files(target.wheelhouse)
    pins = list(env.pins)
    if not pins:
        return Lock(env=env, pins=(), locker=locker)
    with tempfile.TemporaryDirectory(prefix="synth-lock-") as tmp:
        infile = Path(tmp) / "pins.in"
        infile.write_text("".join(checked_pin(n, v, f"{env.python} (state/python.json)") + "\n"
                                  for n, v in pins), encoding="utf-8")
        argv = _compile_argv(locker, env, target, infile)
        try:
            proc = run_locker(argv, target, tmp)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LockError(f"{argv[0]} could not run: {exc}", lock_file=env.lock_file) from exc
    if proc.returncode != 0:
        tried = ", ".join([env.index_url, *env.extra_index_urls,
                           *_host_find_links(env, target)])
        raise LockError(
            f"Locking {len(pins)} pins for {env.python} failed with {locker} "
            f"(tried {tried}):\n{proc.stderr.strip()[-3000:]}",
            hint="Was the index reachable (pass --ca-bundle behind a TLS proxy)? A pin with a "
            "local version label (+cpu) needs the run's wheelhouse: --wheelhouse or "
            "SYNTH_WHEELHOUSE.", lock_file=env.lock_file,
        )
    compiled = parse_compiled(proc.stdout)
    locked: list[LockedPin] = []
    for name, version in pins:
        got = compiled.get(canonicalize_name(name))
        hashes = set(got[1]) if got else set()
        files = wheels.get((canonicalize_name(name), version), [])
        hashes.update(sha256_file(f) for f in files)
        if not hashes:
            raise LockError(
                f"No hash for {name}=={version}: neither the indexes "
                f"({', '.join([env.index_url, *env.extra_index_urls])}) nor the wheelhouse "
                f"({target.wheelhouse or 'none given'}) have it.",
                hint="Pass the wheelhouse the run used with --wheelhouse / SYNTH_WHEELHOUSE.",
                lock_file=env.lock_file,
            )
        locked.append(LockedPin(name=name, version=version, hashes=tuple(sorted(hashes)),
                                wheel_files=tuple(sorted(f.name for f in files))))
    return Lock(env=env, pins=tuple(locked), locker=locker)


def lock_options(env: PythonEnvPlan, wheel_files: Sequence[str]) -> list[str]:
    """Index options written into the lock file, as the image will see them."""
    lines = [f"--index-url {without_credentials(env.index_url or DEFAULT_INDEX)}"]
    lines += [f"--extra-index-url {without_credentials(u)}" for u in env.extra_index_urls]
    links = [without_credentials(fl) for fl in env.find_links
             if "://" in fl and not fl.startswith("file://")]
    if wheel_files:
        links.append(CONTAINER_WHEELHOUSE)
    lines += [f"--find-links {fl}" for fl in sorted(set(links))]
    return lines


def render_lock(lock: Lock, header: Sequence[str]) -> str:
    """The lock file text: header comments, index options, sorted pins with hashes."""
    out = [f"# {line}" for line in header]
    out += lock_options(lock.env, lock.wheel_files)
    for pin in sorted(lock.pins, key=lambda p: canonicalize_name(p.name)):
        out.append(f"{pin.name}=={pin.version} \\")
        for i, h in enumerate(pin.hashes):
            out.append(f"    --hash=sha256:{h}" + (" \\" if i < len(pin.hashes) - 1 else ""))
    return "\n".join(out) + "\n"
