"""``synth export``: a run directory in, an artifact folder out.

load (I/O) -> :func:`distill` (pure) -> lock (asks the indexes) -> render (pure) -> write.
The artifact is assembled in a temporary folder next to its destination and renamed into
place, so a reader sees the old artifact or the new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from synth import __version__, publish
from synth.atomic import dumps_json
from synth.base_images import base_manifest
from synth.config import Settings
from synth.distill import final_state
from synth.distill.apt_source import AptSources, apt_sources
from synth.distill.load import LoadedRun, load_run
from synth.distill.lock import Lock, LockTarget, lock_env, target_for
from synth.distill.plan import BuildPlan, PythonEnvPlan, distill, download_candidates
from synth.errors import ExportError
from synth.model import MANIFEST_FORMAT
from synth.render import reader_facts, render_artifact
from synth.store import is_dir, is_file, sha256_file

FORMATS = ("Dockerfile",)
#: Never copied with the source: bytecode and tool caches differ between machines. A git
#: checkout's ``.git`` is kept: the session's /workspace had it, and research code asks git
#: for its commit (``git rev-parse HEAD``) at import.
_SOURCE_SKIP = ("__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache")

Locker = Callable[[PythonEnvPlan, LockTarget], Lock]


@dataclass(frozen=True)
class ExportResult:
    artifact_dir: Path
    plan: BuildPlan
    warnings: tuple[str, ...]
    #: With ``archive``: ``<task>-<run-id>.tar.gz`` beside the artifact, and its sha256.
    archive: Path | None = None
    archive_sha256: str | None = None


def _copy_tree(src: Path, dest: Path) -> None:
    def ignore(_dir: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _SOURCE_SKIP or n.endswith((".pyc", ".pyo"))}

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def _clone(url: str, commit: str | None, dest: Path) -> None:
    try:
        subprocess.run(["git", "clone", "--quiet", url, str(dest)], check=True,
                       capture_output=True, text=True, timeout=600)
        if commit:
            subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", commit], check=True,
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ExportError(f"Cloning {url} at {commit} for the artifact's source failed: "
                          f"{exc}") from exc


def _copy_includes(run: LoadedRun, includes: Sequence[str], dest: Path) -> None:
    if not includes:
        return
    if not run.info.live_image:
        raise ExportError("--include needs the run's live image, and this run has none.")
    from synth.engine import ContainerSpec, DockerEngine

    engine = DockerEngine.connect()
    spec = ContainerSpec(image=run.info.live_image, network=False,
                         labels={"synth.temporary": "1"})
    with engine.container(spec) as c:
        for path in includes:
            if not path.startswith("/"):
                raise ExportError(f"--include {path}: give an absolute path in the container.")
            c.copy_out(path, dest / "include" / path.lstrip("/").rsplit("/", 1)[0]
                       if "/" in path.strip("/") else dest / "include")


def _original(run: LoadedRun) -> Callable[[Path], None]:
    """Fills a folder with the repository as the session got it."""
    def fill(dest: Path) -> None:
        if run.repo and run.repo.path:
            _copy_tree(Path(run.repo.path), dest)
        elif run.repo and run.repo.url:
            _clone(run.repo.url, run.repo.commit, dest)
    return fill


def _download_hashes(run: LoadedRun) -> dict[str, str]:
    """sha256 of the files downloads left in the final state, from the live image.

    Without an engine or a live image the downloads are reported, not replayed."""
    wanted = download_candidates(run)
    if not wanted or not run.info.live_image:
        return {}
    from synth.engine import ContainerSpec, DockerEngine
    from synth.errors import SynthError

    try:
        engine = DockerEngine.connect(timeout=30)
        spec = ContainerSpec(image=run.info.live_image, network=False,
                             labels={"synth.temporary": "1"})
        with engine.container(spec) as c:
            res = c.exec(["sha256sum", "--", *wanted])
    except SynthError:
        return {}
    out: dict[str, str] = {}
    for line in res.stdout.splitlines():
        digest, _, path = line.partition("  ")
        if len(digest) == 64 and path in wanted:
            out[path] = digest
    return out


def _all_files(root: Path) -> list[Path]:
    return sorted((p for p in root.rglob("*") if p.is_file() or p.is_symlink()),
                  key=lambda p: p.relative_to(root).as_posix())


def _apt_timestamp(run: LoadedRun) -> str | None:
    from synth.distill.plan import snapshot_timestamp

    return snapshot_timestamp(run.info.ended)


def apt_manifest(plan: BuildPlan, apt: AptSources) -> dict[str, object]:
    """The manifest's ``apt`` key: how the .debs are pinned and where they come from."""
    return {
        "packages": len(plan.apt.pins),
        "hashed": len(plan.apt.debs),
        "unhashed": [n for n, _ in plan.apt.unhashed],
        "timestamp": plan.apt.timestamp,
        "snapshot_template": apt.template,
        "snapshot_url": apt.url,
        "sources": list(apt.order),
        "bytes": sum(d.size for d in plan.apt.debs),
    }


