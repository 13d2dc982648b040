"""``synth doctor``: is this machine ready? Each failing item says how to fix it."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from synth.config import Settings
from synth.engine import disk_budget
from synth.engine.base import ContainerSpec, Engine, Mount
from synth.engine.base_images import KNOWN_BASES
from synth.engine.build import find_build_cli, find_builders
from synth.errors import EngineUnavailableError, SynthError
from synth.formats.limits import Limits
from synth.util.disk import human

Status = Literal["ok", "warn", "fail"]
#: Seconds the engine may take to answer one of doctor's questions.
ENGINE_TIMEOUT = 10


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorReport:
    """``synth doctor``'s outcome: every check, in the order they ran."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """No check failed (warnings are fine)."""
        return all(c.status != "fail" for c in self.checks)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "checks": [c.to_json() for c in self.checks]}


def diagnose(settings: Settings, engine: Engine) -> DoctorReport:
    """Run every check (``synth doctor``) on ``engine``, in the order they are shown; an
    engine that does not answer fails the first check and skips those that need it."""
    engine_check = _engine_check(engine)
    answers = engine_check.status == "ok"
    checks = [engine_check, _buildkit_check(settings), builders_check(settings),
              _debootstrap_check()]
    if answers:
        checks += [_gpu_check(engine), _limits_check(engine), *_base_checks(engine)]
    checks.append(disk_check(disk_budget.engine_data_root(engine), settings.artifacts_dir))
    checks.append(_ca_bundle_check(settings))
    if answers:
        checks.append(tls_check(engine, settings))
    if settings.wheelhouse:
        checks.append(Check("wheelhouse", "ok", str(settings.wheelhouse)))
    return DoctorReport(tuple(checks))


def _engine_check(engine: Engine) -> Check:
    try:
        v = engine.version()
    except EngineUnavailableError as exc:
        return Check("engine", "fail", exc.message, exc.hint)
    return Check("engine", "ok", f"Docker {v.get('Version')} (API {v.get('ApiVersion')}) at "
                 f"{engine.address}")


def disk_check(data_root: Path | None, artifacts: Path, *,
               usage: disk_budget.DiskUsage | None = None) -> Check:
    """The free space of the engine's data root and of the artifacts folder; ``warn`` when
    a run and a rebuild (a bench cell) would not fit."""
    spaces = disk_budget.free_spaces(data_root, artifacts, usage=usage)
    detail = "; ".join(f"{place} {path}: " + (human(free) + " free" if free is not None
                                              else "not readable")
                       for place, (path, free) in spaces.items())
    if data_root is None:
        detail += "; the engine's data root is unknown (no engine answers)"
    short = [place for place, (_p, free) in spaces.items() if free is not None and free < (
        disk_budget.RUN_FLOOR + disk_budget.REBUILD_FLOOR if place == "engine data root"
        else disk_budget.ARTIFACTS_FLOOR)]
    if short:
        return Check("disk", "warn", detail + "; short for a run and a rebuild: "
                     + ", ".join(short), disk_budget.FREE_HINT)
    return Check("disk", "ok", detail)


def _limits_check(engine: Engine) -> Check:
    """The limits every container synth starts gets by default, and whether a disk limit
    (--disk, [limits] disk) would be enforced here."""
    disk = ("a disk limit is enforced" if engine.disk_limits_supported() else
            "a disk limit (--disk) is not enforced by this storage driver (overlay2 needs "
            "xfs with project quotas); a session still stops its agent below "
            f"{human(disk_budget.SESSION_RESERVE)} free on the engine's data root")
    return Check("limits", "ok", f"defaults: {Limits.host_default().describe()}; {disk}")


def _buildkit_check(settings: Settings) -> Check:
    try:
        cli = find_build_cli(settings.docker_cli)
    except SynthError as exc:
        return Check("buildkit_cli", "fail", exc.message, exc.hint)
    how = "docker buildx build" if cli.mode == "buildx" else "DOCKER_BUILDKIT=1 docker build"
    return Check("buildkit_cli", "ok", f"{cli.path} {cli.client_version} via {how}")


def builders_check(settings: Settings) -> Check:
    """Every builder an artifact's reader could use here, and what each cannot do (the
    artifact README gives one command per builder)."""
    builders = find_builders(settings.docker_cli)
    if not builders:
        return Check("builders", "warn", "no docker CLI, Podman or Buildah found",
                     "Install docker.io (or the buildx plugin), or podman.")
    full = [b for b in builders if b.cannot is None]
    return Check("builders", "ok" if full else "warn",
                 "; ".join(b.describe() for b in builders),
                 None if full else "Install the buildx plugin, or podman: the legacy builder "
                 "cannot pass the CA secret, so it builds only without a TLS-intercepting "
                 "proxy (or a bundled artifact, with no network).")


def _debootstrap_check() -> Check:
    deboot = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if not deboot:
        return Check("debootstrap", "warn", "not installed: base images cannot be made locally",
                     "apt-get install debootstrap")
    root = "" if os.geteuid() == 0 else " (needs root to run)"
    return Check("debootstrap", "ok" if not root else "warn", deboot + root)


def _gpu_check(engine: Engine) -> Check:
    if engine.has_gpu_runtime():
        return Check("gpu_runtime", "ok", "NVIDIA runtime registered")
    return Check(
        "gpu_runtime", "warn",
        "no GPU runtime on this engine: C2-C4 will be skipped in containers",
        "Install the NVIDIA Container Toolkit, or verify GPU hosts with "
        "`synth verify --runtime host --python PATH`.",
    )


