"""``synth export``: a run directory in, an artifact folder out.

load (I/O) -> :func:`distill` (pure) -> lock (asks the indexes) -> render (pure) -> write.
The artifact is assembled in a temporary folder next to its destination and renamed into
place, so a reader sees the old artifact or the new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec.structs import replace
from packaging.utils import canonicalize_name

from synth import __version__, source_digest
from synth.config import Settings
from synth.distill.leave_out import Part, leave_out
from synth.distill.load import LoadedRun, load_run
from synth.distill.managed_python import link_candidates
from synth.distill.native import build_backend_pin
from synth.distill.plan import (
    BuildPlan,
    PythonEnvPlan,
    classify_log,
    distill,
    download_candidates,
    gc_paused,
    snapshot_timestamp,
)
from synth.engine import disk_budget
from synth.engine.base import Engine
from synth.engine.base_images import base_manifest
from synth.errors import ExportError, InputFileError, NotFoundError, SynthError, UsageError
from synth.export import bundle, final_state, publish
from synth.export.apt_source import AptSources, apt_sources
from synth.export.build_lock import (
    complete_lock,
    installer_key,
    local_build_requires,
    lock_installer,
    lock_manifest,
)
from synth.export.conda_lock import lock_rattler
from synth.export.live_facts import LiveImage, download_hashes, link_targets
from synth.export.lock import Lock, LockedPin, LockTarget, lock_env, target_for
from synth.export.managed_python import resolve_pythons
from synth.export.metadata import Citation, CitationOptions, Publication, make_citation
from synth.export.render import plan_json, reader_facts, render_artifact
from synth.export.uv_sync import with_uv_sync
from synth.formats import artifact_files
from synth.formats.manifest import MANIFEST_FORMAT
from synth.formats.plan import DistillReport
from synth.formats.store import (
    CLAIMS,
    MANIFEST,
    VERIFICATION,
    ArtifactDir,
    RunDir,
    is_dir,
    is_file,
    parse_json,
    read_text,
)
from synth.formats.task import MAX_TASK_FILE_BYTES, commit_problem, load_task, repo_url_problem
from synth.record.rundir import find_run, read_run, trust_problems
from synth.util import atomic, safe_io
from synth.util.atomic import dumps_json
from synth.util.disk import disk_full_as_error
from synth.util.noise import is_source_cache
from synth.util.urls import without_credentials

FORMATS = ("Dockerfile",)
#: Beside a run's own ``export/``: the :func:`synth.source_digest` of the synth that wrote it.
EXPORT_STAMP = "export.source-digest"

Locker = Callable[[PythonEnvPlan, LockTarget], Lock]


@dataclass(frozen=True)
class ExportOptions:
    """One ``synth export``: the run, where the artifact goes and how it is made."""

    run_dir: Path
    #: The artifact folder (default ``<run_dir>/export``).
    out_dir: Path | None = None
    #: Container paths carried into the artifact from the live image (``--include``).
    include: tuple[str, ...] = ()
    #: ``uv`` or ``pip-tools``, or (tests) a function that makes each lock.
    locker: str | Locker = "uv"
    #: Ask the live image (downloads' sha256, the final /workspace, RECORD checks...);
    #: without it the export says what it could not check.
    ask_live: bool = True
    #: Let an explicit ``out_dir`` replace an artifact synth exported there before.
    force: bool = False
    #: Export a run that is not trustworthy (not ``succeeded``, audit unverified).
    allow_incomplete: bool = False
    #: Export even if the artifact leaves part of the final state out.
    allow_missing: bool = False
    #: The snapshot archive URL template for .debs (docs/export.md, Durability), and
    #: whether the .debs come from it alone.
    apt_snapshot: str | None = None
    apt_snapshot_only: bool = False
    #: Add an RO-Crate, a CycloneDX SBOM and .zenodo.json and write a deterministic
    #: ``.tar.gz`` beside.
    archive: bool = False
    #: Every file the build needs in ``vendor/`` (synth.export.bundle): builds offline.
    bundle: bool = False
    #: The authors, licence, version (synth.export.metadata).
    citation: CitationOptions = field(default_factory=CitationOptions)
    #: How the base is saved to be carried (with ``archive`` or ``bundle``; None: the
    #: engine's ``docker save``; tests give their own).
    save_base: publish.BaseSaver | None = None
    #: Parts of the plan left out (``--without``, ``synth minimize``'s trials).
    without: tuple[Part, ...] = ()

    def command_words(self) -> tuple[str, ...]:
        """The options of ``synth export`` that shape what the artifact holds, as its
        command line gives them (the regenerate command's, after the run; ``--include`` is
        the plan's own): not where it goes, nor the host's CA bundle or wheel folder."""
        words: list[str] = []
        for part in sorted({str(p) for p in self.without}):
            words += ["--without", part]
        flags = (("--allow-incomplete", self.allow_incomplete),
                 ("--allow-missing", self.allow_missing),
                 ("--apt-snapshot-only", self.apt_snapshot_only),
                 ("--archive", self.archive), ("--bundle", self.bundle))
        words += [flag for flag, on in flags if on]
        if self.apt_snapshot is not None:  # a URL's credentials are never written down
            words += ["--apt-snapshot", without_credentials(self.apt_snapshot)]
        if isinstance(self.locker, str) and self.locker != "uv":
            words += ["--locker", self.locker]
        cite = self.citation
        for author in cite.authors:
            words += ["--author", author]
        valued = (("--license", cite.license), ("--release", cite.release),
                  ("--repository-url", cite.repository and without_credentials(cite.repository)))
        for option, value in valued:
            if value is not None:
                words += [option, value]
        return tuple(words)


@dataclass(frozen=True)
class ExportResult:
    artifact_dir: Path
    plan: BuildPlan
    warnings: tuple[str, ...]
    #: With ``archive``: ``<task>-<run-id>.tar.gz`` beside the artifact, and its sha256.
    archive: Path | None = None
    archive_sha256: str | None = None
    #: With ``bundle``: the vendored files' summary (size, breakdown by kind).
    bundle: dict[str, object] | None = None


def _copy_tree(src: Path, dest: Path) -> None:
    # Bytecode and tool caches are never copied (SOURCE_CACHES); a git checkout's .git is:
    # the session's /workspace had it, and research code asks git for its commit at import.
    def ignore(_dir: str, names: list[str]) -> set[str]:
        return {n for n in names if is_source_cache(n)}

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


def _clone(url: str, commit: str | None, dest: Path) -> None:
    # run.json is input like any other: its URL and commit meet git as a task file's would.
    problem = repo_url_problem(url) or (commit_problem(commit) if commit else None)
    if problem:
        raise ExportError(f"The run's repository {url[:200]!r} at {str(commit)[:60]!r}: "
                          f"{problem}; synth does not clone it.")
    try:
        subprocess.run(["git", "clone", "--quiet", "--", url, str(dest)], check=True,
                       capture_output=True, text=True, timeout=600)
        if commit:
            subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", commit], check=True,
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ExportError(f"Cloning {url} at {commit} for the artifact's source failed: "
                          f"{exc}") from exc


def _copy_includes(live: LiveImage, includes: Sequence[str], dest: Path) -> None:
    if not includes:
        return
    if live.ref is None:
        raise ExportError("--include needs the run's live image, and this run has none.")
    c = live.container()
    for path in includes:
        if not path.startswith("/"):
            raise ExportError(f"--include {path}: give an absolute path in the container.",
                              path=path)
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


def _file_digests(root: Path, known: Mapping[str, str]) -> dict[str, str]:
    """The digest of every file and link under ``root`` by its path there (the one rule of
    :mod:`synth.formats.artifact_files`); the ``known`` ones are not read again.
    ``verification.json`` is verify's record, kept across exports: never listed."""
    return artifact_files.digests(root, skip=(VERIFICATION.rel,), known=known)


def apt_manifest(plan: BuildPlan, apt: AptSources) -> dict[str, object]:
    """The manifest's ``apt`` key: how the .debs are pinned and where they come from."""
    return {
        "packages": len(plan.apt.pins),
        "hashed": len(plan.apt.debs),
        "unhashed": [n for n, _ in plan.apt.unhashed],
        "timestamp": plan.apt.timestamp,
        "snapshot_template": without_credentials(apt.template),
        "snapshot_url": without_credentials(apt.url) if apt.url else apt.url,
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
    manifest = ArtifactDir(path).file(MANIFEST)
    try:
        data = parse_json(read_text(manifest, MANIFEST), str(manifest))
    except InputFileError:  # missing, a link, oversized, not UTF-8 or not JSON
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
        raise ExportError(f"{where} is a symlink; synth does not write through it.", path=dest)
    real = dest.resolve()
    if real in (Path.cwd().resolve(), Path.home().resolve(), Path("/")) \
            or run_dir.resolve().is_relative_to(real):
        raise ExportError(f"{where} would replace {real}, which holds more than an artifact.",
                          hint="Give a new folder, e.g. -o ./artifact.", path=dest)
    if not dest.exists():
        return
    if not dest.is_dir():
        raise ExportError(f"{where} exists and is not a folder; synth will not replace it.",
                          path=dest)
    if not any(dest.iterdir()):
        return
    if not is_artifact_dir(dest):
        raise ExportError(f"{where} is not empty and is not an artifact synth exported; "
                          "synth replaces only folders it made.",
                          hint="Give a new or empty folder.", path=dest)
    if explicit and not force:
        raise ExportError(f"{where} already holds an artifact.",
                          hint="--force replaces it (atomically), or give a new folder.",
                          path=dest)
    check_as_exported(dest, where)


def check_as_exported(dest: Path, where: str) -> None:
    """An artifact folder is replaced only as synth made it: no file its manifest does not
    list (verify's ``verification.json`` apart, which the new folder keeps) and no listed
    file changed; otherwise the export is refused with those files named."""
    try:
        listed = ArtifactDir(dest).manifest().files
        have = artifact_files.digests(
            dest, skip=(MANIFEST.rel, artifact_files.VERIFICATION_FILE))
    except InputFileError as exc:
        raise ExportError(f"{where}: {exc.message}; synth replaces only an artifact as it "
                          "made it.", path=dest) from None
    added = sorted(set(have) - set(listed))
    changed = sorted(r for r in set(have) & set(listed) if have[r] != listed[r])
    if added or changed:
        named = [*(f"{r} (not in the manifest)" for r in added),
                 *(f"{r} (changed since the export)" for r in changed)]
        raise ExportError(f"{where} holds files synth did not write there: "
                          + "; ".join(named[:20])
                          + (f"; … {len(named) - 20} more" if len(named) > 20 else "")
                          + ". synth replaces only an artifact as it made it.",
                          hint="Move them out of the folder (or restore them), then export "
                          "again; or give a new folder.", path=dest)


def find_export_run(settings: Settings, run_ref: str | None) -> Path:
    """The run ``synth export RUN`` names; a miss also says how a format is named."""
    try:
        return find_run(settings, run_ref)
    except NotFoundError as exc:
        word = str(run_ref)
        if "/" in word or word[:1].isdigit():  # a path, <task>/<run>, a run id: no format
            raise
        raise NotFoundError(exc.message, hint=f"{exc.hint} (An artifact format is named with "
                            "--format: Dockerfile.)", ref=exc.ref, what=exc.what) from exc


def plan_json_of(run_dir: Path, include: Sequence[str] = ()) -> str:
    """``synth export --plan``: the plan.json document (BuildPlan + DistillReport); nothing
    is written."""
    return plan_json(*distill(load_run(run_dir), include=include))


@dataclass(frozen=True)
class ArtifactParts:
    """What goes into one artifact folder, ready to be written."""

    opts: ExportOptions
    run: LoadedRun
    plan: BuildPlan
    report: DistillReport
    locks: list[Lock]
    apt: AptSources
    #: The SOURCE_DATE_EPOCH of the citation, the SBOM, the RO-Crate and the tarball.
    epoch: int
    settings: Settings
    #: ``source/`` (the final /workspace) and ``source.patch``, made beside the artifact.
    staged: final_state.StagedSource
    #: The run's live image, where ``--include``, the carried files and the bundle's
    #: downloads are read from.
    live: LiveImage
    #: Who made it and how it is published (CITATION.cff, labels, .zenodo.json, RO-Crate).
    citation: Citation
    #: Where it goes (a verification.json there is kept), and how the base is saved to be
    #: carried (with ``archive`` or ``bundle``).
    dest: Path
    save_base: publish.BaseSaver


@gc_paused()
def export_run(opts: ExportOptions, settings: Settings, engine: Engine) -> ExportResult:
    """Distill ``opts.run_dir`` into an artifact at ``opts.out_dir`` (default
    ``<run_dir>/export``), asking the run's live image on ``engine``: one container of it,
    opened on first need, serves the whole export (:class:`LiveImage`). With ``archive``
    or ``bundle`` the artifact carries its base (saved by ``opts.save_base``, by default
    the engine's ``docker save``).

    A run that is not trustworthy (not ``succeeded``, audit unverified) is refused unless
    ``allow_incomplete``; ``force`` lets an explicit ``out_dir`` replace an artifact."""
    run_dir, explicit = opts.run_dir, opts.out_dir is not None
    if opts.without and not explicit:
        raise UsageError("--without makes a partial artifact: give it a folder of its own "
                         "with -o (the run's own export stays whole).", option="--without")
    problems = check_trust(run_dir, allow_incomplete=opts.allow_incomplete)
    dest = (opts.out_dir or run_dir / "export").absolute()
    if opts.bundle and settings.disk_check:
        disk_budget.check_space(disk_budget.bundle_needs(dest.parent, None), "--bundle")
    check_destination(dest, run_dir, explicit=explicit, force=opts.force)
    run = load_run(run_dir)
    with LiveImage(engine, run.info.live_image) as live:
        parts = plan_parts(opts, settings, run, live, dest, problems,
                           opts.save_base or engine.save_image)
        try:
            warnings, summary = write_into_place(parts, lambda: check_destination(
                dest, run_dir, explicit=explicit, force=opts.force))
        finally:
            parts.staged.cleanup()
    if not explicit:  # which synth made the run's own export (verify reuses it)
        atomic.write_text(run_dir / EXPORT_STAMP, source_digest() + "\n")
    result = ExportResult(artifact_dir=dest, plan=parts.plan, warnings=warnings,
                          bundle=summary)
    return write_archive(result, parts) if opts.archive else result


def write_into_place(parts: ArtifactParts, recheck: Callable[[], None]
                     ) -> tuple[tuple[str, ...], dict[str, object] | None]:
    """Assemble the artifact beside ``parts.dest`` and swap it in (``recheck`` right before
    the swap: the folder may have changed meanwhile). A full disk ends it with the old
    artifact, if any, in place and the error naming the file system."""
    dest = parts.dest
    with disk_full_as_error(dest):
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{dest.name}.", dir=dest.parent) as tmp_str:
            tmp = Path(tmp_str) / "artifact"
            warnings, summary = assemble_artifact(tmp, parts)
            recheck()
            swap_into_place(tmp, dest, Path(tmp_str) / "old")
    return warnings, summary


def plan_parts(opts: ExportOptions, settings: Settings, run: LoadedRun, live: LiveImage,
               dest: Path, problems: Sequence[str],
               save_base: publish.BaseSaver) -> ArtifactParts:
    """Distill the run, complete the plan from the live image, lock it: everything the
    artifact folder is written from (``problems``: why the run is not trustworthy)."""
    apt = apt_sources(opts.apt_snapshot, snapshot_timestamp(run.info.ended),
                      opts.apt_snapshot_only)
    classified = classify_log(run)
    wanted = download_candidates(run, classified)
    plan, report = distill(
        run, include=opts.include, classified=classified,
        download_hashes=download_hashes(live, wanted) if opts.ask_live else None,
        link_targets=link_targets(live, link_candidates(run)) if opts.ask_live else None,
        without=opts.without)
    report = replace(publish.without_stale_base_warning(plan, run, report),
                     incomplete=tuple(problems))
    # Before locking: the live image's final state can add pins (legacy egg-info installs).
    plan, report, staged = final_state.prepare(
        run, plan, report, dest.parent, _original(run), live if opts.ask_live else None,
        classified=classified, allow_missing=opts.allow_missing)
    try:
        plan, report = leave_out(plan, report, opts.without)
        plan = replace(plan, export_options=opts.command_words())
        plan = resolve_pythons(plan, settings, live if opts.ask_live else None,
                               allow_missing=opts.allow_missing)
        locks = lock_plan(plan, run_wheelhouse(settings, run), settings.ca_bundle,
                          opts.locker, staged.source, built_by(run))
        plan, report, locks = with_uv_sync(plan, report, locks,
                                           staged.project_locks.texts.get("uv.lock"),
                                           classified, bundle=opts.bundle)
        epoch = publish.source_date_epoch(run)
        citation = make_citation(plan, run, opts.citation, epoch)
    except BaseException:
        staged.cleanup()  # now, not whenever the collector gets to it
        raise
    return ArtifactParts(
        opts=opts, run=run, plan=plan, report=report, locks=locks, apt=apt, epoch=epoch,
        settings=settings, staged=staged, live=live, citation=citation, dest=dest,
        save_base=save_base)


def check_trust(run_dir: Path, *, allow_incomplete: bool) -> list[str]:
    """Why the run is not one synth can vouch for; refused unless ``allow_incomplete``."""
    problems = trust_problems(read_run(run_dir), run_dir)
    if problems and not allow_incomplete:
        raise ExportError(f"{run_dir} is not a run synth can vouch for: "
                          + "; ".join(problems) + ".",
                          hint="--allow-incomplete exports it anyway; the export report "
                          "then says why at its top.", path=run_dir)
    return problems


def built_by(run: LoadedRun) -> dict[str, dict[str, str]]:
    """Interpreter -> canonical name -> the backend that built each of its distributions
    live (``setuptools==84.2.1``, from its WHEEL generator), where the WHEEL names one."""
    out: dict[str, dict[str, str]] = {}
    for interp in run.interpreters:
        for d in interp.distributions:
            pin = build_backend_pin(d.wheel_generator)
            if pin is not None:
                out.setdefault(interp.path, {})[str(canonicalize_name(d.name))] = pin
    return out


def lock_plan(plan: BuildPlan, wheelhouse: Path | None, ca_bundle: Path | None,
              locker: str | Locker, source_dir: Path | None = None,
              backends: Mapping[str, Mapping[str, str]] | None = None) -> list[Lock]:
    """One lock per Python environment of the plan, each with the uv that installs it and
    the build requirements of what it builds from source (synth.export.build_lock); an
    sdist is built with the backend that built it live (``backends``: :func:`built_by`).

    The installer's pin is the same uv for every environment with the same indexes and
    target: it is locked once for them. The environments are locked one after the other
    (docs/benchmarks.md, *Stage budget*: side by side, lockers lost name lookups)."""
    conda = {c.prefix for c in plan.conda}
    installers: dict[tuple[str, ...], LockedPin] = {}
    locks = []
    for env in plan.envs:
        target = target_for(env, plan.glibc, wheelhouse, ca_bundle)
        if not isinstance(locker, str):
            locks.append(locker(env, target))
            continue

        def installer(env: PythonEnvPlan = env, target: LockTarget = target) -> LockedPin:
            key = installer_key(env, target)
            if key not in installers:
                installers[key] = lock_installer(env, target)
            return installers[key]

        local = local_build_requires(plan, env, source_dir)
        lock = complete_lock(lock_env(env, target, locker=locker), target, local,
                             installer=installer, backends=(backends or {}).get(env.python))
        if env.prefix in conda:
            lock = dataclasses.replace(lock, conda_installer=lock_rattler(env, target))
        locks.append(lock)
    return locks


def assemble_artifact(
    tmp: Path, parts: ArtifactParts
) -> tuple[tuple[str, ...], dict[str, object] | None]:
    """Write the whole artifact into the new folder ``tmp``; returns the export's warnings
    and, with ``bundle``, the vendored files' summary."""
    tmp.mkdir()
    warnings = list(parts.report.warnings)
    if parts.run.claims_error:
        warnings.append(f"claims.json is not valid, so verify's C5 will fail on it: "
                        f"{parts.run.claims_error}")
    summary = make_bundle(tmp, parts) if parts.opts.bundle else None
    if summary is not None and summary["needs_network"]:
        warnings.append("--bundle: these kept steps still reach the network, so the "
                        "artifact does not build offline: "
                        + "; ".join(map(str, summary["needs_network"])))  # type: ignore[call-overload]
    publication, notes = publish.prepare(
        tmp, parts.run, parts.plan, parts.citation, parts.dest,
        carry_base=parts.opts.archive or parts.opts.bundle, archive=parts.opts.archive,
        save=parts.save_base)
    warnings += notes
    files = render_artifact(parts.plan, parts.report, parts.locks, apt=parts.apt,
                            reader=reader_facts(parts.run.info.task_file), bundle=summary,
                            publication=publication, lock_checks=parts.staged.lock_checks)
    digests = {}
    for name, content in files.items():  # plan.json among them
        data = content.encode("utf-8") if isinstance(content, str) else content
        (tmp / name).write_bytes(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    warnings += copy_run_inputs(tmp, parts)
    if parts.opts.archive:  # SBOM, .zenodo.json, then the RO-Crate naming every file
        digests = publish.write_metadata(tmp, parts.run, parts.plan, parts.locks, parts.epoch,
                                         publication, digests)
    manifest = manifest_json(tmp, parts, warnings, summary, digests, publication)
    (tmp / MANIFEST.rel).write_text(dumps_json(manifest), encoding="utf-8")
    return tuple(sorted(set(warnings))), summary


def make_bundle(tmp: Path, parts: ArtifactParts) -> dict[str, object]:
    """``vendor/`` in ``tmp``: every .deb, wheel and download the build needs, hash-checked."""
    return bundle.make_bundle(parts.plan, parts.locks, parts.apt, parts.settings,
                              run_wheelhouse(parts.settings, parts.run), parts.live, tmp)


def copy_run_inputs(tmp: Path, parts: ArtifactParts) -> list[str]:
    """The task's probes, the agent's claims, the source (with ``source.patch``), the
    ``--include`` paths and the carried files; returns warnings."""
    run, plan = parts.run, parts.plan
    warnings = []
    # The task's probes travel with the artifact: verify needs them. run.json names the
    # file (run.json is input): only a task file that loads as one is carried.
    task_text = _task_file_text(run.info.task_file)
    if task_text is not None:
        (tmp / "task.toml").write_bytes(task_text)
    else:
        warnings.append("task file not found (or not a task file): the artifact carries no "
                        "task.toml probes")
    if run.claims_present:  # never through a link, at most the claims' cap
        try:
            claims = safe_io.read_regular(RunDir(run.run_dir).file(CLAIMS), CLAIMS.max_bytes)
        except InputFileError as exc:
            warnings.append(f"claims.json not carried: {exc.message}")
        else:
            (tmp / CLAIMS.rel).write_bytes(claims)
    parts.staged.move_into(tmp)
    _copy_includes(parts.live, plan.includes, tmp)
    final_state.copy_carried(parts.live, plan, tmp)
    return warnings


def _task_file_text(task_file: str | None) -> bytes | None:
    """The bytes of the run's task file when it is one (a regular file that loads as a task
    file, at most its 1 MiB), else None: run.json could name any file on this machine."""
    if not task_file or not is_file(task_file):
        return None
    try:
        data = safe_io.read_regular(Path(os.path.realpath(task_file)), MAX_TASK_FILE_BYTES)
        load_task(task_file, require_repo=False)
    except SynthError:
        return None
    return data


def manifest_json(tmp: Path, parts: ArtifactParts, warnings: Sequence[str],
                  summary: dict[str, object] | None = None,
                  digests: Mapping[str, str] | None = None,
                  publication: Publication | None = None) -> dict[str, Any]:
    """``manifest.json`` of the artifact in ``tmp``: it hashes every file written so far.
    ``digests``: the sha256 of files already known by their path in the artifact (the
    rendered ones, hashed from the bytes written: a long log's export report is 40 MB)."""
    plan, run, locks = parts.plan, parts.run, parts.locks
    wheel_files = sorted({f for lk in locks for f in lk.wheel_files})
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "synth_version": __version__,
        "task": plan.task,
        "run_id": plan.run_id,
        "command": plan.regenerate_command,
        "export_format": "Dockerfile",
        "base_image": {"ref": plan.base_ref, "id": plan.base_id, "digest": plan.base_digest},
        "apt": apt_manifest(plan, parts.apt),
        "base": {**base_manifest(plan.base_ref, plan.base_id, plan.base_digest,
                                 run.info.base_rootfs, run.info.base_repo_digests,
                                 run.info.base_labels),
                 **publish.base_published(publication)},
        "python": plan.python,
        "locks": {lk.env.lock_file: lock_manifest(lk) for lk in locks},
        # A bundle carries the wheelhouse wheels in vendor/wheels.
        "wheelhouse_required": bool(wheel_files) and summary is None,
        "wheel_files": wheel_files,
        "probes": "task.toml" if (tmp / "task.toml").is_file() else None,
        "claims": "claims.json" if (tmp / CLAIMS.rel).is_file() else None,
        "source": {"kind": plan.source.kind, "dir": "source", "dest": plan.source.dest,
                   "url": plan.source.url, "commit": plan.source.commit,
                   **final_state.source_manifest(plan)},
        "carried": [c.path for c in plan.carried],
        "missing": list(plan.missing),
        "inputs": dict(sorted(run.input_hashes.items())),
        "files": _file_digests(tmp, digests or {}),
        "warnings": sorted(set(warnings)),
        "incomplete": list(parts.report.incomplete),
    }
    if summary is not None:
        manifest["bundle"] = summary
    if parts.opts.archive:
        manifest["archive"] = publish.archive_manifest(plan, parts.epoch)
    return manifest


def swap_into_place(tmp: Path, dest: Path, old: Path) -> None:
    """Rename the new artifact ``tmp`` to ``dest``; a previous one moves to ``old`` first,
    and its ``verification.json`` (verify's, not the export's) into the new one."""
    if dest.exists():
        os.replace(dest, old)
        kept = old / artifact_files.VERIFICATION_FILE
        if kept.is_file() and not kept.is_symlink():
            os.replace(kept, tmp / artifact_files.VERIFICATION_FILE)
    os.replace(tmp, dest)


def write_archive(result: ExportResult, parts: ArtifactParts) -> ExportResult:
    """``<task>-<run-id>.tar.gz`` beside the artifact, deterministic; its sha256."""
    name = publish.archive_name(parts.plan)
    path = result.artifact_dir.parent / f"{name}.tar.gz"
    digest = publish.write_archive(result.artifact_dir, path, name, parts.epoch)
    return dataclasses.replace(result, archive=path, archive_sha256=digest)