def run_wheelhouse(settings: Settings, run: LoadedRun) -> Path | None:
    """The host wheelhouse: the one configured, else the one the run recorded."""
    if settings.wheelhouse is not None:
        return settings.wheelhouse
    if run.info.wheelhouse and is_dir(run.info.wheelhouse):
        return Path(run.info.wheelhouse)
    return None


def is_artifact_dir(path: Path) -> bool:
    """True for a folder synth exported: its manifest.json names an export format."""
    manifest = path / "manifest.json"
    if manifest.is_symlink() or not manifest.is_file():
        return False
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and data.get("export_format") in FORMATS


def check_destination(dest: Path, run_dir: Path, *, explicit: bool, force: bool) -> None:
    """Refuse to write the artifact where it would destroy something that is not ours.

    ``dest`` may be new or an empty folder; an existing artifact folder is replaced only
    when it is the run's own ``export/`` or ``--force`` is given for an explicit ``-o``.
    A file, a symlink, the run directory or any folder above it, the working directory and
    a folder synth did not export are never replaced."""
    dest = dest.absolute()
    where = f"-o {dest}" if explicit else str(dest)
    if dest.is_symlink():
        raise ExportError(f"{where} is a symlink; synth does not write through it.")
    real = dest.resolve()
    if real in (Path.cwd().resolve(), Path.home().resolve(), Path("/")) \
            or run_dir.resolve().is_relative_to(real):
        raise ExportError(f"{where} would replace {real}, which holds more than an artifact.",
                          hint="Give a new folder, e.g. -o ./artifact.")
    if not dest.exists():
        return
    if not dest.is_dir():
        raise ExportError(f"{where} exists and is not a folder; synth will not replace it.")
    if not any(dest.iterdir()):
        return
    if not is_artifact_dir(dest):
        raise ExportError(f"{where} is not empty and is not an artifact synth exported; "
                          "synth replaces only folders it made.",
                          hint="Give a new or empty folder.")
    if explicit and not force:
        raise ExportError(f"{where} already holds an artifact.",
                          hint="--force replaces it (atomically), or give a new folder.")