def _base_checks(engine: Engine) -> list[Check]:
    checks = []
    for name in sorted(KNOWN_BASES):
        ref = f"{name}:bookworm"
        if engine.image_exists(ref):
            checks.append(Check(f"base:{ref}", "ok", "present"))
        else:
            checks.append(Check(
                f"base:{ref}", "warn", "missing (made automatically when a task needs it)",
                f"synth base bootstrap --tag {ref}",
            ))
    return checks


def _ca_bundle_check(settings: Settings) -> Check:
    if settings.ca_bundle:
        return Check("ca_bundle", "ok", str(settings.ca_bundle))
    return Check(
        "ca_bundle", "warn",
        "none configured: fine without an intercepting proxy (tls_in_container says)",
        "Behind a TLS-intercepting proxy, set SYNTH_CA_BUNDLE or pass --ca-bundle "
        "(e.g. /etc/ssl/certs/ca-certificates.crt).",
    )


# ------------------------------------------------------------------ TLS in a container
#: The package index every Python setup reaches first.
INDEX_URL = "https://pypi.org/simple/pip/"
TLS_BASE = "synth/python:bookworm"
HOST_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_PROBE = ("import sys, urllib.request\n"
          "try:\n"
          "    urllib.request.urlopen(sys.argv[1], timeout=20).read(64)\n"
          "except Exception as exc:\n"
          "    print(type(exc).__name__, exc)\n"
          "    sys.exit(1)\n")


@dataclass(frozen=True)
class TlsAttempt:
    """One HTTPS request from inside a container, with one CA bundle (None: the image's)."""

    bundle: Path | None
    ok: bool
    detail: str

    @property
    def cert_failure(self) -> bool:
        return "CERTIFICATE_VERIFY_FAILED" in self.detail


def tls_attempts(engine: Engine, bundles: list[Path | None],
                 image: str = TLS_BASE, url: str = INDEX_URL) -> list[TlsAttempt]:
    """One throwaway container of ``image``; one request to ``url`` per bundle, each mounted
    read-only and named by SSL_CERT_FILE (as synth does for sessions and builds)."""
    mounts = [Mount(b, f"/synth/ca/{i}.crt") for i, b in enumerate(bundles) if b is not None]
    spec = ContainerSpec(image=image, mounts=mounts, labels={"synth.kind": "doctor"})
    attempts = []
    with engine.container(spec) as c:
        for i, bundle in enumerate(bundles):
            env = {"SSL_CERT_FILE": f"/synth/ca/{i}.crt"} if bundle is not None else {}
            res = c.exec(["python3", "-c", _PROBE, url], env=env, timeout=60)
            detail = (res.stdout.strip() or res.stderr.strip()).splitlines()
            attempts.append(TlsAttempt(bundle, res.ok, detail[-1][:300] if detail else ""))
    return attempts


def tls_check(engine: Engine, settings: Settings) -> Check:
    """Does HTTPS to the package index work from inside a container, and with which bundle?"""
    name = "tls_in_container"
    if not engine.image_exists(TLS_BASE):
        return Check(name, "warn", f"not tested: {TLS_BASE} is missing",
                     f"synth base bootstrap --tag {TLS_BASE}")
    bundles: list[Path | None] = [None]
    if settings.ca_bundle is not None:
        bundles.append(settings.ca_bundle)
    elif HOST_BUNDLE.is_file():
        bundles.append(HOST_BUNDLE)
    try:
        attempts = tls_attempts(engine, bundles)
    except SynthError as exc:
        return Check(name, "warn", f"not tested: {exc.message}")
    return judge_tls(attempts, settings.ca_bundle)


def judge_tls(attempts: list[TlsAttempt], configured: Path | None) -> Check:
    """Which request worked, and what to pass."""
    name = "tls_in_container"
    plain = attempts[0]
    with_bundle = attempts[1] if len(attempts) > 1 else None
    said = f"HTTPS to {INDEX_URL} from a container"
    if plain.ok:
        return Check(name, "ok", f"{said} works without a CA bundle"
                     + (f" and with {configured}" if configured and with_bundle
                        and with_bundle.ok else ""))
    if with_bundle is not None and with_bundle.ok and configured is not None:
        return Check(name, "ok", f"{said} needs the CA bundle {configured} (configured); "
                     f"without it: {plain.detail}")
    if with_bundle is not None and with_bundle.ok:
        return Check(name, "fail", f"{said} fails without a CA bundle ({plain.detail}) and "
                     f"works with {with_bundle.bundle}",
                     f"Pass --ca-bundle {with_bundle.bundle} or set "
                     f"SYNTH_CA_BUNDLE={with_bundle.bundle}.")
    if plain.cert_failure:
        return Check(name, "fail", f"{said} fails certificate verification: {plain.detail}"
                     + (f"; with {configured}: {with_bundle.detail}" if with_bundle else ""),
                     "Pass the bundle that holds your proxy's CA with --ca-bundle or "
                     "SYNTH_CA_BUNDLE.")
    return Check(name, "warn", f"{said} fails: {plain.detail}",
                 "Check the engine's network and proxy settings (HTTPS_PROXY).")
