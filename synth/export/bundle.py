"""``synth export --bundle``: every file the Dockerfile would fetch, inside the artifact.

``vendor/`` holds the .debs of apt.lock (``vendor/debs/``, fetched from the recorded mirror
or the snapshot archive), the wheels and sdists of every Python lock (``vendor/wheels/``:
``pip download --no-deps --require-hashes`` for the image's Python and platform, plus the
wheelhouse files the lock pins, and the py-rattler that links conda prefixes), the archives
of every conda lock (``vendor/conda/``, fetched from their URLs) and the files the run
downloaded (``vendor/files/<sha256>``, read from the run's live image). Each file is
checked against the hash its lock records before it is kept, so a bundled artifact builds
with no network at all (``docker build --network none``; ``synth verify --rebuild
--offline``).

Fetched files are cached by sha256 under ``$XDG_CACHE_HOME/synth/vendor`` (a re-export
costs no download); what lands in ``vendor/`` is the checked bytes, so two exports of one
run give byte-identical bundles.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from synth.config import Settings
from synth.distill.plan import DEFAULT_INDEX, BuildPlan, NativeStep
from synth.errors import ExportError
from synth.export.apt_source import AptSources
from synth.export.build_lock import native_build_constraints
from synth.export.live_facts import LiveImage
from synth.export.lock import Lock, wheelhouse_files
from synth.formats.state import DebRecord
from synth.formats.store import sha256_file
from synth.util.disk import (
    FULL_ERRNOS,
    disk_full_error,
    from_os_error,
    human,
    log_says_disk_full,
)

VENDOR = "vendor"
#: Where the build mounts ``vendor/`` (read-only bind mounts, nothing lands in a layer).
BUILD_VENDOR = "/synth/vendor"
KINDS = ("deb", "wheel", "sdist", "conda", "python", "file")


@dataclass(frozen=True)
class BundleFile:
    path: str  # relative to the artifact, e.g. vendor/debs/gcc-12_12.2.0-14_amd64.deb
    kind: str
    sha256: str
    size: int


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "synth" / "vendor"


def _ssl_context(settings: Settings) -> ssl.SSLContext:
    if settings.ca_bundle is not None:
        return ssl.create_default_context(cafile=str(settings.ca_bundle))
    return ssl.create_default_context()


def _fetch(url: str, sha256: str, settings: Settings) -> Path | None:
    """The file at ``url`` if its bytes hash to ``sha256`` (cached by hash), else None."""
    cached = _cache_dir() / sha256
    if cached.is_file() and sha256_file(cached) == sha256:
        return cached
    try:
        got, digest = fetch_hashed(url, settings)
    except ExportError:  # unreachable: the caller says what it was for
        return None
    if digest != sha256:
        got.unlink(missing_ok=True)
        return None
    return got


def fetch_hashed(url: str, settings: Settings,
                 max_bytes: int | None = None) -> tuple[Path, str]:
    """The file at ``url``, downloaded into the cache and named by its sha256, hashed as it
    arrives; ``(path, sha256)``. One over ``max_bytes`` is refused."""
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".new.{os.getpid()}.part"
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=300, context=_ssl_context(settings)) as resp, \
                tmp.open("wb") as fh:
            while chunk := resp.read(1 << 20):
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise ExportError(f"{url} is larger than {max_bytes >> 20} MiB: not "
                                      "downloaded.")
                digest.update(chunk)
                fh.write(chunk)
    except ExportError:
        tmp.unlink(missing_ok=True)
        raise
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            raise from_os_error(exc, tmp) from exc
        raise ExportError(f"{url} could not be downloaded: {exc}",
                          hint="Check that it is reachable from this machine (pass "
                          "--ca-bundle behind a TLS proxy).") from exc
    sha256 = digest.hexdigest()
    tmp.replace(cache / sha256)
    return cache / sha256, sha256


def _deb_urls(deb: DebRecord, apt: AptSources) -> list[str]:
    archive = deb.mirror.rstrip("/").rsplit("/", 1)[-1]
    archive = archive if archive in ("debian-security", "debian-ports",
                                     "debian-debug") else "debian"
    urls = {"mirror": f"{deb.mirror.rstrip('/')}/{deb.filename}",
            "snapshot": (apt.url or "").replace("{archive}", archive) + deb.filename}
    return [urls[src] for src in apt.order if src == "mirror" or apt.url]


def vendor_debs(plan: BuildPlan, apt: AptSources, settings: Settings,
                dest: Path) -> list[BundleFile]:
    """Every hashed .deb of apt.lock under ``dest/vendor/debs/``; refuses unhashed pins."""
    if plan.apt.unhashed:
        raise ExportError(
            "--bundle needs the .deb of every apt package, and apt's indexes in the run did "
            f"not describe {', '.join(n for n, _ in plan.apt.unhashed)} (no sha256 recorded).",
            hint="Export without --bundle; the build then installs those by version.")
    out = []
    for deb in plan.apt.debs:
        urls = _deb_urls(deb, apt)
        got = next((p for u in urls if (p := _fetch(u, deb.sha256, settings))), None)
        if got is None:
            raise ExportError(f"--bundle: no source gave {deb.name}={deb.version}'s .deb with "
                              f"the sha256 apt.lock records ({deb.sha256[:12]}…); tried "
                              + ", ".join(urls) + ".",
                              hint="Check the network, or give a snapshot mirror that still "
                              "has it with --apt-snapshot URL-TEMPLATE.")
        rel = f"{VENDOR}/debs/{deb.filename.rsplit('/', 1)[-1]}"
        _place(got, dest / rel)
        out.append(BundleFile(rel, "deb", deb.sha256, got.stat().st_size))
    return out


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _platforms(glibc: str | None) -> list[str]:
    """pip's ``--platform`` list for the image's glibc (pip does not expand manylinux_2_X)."""
    try:
        minor = int((glibc or "2.28").split(".")[1])
    except (IndexError, ValueError):
        minor = 28
    tags = [f"manylinux_2_{m}_x86_64" for m in range(minor, 4, -1)]
    return [*tags, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64",
            "linux_x86_64"]


def _pip_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_")) and k != "VIRTUAL_ENV"}
    env["PIP_CONFIG_FILE"] = os.devnull
    if settings.ca_bundle is not None:
        env["PIP_CERT"] = env["SSL_CERT_FILE"] = str(settings.ca_bundle)
    return env


def _pip_download(lock: Lock, glibc: str | None, settings: Settings, into: Path) -> None:
    pins = [p for p in lock.pins if not p.wheel_files]
    if not pins:
        return
    req = into / "requirements.txt"
    req.write_text("".join(f"{p.name}=={p.version} "
                           + " ".join(f"--hash=sha256:{h}" for h in p.hashes) + "\n"
                           for p in pins), encoding="utf-8")
    major, _, minor = lock.env.version.partition(".")
    minor = minor.split(".")[0] or "11"
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
            "--disable-pip-version-check", "--quiet", "--dest", str(into / "out"),
            "--python-version", f"{major}.{minor}", "--implementation", "cp",
            "--abi", f"cp{major}{minor}", "--abi", "abi3", "--abi", "none",
            "--index-url", lock.env.index_url or DEFAULT_INDEX]
    argv += [a for u in lock.env.extra_index_urls for a in ("--extra-index-url", u)]
    argv += [a for fl in lock.env.find_links if "://" in fl and not fl.startswith("file://")
             for a in ("--find-links", fl)]
    argv += [a for p in _platforms(glibc) for a in ("--platform", p)]
    try:
        proc = subprocess.run([*argv, "-r", str(req)], capture_output=True, text=True,
                              timeout=1800, env=_pip_env(settings), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"--bundle: pip download could not run: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
        if log_says_disk_full(tail):
            raise disk_full_error(into, what="downloading the wheels of --bundle into")
        raise ExportError(f"--bundle: pip download of {lock.env.lock_file}'s pins failed "
                          f"(exit {proc.returncode}):\n{tail}",
                          hint="Is the index reachable (--ca-bundle behind a proxy)?")


def _with_build_inputs(lock: Lock) -> Lock:
    """The lock with the uv that installs it (installer.lock) and its build constraints:
    the build needs their files too."""
    extra = (((lock.installer,) if lock.installer else ()) + lock.build
             + ((lock.conda_installer,) if lock.conda_installer else ()))
    return dataclasses.replace(lock, pins=(*lock.pins, *extra)) if extra else lock


def vendor_python(locks: Sequence[Lock], glibc: str | None, settings: Settings,
                  wheelhouse: Path | None, dest: Path) -> list[BundleFile]:
    """Every pinned distribution's file under ``dest/vendor/wheels/``, each hash-checked."""
    files: dict[str, BundleFile] = {}
    local = {f.name: f for fs in wheelhouse_files(wheelhouse).values() for f in fs}
    for lock in map(_with_build_inputs, locks):
        allowed = {h for p in lock.pins for h in p.hashes}
        with tempfile.TemporaryDirectory(prefix="synth-bundle-") as tmp:
            _pip_download(lock, glibc, settings, Path(tmp))
            got = sorted((Path(tmp) / "out").glob("*")) if (Path(tmp) / "out").is_dir() else []
            for name in lock.wheel_files:
                if name not in local:
                    raise ExportError(f"--bundle: the wheelhouse lacks {name}, which "
                                      f"{lock.env.lock_file} pins.",
                                      hint="Pass --wheelhouse DIR holding it.")
                got.append(local[name])
            for path in got:
                digest = sha256_file(path)
                if digest not in allowed:
                    raise ExportError(f"--bundle: {path.name} hashes to {digest}, which "
                                      f"{lock.env.lock_file} does not list.")
                rel = f"{VENDOR}/wheels/{path.name}"
                _place(path, dest / rel)
                kind = "wheel" if path.name.endswith(".whl") else "sdist"
                files[rel] = BundleFile(rel, kind, digest, path.stat().st_size)
    return [files[k] for k in sorted(files)]