def export_run(
    run_dir: Path,
    settings: Settings,
    *,
    out_dir: Path | None = None,
    include: Sequence[str] = (),
    locker: str | Locker = "uv",
    hash_downloads: bool = True,
    force: bool = False,
    allow_incomplete: bool = False,
    apt_snapshot: str | None = None,
    apt_snapshot_only: bool = False,
    archive: bool = False,
    allow_missing: bool = False,
) -> ExportResult:
    """Distill ``run_dir`` into an artifact at ``out_dir`` (default ``<run_dir>/export``).

    ``hash_downloads``: take the sha256 of downloaded files from the live image (needs the
    engine) so that the artifact replays those downloads pinned. ``apt_snapshot``: the
    snapshot archive URL template for .debs (docs/export.md, Durability). ``archive``:
    add an RO-Crate and a CycloneDX SBOM and write a deterministic ``.tar.gz`` beside.
    A run that is not trustworthy (not ``succeeded``, audit unverified) is refused unless
    ``allow_incomplete``; ``force`` lets an explicit ``out_dir`` replace an artifact.
    With ``hash_downloads`` the live image is also asked for the final ``/workspace``,
    modified distribution files, dpkg's paths and conflicts (synth.distill.final_state);
    something of the final state left unreproduced fails unless ``allow_missing``."""
    from synth.session.rundir import read_run, trust_problems

    problems = trust_problems(read_run(run_dir), run_dir)
    if problems and not allow_incomplete:
        raise ExportError(f"{run_dir} is not a run synth can vouch for: "
                          + "; ".join(problems) + ".",
                          hint="--allow-incomplete exports it anyway; the export report "
                          "then says why at its top.")
    dest = (out_dir or run_dir / "export").absolute()
    check_destination(dest, run_dir, explicit=out_dir is not None, force=force)
    run = load_run(run_dir)
    apt = apt_sources(apt_snapshot, _apt_timestamp(run), apt_snapshot_only)
    plan = distill(run, include=include,
                   download_hashes=_download_hashes(run) if hash_downloads else None)
    plan = dataclasses.replace(plan, incomplete=tuple(problems))
    plan, staged = final_state.prepare(run, plan, dest.parent, _original(run),
                                       ask=hash_downloads, allow_missing=allow_missing)
    wheelhouse = run_wheelhouse(settings, run)
    locks = []
    for env in plan.envs:
        target = target_for(env, plan.glibc, wheelhouse, settings.ca_bundle)
        locks.append(lock_env(env, target, locker=locker) if isinstance(locker, str)
                     else locker(env, target))
    files = render_artifact(plan, locks, apt=apt, reader=reader_facts(run.info.task_file))
    dest.parent.mkdir(parents=True, exist_ok=True)
    warnings = list(plan.warnings)
    if run.claims_error:
        warnings.append(f"claims.json is not valid, so verify's C5 will fail on it: "
                        f"{run.claims_error}")
    with tempfile.TemporaryDirectory(prefix=f".{dest.name}.", dir=dest.parent) as tmp_str:
        tmp = Path(tmp_str) / "artifact"
        tmp.mkdir()
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        # The task's probes travel with the artifact: verify needs them.
        if run.info.task_file and is_file(run.info.task_file):
            shutil.copyfile(run.info.task_file, tmp / "task.toml")
        else:
            warnings.append("task file not found: the artifact carries no task.toml probes")
        if run.claims_present:
            shutil.copyfile(run.run_dir / "claims.json", tmp / "claims.json")
        staged.move_into(tmp)
        _copy_includes(run, plan.includes, tmp)
        final_state.copy_carried(run, plan, tmp)
        wheel_files = sorted({f for lk in locks for f in lk.wheel_files})
        epoch = publish.source_date_epoch(run) if archive else 0
        if archive:
            (tmp / publish.SBOM).write_text(publish.sbom_json(plan, locks, epoch),
                                            encoding="utf-8")
        manifest = {
            "format": MANIFEST_FORMAT,
            "synth_version": __version__,
            "task": plan.task,
            "run_id": plan.run_id,
            "command": plan.regenerate_command,
            "export_format": "Dockerfile",
            "base_image": {"ref": plan.base_ref, "id": plan.base_id,
                           "digest": plan.base_digest},
            "apt": apt_manifest(plan, apt),
            "base": base_manifest(plan.base_ref, plan.base_id, plan.base_digest,
                                  run.info.base_rootfs, run.info.base_repo_digests,
                                  run.info.base_labels),
            "python": plan.python,
            "locks": {lk.env.lock_file: {"python": lk.env.python, "pins": len(lk.pins),
                                         "locker": lk.locker} for lk in locks},
            "wheelhouse_required": bool(wheel_files),
            "wheel_files": wheel_files,
            "probes": "task.toml" if (tmp / "task.toml").is_file() else None,
            "claims": "claims.json" if run.claims_present else None,
            "source": {"kind": plan.source.kind, "dir": "source", "dest": plan.source.dest,
                       "url": plan.source.url, "commit": plan.source.commit,
                       **final_state.source_manifest(plan)},
            "carried": [c.path for c in plan.carried],
            "missing": list(plan.missing),
            "inputs": dict(sorted(run.input_hashes.items())),
            "files": {p.relative_to(tmp).as_posix(): sha256_file(p)
                      for p in _all_files(tmp) if p.is_file()},
            "warnings": sorted(set(warnings)),
            "incomplete": list(plan.incomplete),
        }
        if archive:
            manifest["archive"] = publish.archive_manifest(plan, epoch)
        (tmp / "manifest.json").write_text(dumps_json(manifest), encoding="utf-8")
        if archive:  # last: it describes every other file, the manifest included
            (tmp / publish.RO_CRATE).write_text(publish.ro_crate_json(tmp, plan, run, epoch),
                                                encoding="utf-8")
        old = Path(tmp_str) / "old"
        # Checked again right before the swap: the folder may have changed meanwhile.
        check_destination(dest, run_dir, explicit=out_dir is not None, force=force)
        if dest.exists():
            os.replace(dest, old)
        os.replace(tmp, dest)
    if not archive:
        return ExportResult(artifact_dir=dest, plan=plan, warnings=tuple(sorted(set(warnings))))
    name = publish.archive_name(plan)
    path = dest.parent / f"{name}.tar.gz"
    digest = publish.write_archive(dest, path, name, epoch)
    return ExportResult(artifact_dir=dest, plan=plan, warnings=tuple(sorted(set(warnings))),
                        archive=path, archive_sha256=digest)
