"""``verification.json``: what verify leaves in the artifact folder it rebuilt — the
levels, the verdict, when, and on which machine — so the record travels with the artifact.
"""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from typing import Any

from synth import __version__
from synth.formats.verify import VerifyDocument
from synth.ui.verify_view import verdict_line


def verification_record(doc: VerifyDocument) -> dict[str, Any]:
    """What verify leaves in the artifact folder: levels, verdict, date and the machine."""
    rebuilt = doc.reports.get("rebuilt")
    return {
        "format": 1,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "synth_version": __version__,
        "docker_version": _docker_version(),
        "architecture": platform.machine(),
        "gpu_driver": _gpu_driver(),
        "require": doc.require,
        "passed": doc.passed,
        "verdict": verdict_line(doc),
        "image": doc.build.image if doc.build else None,
        "levels": {r.level: r.status for r in rebuilt.levels} if rebuilt else {},
        "highest": rebuilt.highest if rebuilt else None,
        "fidelity": doc.fidelity.reaches_live_level if doc.fidelity else None,
        "allow_modified": bool(doc.artifact_check and doc.artifact_check.problems),
    }


def _command_output(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _docker_version() -> str | None:
    return _command_output(["docker", "version", "--format", "{{.Server.Version}}"])


def _gpu_driver() -> str:
    out = _command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0] if out else "none"