def vendor_conda(plan: BuildPlan, settings: Settings, dest: Path) -> list[BundleFile]:
    """Every archive of every conda lock under ``dest/vendor/conda/`` (by its file name:
    conda-install.py takes a package from there before its URL), each sha256-checked."""
    out: dict[str, BundleFile] = {}
    for env in plan.conda:
        for pin in env.packages:
            if not pin.sha256:
                raise ExportError(
                    f"--bundle: conda-meta recorded no sha256 for {pin.name} {pin.version} "
                    f"({env.prefix}), only an md5: the bundle keeps sha256-checked files only.",
                    hint="Export without --bundle; the build then fetches it from "
                    f"{pin.url} and checks its md5.")
            fn = pin.url.rsplit("/", 1)[-1]
            rel = f"{VENDOR}/conda/{fn}"
            if rel in out:
                if out[rel].sha256 != pin.sha256:
                    raise ExportError(f"--bundle: two conda packages named {fn} differ "
                                      "(two channels): the bundle keeps one file per name.")
                continue
            got = _fetch(pin.url, pin.sha256, settings)
            if got is None:
                raise ExportError(f"--bundle: {pin.url} is unreachable or no longer has the "
                                  f"sha256 {env.lock_file} records ({pin.sha256[:12]}…).",
                                  hint="Check that the channel is reachable from this machine.")
            _place(got, dest / rel)
            out[rel] = BundleFile(rel, "conda", pin.sha256, got.stat().st_size)
    return [out[k] for k in sorted(out)]


