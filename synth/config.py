"""Settings shared by every command: where artifacts go, the CA bundle, the wheelhouse.

Values come from the command line first, then the environment (``SYNTH_*``), then defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from synth.errors import UsageError

#: Where the CA bundle is mounted inside session and probe containers (never in an image).
CONTAINER_CA_PATH = "/synth/ca/ca-bundle.crt"
#: Where a wheelhouse is mounted read-only inside containers.
CONTAINER_WHEELHOUSE = "/synth/wheelhouse"
#: Environment variables that make pip, uv, requests and curl trust the mounted bundle.
#: Live and rebuilt images ``synth run`` and ``synth verify`` keep per task (the latest;
#: older ones are removed after their work; ``SYNTH_KEEP_RUNS`` changes it).
DEFAULT_KEEP_RUNS = 5
CA_ENV_NAMES = ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def ca_env(path: str = CONTAINER_CA_PATH) -> dict[str, str]:
    return dict.fromkeys(CA_ENV_NAMES, path)


@dataclass(frozen=True)
class Settings:
    artifacts_dir: Path
    ca_bundle: Path | None
    wheelhouse: Path | None
    docker_cli: str | None
    #: Check free disk space before a run, a rebuild, a bundle or a bench cell
    #: (synth.engine.disk_budget); ``SYNTH_DISK_CHECK=0`` or ``--no-disk-check`` skips it.
    disk_check: bool = True
    #: Live and rebuilt images kept per task after ``synth run`` and ``synth verify``
    #: (``SYNTH_KEEP_RUNS``: a number, or ``all`` for None: keep every one).
    keep_runs: int | None = DEFAULT_KEEP_RUNS

    @classmethod
    def load(
        cls,
        *,
        artifacts_dir: Path | None = None,
        ca_bundle: Path | None = None,
        wheelhouse: Path | None = None,
        docker_cli: str | None = None,
        disk_check: bool = True,
    ) -> Settings:
        env = os.environ
        art = artifacts_dir or Path(env.get("SYNTH_ARTIFACTS", "artifacts"))
        ca = ca_bundle or _env_path("SYNTH_CA_BUNDLE")
        if ca is not None and not ca.is_file():
            raise UsageError(
                f"CA bundle {ca} does not exist or is not a file.",
                hint="Pass the PEM bundle your proxy needs with --ca-bundle or SYNTH_CA_BUNDLE.",
                option="--ca-bundle",
            )
        wh = wheelhouse or _env_path("SYNTH_WHEELHOUSE")
        if wh is not None and not wh.is_dir():
            raise UsageError(
                f"Wheelhouse {wh} is not a directory.",
                hint="Pass a folder of wheels with --wheelhouse or SYNTH_WHEELHOUSE.",
                option="--wheelhouse",
            )
        cli = docker_cli or env.get("SYNTH_DOCKER_CLI") or None
        keep = env.get("SYNTH_KEEP_RUNS", str(DEFAULT_KEEP_RUNS)).strip()
        if keep != "all" and not (keep.isdigit() and int(keep) >= 1):
            raise UsageError(f"SYNTH_KEEP_RUNS={keep!r} is neither a number of runs (1 or "
                             "more) nor 'all'.",
                             hint="SYNTH_KEEP_RUNS=5 keeps each task's latest 5 live and "
                             "rebuilt images; SYNTH_KEEP_RUNS=all keeps every one.")
        return cls(
            artifacts_dir=art.resolve(),
            ca_bundle=ca.resolve() if ca else None,
            wheelhouse=wh.resolve() if wh else None,
            docker_cli=cli,
            disk_check=disk_check and env.get("SYNTH_DISK_CHECK", "1").strip() != "0",
            keep_runs=None if keep == "all" else int(keep),
        )

    @property
    def runs_dir(self) -> Path:
        return self.artifacts_dir / "runs"


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None
