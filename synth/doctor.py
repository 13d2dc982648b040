"""``synth doctor``: is this machine ready? Each failing item says how to fix it."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from synth.base_images import KNOWN_BASES
from synth.config import Settings
from synth.engine.build import find_build_cli
from synth.engine.docker import DockerEngine, docker_host
from synth.errors import EngineUnavailableError, SynthError

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    checks: list[Check] = []
    engine: DockerEngine | None = None
    try:
        engine = DockerEngine.connect(timeout=10)
        v = engine.version()
        checks.append(Check(
            "engine", "ok",
            f"Docker {v.get('Version')} (API {v.get('ApiVersion')}) at {docker_host()}",
        ))
    except EngineUnavailableError as exc:
        checks.append(Check("engine", "fail", exc.message, exc.hint))

    try:
        cli = find_build_cli(settings.docker_cli)
        how = "docker buildx build" if cli.mode == "buildx" else "DOCKER_BUILDKIT=1 docker build"
        checks.append(Check("buildkit_cli", "ok", f"{cli.path} {cli.client_version} via {how}"))
    except SynthError as exc:
        checks.append(Check("buildkit_cli", "fail", exc.message, exc.hint))

    deboot = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if deboot:
        root = "" if os.geteuid() == 0 else " (needs root to run)"
        checks.append(Check("debootstrap", "ok" if not root else "warn", deboot + root))
    else:
        checks.append(Check(
            "debootstrap", "warn", "not installed: base images cannot be made locally",
            "apt-get install debootstrap",
        ))

    if engine is not None:
        if engine.has_gpu_runtime():
            checks.append(Check("gpu_runtime", "ok", "NVIDIA runtime registered"))
        else:
            checks.append(Check(
                "gpu_runtime", "warn",
                "no GPU runtime on this engine: C2-C4 will be skipped in containers",
                "Install the NVIDIA Container Toolkit, or verify GPU hosts with "
                "`synth verify --runtime host --python PATH`.",
            ))
        for name in sorted(KNOWN_BASES):
            ref = f"{name}:bookworm"
            if engine.image_exists(ref):
                checks.append(Check(f"base:{ref}", "ok", "present"))
            else:
                checks.append(Check(
                    f"base:{ref}", "warn", "missing (made automatically when a task needs it)",
                    f"synth base bootstrap --tag {ref}",
                ))

    if settings.ca_bundle:
        checks.append(Check("ca_bundle", "ok", str(settings.ca_bundle)))
    else:
        checks.append(Check(
            "ca_bundle", "warn",
            "none configured: fine without an intercepting proxy",
            "Behind a TLS-intercepting proxy, set SYNTH_CA_BUNDLE or pass --ca-bundle "
            "(e.g. /etc/ssl/certs/ca-certificates.crt).",
        ))
    if settings.wheelhouse:
        checks.append(Check("wheelhouse", "ok", str(settings.wheelhouse)))
    return checks