def vendor_pythons(plan: BuildPlan, settings: Settings, dest: Path) -> list[BundleFile]:
    """The archive of every downloaded interpreter under ``dest/vendor/python/`` (by its
    file name: install-managed-python.py takes it from there before its URL)."""
    out = []
    for p in plan.pythons:
        assert p.url and p.sha256, "resolved by synth.export.managed_python"
        got = _fetch(p.url, p.sha256, settings)
        if got is None:
            raise ExportError(f"--bundle: {p.url} is unreachable or no longer has the "
                              f"sha256 managed-python.lock records ({p.sha256[:12]}…).",
                              hint="Check that it is reachable from this machine.")
        rel = f"{VENDOR}/python/{archive_name(p.url)}"
        _place(got, dest / rel)
        out.append(BundleFile(rel, "python", p.sha256, got.stat().st_size))
    return sorted(out, key=lambda f: f.path)


def archive_name(url: str) -> str:
    """The file name an archive is kept under: its URL's last part, unquoted. The URL came
    from what a run named: a part that unquotes to a path (``..%2F..``), to ``.`` or ``..``
    or to nothing names no file of ``vendor/`` and is refused."""
    name = urllib.parse.unquote(url.rstrip("/").rsplit("/", 1)[-1])
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ExportError(f"{url}: its last part names no plain file ({name!r}).",
                          hint="An archive's URL must end in its file name.")
    return name


