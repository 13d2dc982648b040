"""The artifact side of ``synth verify --rebuild``: which artifact (a run's export, made now or
an identical one reused), its files checked against its manifest, the tag derived from them,
and the rebuild from scratch.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from synth import __version__, source_digest
from synth.config import Settings
from synth.engine.base import Engine
from synth.engine.build import StepLines
from synth.errors import BuildError, SynthError, UsageError, VerifyError
from synth.export.artifact import EXPORT_STAMP, ExportOptions, export_run
from synth.formats import artifact_files
from synth.formats.store import ArtifactDir, RunDir, is_file, sha256_file
from synth.ui import console
from synth.util import safe_io
from synth.verify.build import build_artifact
from synth.verify.outcome import ArtifactCheck, BuildInfo, ExportUse

Say = Callable[[str], None]

#: Written into the artifact folder after verify (synth.formats.artifact_files); not part of
#: the export, so the manifest check and the rebuilt tag leave it out.
VERIFICATION_FILE = artifact_files.VERIFICATION_FILE


def _artifact_files(artifact_dir: Path) -> dict[str, str]:
    """Every file and link of the artifact (relative POSIX path -> digest, the one rule of
    :mod:`synth.formats.artifact_files`), manifest.json and verification.json left out; a FIFO,
    device or setuid file is refused."""
    return artifact_files.digests(artifact_dir, skip=("manifest.json", VERIFICATION_FILE))


def check_artifact(artifact_dir: Path,
                   manifest: Mapping[str, object]) -> tuple[dict[str, str], list[str]]:
    """(the artifact's files with their sha256, one line per file that differs from
    manifest.json's ``files``: modified, missing or added)."""
    listed = manifest.get("files")
    files = _artifact_files(artifact_dir)
    if not isinstance(listed, Mapping):
        return files, ["manifest.json lists no files to check against"]
    problems = []
    for rel in sorted(set(listed) | set(files)):
        want, got = listed.get(rel), files.get(rel)
        if want == got:
            continue
        problems.append(f"{rel}: " + ("missing" if got is None else "added (not in the "
                                       "manifest)" if want is None else "modified"))
    return files, problems


def checked_artifact(artifact_dir: Path, allow_modified: bool, say: Say) -> ArtifactCheck:
    """The artifact's files against its manifest; a modified artifact is refused (naming the
    files) unless ``allow_modified``."""
    manifest = ArtifactDir(artifact_dir).manifest().raw
    files, problems = check_artifact(artifact_dir, manifest)
    if problems and not allow_modified:
        raise VerifyError(
            f"The artifact {artifact_dir} does not match its manifest.json: "
            + "; ".join(problems[:20]) + (f"; … {len(problems) - 20} more"
                                         if len(problems) > 20 else ""),
            hint="Re-export it (`synth export`), or pass --allow-modified to rebuild it as it "
            "is (the report says so).", path=artifact_dir)
    if problems:
        say(f"warning: rebuilding a MODIFIED artifact (--allow-modified): {'; '.join(problems)}")
    return ArtifactCheck(files, tuple(problems), allow_modified)


def rebuilt_tag(task_name: str, files: Mapping[str, str], manifest_bytes: bytes) -> str:
    """A tag derived from the digests of all the artifact's files (and the manifest)."""
    h = hashlib.sha256(hashlib.sha256(manifest_bytes).digest())
    for rel, digest in sorted(files.items()):
        h.update(f"{rel}\0{digest}\n".encode())
    return f"synth-rebuilt/{task_name}:{h.hexdigest()[:12]}"


# ------------------------------------------------------------------ the run's export
def reusable_export(run_dir: Path, bundle: bool = False) -> tuple[Path | None, str]:
    """The run's existing ``export/`` when it is what exporting now would write, with why
    (or None, with why not): made by this synth version from the same run files (manifest
    ``inputs``), not an ``--allow-incomplete`` export, its files as its manifest lists them,
    and its task.toml and claims.json the run's current ones."""
    export_dir = run_dir / "export"
    if not (export_dir / "manifest.json").is_file():
        return None, "no earlier export"
    try:
        manifest = ArtifactDir(export_dir).manifest()
    except SynthError as exc:
        return None, f"the earlier export's manifest is unreadable ({exc.message})"
    run = RunDir(run_dir)
    if manifest.synth_version != __version__:
        return None, (f"the earlier export was made by synth {manifest.synth_version}, "
                      f"this is {__version__}")
    if _stamp(run_dir) != source_digest():
        return None, "the earlier export was made by a different build of synth"
    if dict(manifest.inputs) != run.input_hashes():
        return None, "the run's files changed since the earlier export"
    if manifest.raw.get("incomplete"):
        return None, "the earlier export was made with --allow-incomplete"
    if isinstance(manifest.raw.get("bundle"), Mapping) != bundle:
        return None, ("the earlier export is not bundled" if bundle
                      else "the earlier export is bundled (export --bundle)")
    problems = check_artifact(export_dir, manifest.raw)[1]
    if problems:
        return None, f"the earlier export was modified ({'; '.join(problems[:3])})"
    changed = _changed_copies(run, manifest.files)
    if changed:
        return None, f"the run's {changed} changed since the earlier export"
    return export_dir, "its manifest matches the run: same synth version and run files"


def _stamp(run_dir: Path) -> str | None:
    try:  # a regular file of a few bytes, never through a link
        return safe_io.read_regular(run_dir / EXPORT_STAMP, 256).decode("ascii").strip()
    except (SynthError, UnicodeDecodeError):
        return None


def _changed_copies(run: RunDir, files: Mapping[str, str]) -> str | None:
    """The copied file (task.toml, claims.json) whose source differs from the export's copy."""
    task_file = run.run_record().task.task_file
    task_now = sha256_file(Path(task_file)) if task_file and is_file(task_file) else None
    claims = run.path / "claims.json"
    claims_now = safe_io.sha256_regular(claims) if os.path.lexists(claims) else None
    for name, now in (("task.toml", task_now), ("claims.json", claims_now)):
        if files.get(name) != now:
            return name
    return None


def artifact_for_run(run_dir: Path, settings: Settings, engine: Engine, say: Say,
                     bundle: bool = False) -> ExportUse:
    """The artifact to rebuild for a run: the existing export when identical, else a new one
    made on ``engine`` (``bundle``: exported with ``--bundle``, for an offline rebuild)."""
    existing, why = reusable_export(run_dir, bundle)
    if existing is not None:
        say(f"Reusing the existing export {existing} ({why})")
        return ExportUse(existing, True, why)
    say(f"Exporting {run_dir}{' with --bundle' if bundle else ''} ({why})")
    result = export_run(ExportOptions(run_dir, bundle=bundle), settings, engine)
    for warning in result.warnings:  # as `synth export` says them: verify made this export
        say(f"warning: {warning}")
    return ExportUse(Path(result.artifact_dir), False, why)


# ------------------------------------------------------------------ the rebuild
def rebuild(artifact_dir: Path, tag: str, settings: Settings, out_dir: Path,
            say: Say, progress: str = "steps", offline: bool = False,
            cache: bool = False) -> BuildInfo:
    """Build ``artifact_dir`` from scratch (no cache; ``cache``: with the engine's build
    cache) as ``tag``; the log in ``out_dir``."""
    log_path = out_dir / "build.log"
    start = time.monotonic()
    how = "with the build cache" if cache else "from scratch (no cache"
    how += f"{', no network' if offline else ''}{'' if cache else ')'}"
    say(f"Rebuilding {artifact_dir} {how} as {tag}; log: {log_path}")
    steps = StepLines()
    with console.err.status(console.literal(f"building {tag}")) as status:
        def on_line(line: str) -> None:
            shown = line if progress == "plain" else steps(line) if progress == "steps" else None
            if shown is not None:
                say(shown)
            status.update(console.literal(f"building {tag} ({time.monotonic() - start:.0f}s): "
                                          f"{line[:100]}", newlines=False))

        try:
            image_id = build_artifact(artifact_dir, tag, settings, no_cache=not cache,
                                      log_path=log_path, on_line=on_line,
                                      network="none" if offline else None)
        except BuildError as exc:
            raise tls_hint(exc, log_path) from exc
    seconds = time.monotonic() - start
    say(f"Rebuilt {tag} in {seconds:.1f}s")
    return BuildInfo(image=tag, image_id=image_id, seconds=round(seconds, 1),
                     artifact_dir=artifact_dir, log=log_path.name, offline=offline,
                     no_cache=not cache)


def check_offline(artifact_dir: Path, manifest: Mapping[str, Any]) -> None:
    """--offline needs a bundle that builds with no network; a clear error otherwise."""
    bundle = manifest.get("bundle")
    if not isinstance(bundle, Mapping):
        raise UsageError(f"{artifact_dir} is not bundled, so it cannot be rebuilt offline: its "
                         "Dockerfile fetches .debs, wheels and downloads from the network.",
                         hint="Export it with --bundle (`synth export RUN --bundle`), which "
                         "puts every file the build needs under vendor/.")
    if bundle.get("needs_network"):
        raise UsageError(f"{artifact_dir}'s bundle still needs the network for: "
                         + "; ".join(map(str, bundle["needs_network"])) + ".",
                         hint="Rebuild it without --offline.")


def _log_mentions(path: Path, needle: bytes) -> bool:
    """Whether the build log holds ``needle``, read in chunks (a log can be gigabytes)."""
    tail = b""
    try:
        with safe_io.opened_regular(path) as fd:
            while chunk := os.read(fd, 1 << 20):
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle):]
    except SynthError:
        return False
    return False


def tls_hint(exc: BuildError, log_path: Path) -> BuildError:
    """The build error, saying so when the log shows a TLS verification failure."""
    if not _log_mentions(log_path, b"CERTIFICATE_VERIFY_FAILED") and \
            "CERTIFICATE_VERIFY_FAILED" not in exc.message:
        return exc
    return BuildError(
        f"{exc.message}\nThe rebuild failed on TLS: CERTIFICATE_VERIFY_FAILED in {log_path} "
        "(an intercepting proxy's certificate the build does not trust).",
        hint="Pass the CA bundle that signs it: --ca-bundle PATH (or SYNTH_CA_BUNDLE); it "
        "reaches the build as a BuildKit secret and never lands in the image.",
        image=exc.image, log=exc.log or log_path)

