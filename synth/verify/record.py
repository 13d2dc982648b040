"""``verification.json``: what verify leaves in the artifact folder it rebuilt — the
levels, the verdict, the fidelity, the digests of the artifact and of the rebuilt image,
when, and on which machine — so the record travels with the artifact (the archive and the
bundle carry it, a re-export keeps it). A folder that came with one (a published
artifact: the author's record) is compared with the new result, and the new record says
what changed and keeps the old one in short as ``previous``.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synth import __version__
from synth.errors import SynthError
from synth.formats.store import VERIFICATION, ArtifactDir
from synth.formats.verification import VERIFICATION_FORMAT, VerificationRecord
from synth.formats.verify import VerifyDocument
from synth.ui.verify_view import verdict_line
from synth.util import atomic


def verification_record(doc: VerifyDocument, artifact: ArtifactDir) -> dict[str, Any]:
    """What verify leaves in the artifact folder: levels, verdict, digests, date, machine."""
    rebuilt = doc.reports.get("rebuilt")
    manifest = artifact.manifest()
    raw = manifest.raw.get("base")
    base: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return {
        "format": VERIFICATION_FORMAT,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "synth_version": __version__,
        "docker_version": _docker_version(),
        "architecture": platform.machine(),
        "gpu_driver": _gpu_driver(),
        "require": doc.require,
        "passed": doc.passed,
        "verdict": verdict_line(doc),
        "image": doc.build.image if doc.build else None,
        "image_id": doc.build.image_id if doc.build else None,
        "artifact_sha256": hashlib.sha256(artifact.manifest_bytes()).hexdigest(),
        "base_digest": base_digest(base),
        "levels": {r.level: r.status for r in rebuilt.levels} if rebuilt else {},
        "highest": rebuilt.highest if rebuilt else None,
        "fidelity": doc.fidelity.reaches_live_level if doc.fidelity else None,
        "fingerprint": ({"status": doc.fingerprint.status, "equal": doc.fingerprint.equal}
                        if doc.fingerprint else None),
        "allow_modified": bool(doc.artifact_check and doc.artifact_check.problems),
    }


def base_digest(base: Mapping[str, Any]) -> str | None:
    """The base's digest as the artifact records it: the published synth base's, else the
    registry's."""
    published = base.get("published")
    if isinstance(published, Mapping) and published.get("config_digest"):
        return str(published["config_digest"])
    return str(base["digest"]) if base.get("digest") else None


def changes(old: VerificationRecord, new: Mapping[str, Any]) -> list[str]:
    """What differs between the recorded verification and the new one, one line each (the
    rebuilt image's ID always differs, builds being dated: it is not listed)."""
    lines = []
    if old.artifact_sha256 and old.artifact_sha256 != new["artifact_sha256"]:
        lines.append(f"artifact: another export (manifest sha256 {old.artifact_sha256[:12]} "
                     f"-> {str(new['artifact_sha256'])[:12]})")
    levels: Mapping[str, str] = new["levels"]
    for level in sorted(set(old.levels) | set(levels)):
        before, after = old.levels.get(level, "absent"), levels.get(level, "absent")
        if before != after:
            lines.append(f"{level}: {before} -> {after}")
    pairs = (("passed", old.passed, new["passed"]), ("fidelity", old.fidelity, new["fidelity"]),
             ("base", old.base_digest, new["base_digest"]),
             ("synth", old.synth_version, new["synth_version"]),
             ("docker", old.docker_version, new["docker_version"]),
             ("architecture", old.architecture, new["architecture"]),
             ("GPU driver", old.gpu_driver, new["gpu_driver"]))
    lines += [f"{what}: {a} -> {b}" for what, a, b in pairs if a is not None and a != b]
    return lines


def _summary(old: VerificationRecord) -> dict[str, Any]:
    return {"date": old.date, "synth_version": old.synth_version, "passed": old.passed,
            "levels": dict(old.levels), "artifact_sha256": old.artifact_sha256,
            "image_id": old.image_id}


def write_record(doc: VerifyDocument, artifact_dir: Path,
                 say: Callable[[str], None]) -> dict[str, Any]:
    """Write the new ``verification.json`` into ``artifact_dir``, comparing it with the one
    there (saying what changed); an unreadable old record is named and replaced."""
    artifact = ArtifactDir(artifact_dir)
    record = verification_record(doc, artifact)
    try:
        old = artifact.verification()
    except SynthError as exc:
        say(f"warning: the artifact's {VERIFICATION.rel} is not readable ({exc.message}); "
            "replacing it")
        old = None
    if old is not None:
        found = changes(old, record)
        record["previous"] = _summary(old)
        record["changes"] = found
        said = (f"Compared with the recorded verification of {old.date} (synth "
                f"{old.synth_version}): ")
        say(said + ("; ".join(found) if found else "the same result"))
    atomic.write_json(artifact.file(VERIFICATION), record)
    return record


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