def vendor_downloads(plan: BuildPlan, live: LiveImage, dest: Path) -> list[BundleFile]:
    """The downloaded files the Dockerfile replays, read from the run's live image."""
    steps = [s for s in plan.native if s.check_sha256]
    if not steps:
        return []
    if live.ref is None:
        raise ExportError("--bundle: the run downloaded files and has no live image to "
                          "read them from.")
    out = []
    c = live.container()
    for s in steps:
        assert s.check_sha256 is not None
        digest, path = s.check_sha256
        data = c.read_file(path)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise ExportError(f"--bundle: {path} in the live image {live.ref} is gone "
                              f"or no longer hashes to {digest[:12]}….", path=path)
        rel = f"{VENDOR}/files/{digest}"
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
        out.append(BundleFile(rel, "file", digest, len(data)))
    return sorted(out, key=lambda f: f.path)


def online_steps(plan: BuildPlan, locks: Sequence[Lock] = ()) -> list[NativeStep]:
    """Kept steps that still reach the network in a bundled build: no vendored input. An
    isolated local build whose build requirements are locked (build-constraints.lock,
    vendored) installs them from ``vendor/wheels`` instead."""
    local = native_build_constraints(plan, locks)
    return [s for s in plan.native if s.network and not s.check_sha256 and s.ref not in local]


def summary(files: Sequence[BundleFile], plan: BuildPlan,
            locks: Sequence[Lock] = ()) -> dict[str, object]:
    """The bundle in the report and the manifest: size, breakdown by kind, offline or not."""
    by_kind = {k: {"files": sum(1 for f in files if f.kind == k),
                   "bytes": sum(f.size for f in files if f.kind == k)} for k in KINDS}
    online = online_steps(plan, locks)
    return {"dir": VENDOR, "files": len(files), "bytes": sum(f.size for f in files),
            "by_kind": by_kind, "offline": not online,
            "needs_network": [f"{s.ref}: {s.tool}" for s in online]}


def make_bundle(plan: BuildPlan, locks: Sequence[Lock], apt: AptSources, settings: Settings,
                wheelhouse: Path | None, live: LiveImage, dest: Path) -> dict[str, object]:
    """Fill ``dest/vendor`` and return its :func:`summary`; downloads come from ``live``."""
    files = [*vendor_debs(plan, apt, settings, dest),
             *vendor_python(locks, plan.glibc, settings, wheelhouse, dest),
             *vendor_conda(plan, settings, dest),
             *vendor_pythons(plan, settings, dest),
             *vendor_downloads(plan, live, dest)]
    return summary(files, plan, locks)


def describe(bundle: dict[str, object]) -> str:
    """One line: ``vendor/: 42 files, 61.3 MiB (deb 30 files 40.1 MiB, wheel …)``."""
    by_kind = bundle["by_kind"]
    assert isinstance(by_kind, dict)
    parts = [f"{k} {v['files']} files {human(int(v['bytes']))}"
             for k, v in by_kind.items() if v["files"]]
    return (f"vendor/: {bundle['files']} files, {human(int(str(bundle['bytes'])))}"
            + (f" ({', '.join(parts)})" if parts else ""))
