"""``synth verify``: rebuild an artifact from scratch and prove it with the pyramid.

TARGET is a run (directory, id, ``latest``) or an artifact directory (holding
``manifest.json``); for ``--runtime host`` it may also be a task. What gets verified:

* an artifact, ``--rebuild``: the image rebuilt from it;
* a run: its live image (committed at the end of the session); with ``--rebuild`` the run is
  exported, the artifact rebuilt, and both images verified side by side, with the fidelity
  (does the rebuilt image reach the live image's level) and the fingerprint comparison;
* ``--runtime host --python PATH``: that interpreter on this machine (GPU hosts without
  Docker), the repo from ``--repo DIR`` or the task's repo path.

The exit code is 0 only if the image that decides (the rebuilt one where there is one, else
the single target) has no failed or unreached level up to ``--require``; skipped and
not-applicable levels do not fail it. See docs/verify.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from synth import __version__, atomic
from synth.config import Settings
from synth.errors import (
    BuildError,
    GpuRuntimeUnavailableError,
    InputFileError,
    NotFoundError,
    SynthError,
    UsageError,
    VerifyError,
)
from synth.store import ArtifactDir, RunDir, is_file, read_claims
from synth.task import Task, load_task
from verify.c0_scan import DEFAULT_SCANNER, Scanner
from verify.result import (
    LEVEL_TITLES,
    LEVELS,
    VERIFY_FORMAT,
    Level,
    Report,
    fidelity,
    parse_level,
)
from verify.runner import PyramidSpec, run_pyramid

RuntimeKind = Literal["docker", "host"]
Say = Callable[[str], None]


@dataclass(frozen=True)
class VerifyOptions:
    target: str | None
    rebuild: bool = False
    live: bool = False
    levels: frozenset[Level] = frozenset(LEVELS)
    require: Level = "C1"
    runtime: RuntimeKind = "docker"
    python: Path | None = None
    repo: Path | None = None
    out_dir: Path | None = None
    scanner: Scanner = DEFAULT_SCANNER
    fingerprint: bool = True
    #: The rebuild's progress on the terminal: `steps` (each BuildKit step as it starts),
    #: `plain` (every line, as `docker build --progress plain`), or `quiet`.
    progress: str = "steps"
    #: Rebuild on a base whose rootfs differs from the one manifest.json records.
    allow_base_mismatch: bool = False
    #: Rebuild an artifact whose files differ from its manifest (the report says so).
    allow_modified: bool = False
    #: Rebuild with the network disabled (``docker build --network none``): the artifact
    #: must be bundled (``export --bundle``).
    offline: bool = False


@dataclass(frozen=True)
class Target:
    """What TARGET named, resolved: a run, an artifact, or (host runtime) a task."""

    kind: Literal["run", "artifact", "task"]
    path: Path
    task: Task | None
    #: The agent's claims; a str: why its claims.json is bad (C5 fails with it alone).
    claims: Mapping[str, Any] | str | None
    run: Mapping[str, Any] | None = None
    manifest: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        if self.task is not None:
            return self.task.name
        if self.manifest is not None:
            return str(self.manifest.get("task") or self.path.name)
        return self.path.name


@dataclass
class VerifyOutcome:
    document: dict[str, Any]
    out_dir: Path
    reports: dict[str, Report] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.document["passed"])

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


# ------------------------------------------------------------------------ resolving
def load_task_copy(path: Path) -> Task:
    """A task from a ``task.toml`` whose repo folder may not sit beside it (an artifact's copy)."""
    return load_task(path, require_repo=False)


def _claims(path: Path) -> Mapping[str, Any] | str | None:
    """The claims at ``path``, None when there are none, or why they are bad (a str)."""
    try:
        return read_claims(path)
    except InputFileError as exc:
        return exc.message


def resolve_target(ref: str | None, settings: Settings, runtime: RuntimeKind) -> Target:
    path = Path(ref) if ref else None
    if path is not None and os.path.lexists(path / "manifest.json"):
        path = path.resolve()
        manifest = ArtifactDir(path).manifest().raw
        task = load_task_copy(path / "task.toml") if (path / "task.toml").is_file() else None
        return Target("artifact", path, task, _claims(path / "claims.json"), manifest=manifest)
    if runtime == "host" and path is not None and (
        (path / "task.toml").is_file() or path.name == "task.toml"
    ):
        task = load_task(path)
        return Target("task", task.task_dir, task, None)
    from synth.session.rundir import find_run, read_run

    try:
        run_dir = find_run(settings, ref)
    except NotFoundError:
        if runtime == "host" and ref:
            tasks_root = Path(__file__).resolve().parent.parent / "tasks"
            try:
                task = load_task(ref, tasks_root)
                return Target("task", task.task_dir, task, None)
            except NotFoundError:
                pass
        raise
    run = read_run(run_dir)
    task_file = (run.get("task") or {}).get("task_file")
    task = load_task_copy(Path(task_file)) if task_file and is_file(task_file) else None
    return Target("run", run_dir, task, _claims(run_dir / "claims.json"), run=run)


def _host_repo(target: Target) -> Path | None:
    """A host copy of the repository for C0's scan: the artifact's ``source/`` (what the image
    holds), else the task's repo path; None: copied out of the container."""
    if target.kind == "artifact" and (target.path / "source").is_dir():
        return target.path / "source"
    repo = target.task.repo_path if target.task is not None else None
    return repo if repo is not None and repo.is_dir() else None


def default_out_dir(target: Target, settings: Settings, runtime: RuntimeKind) -> Path:
    if runtime == "host":
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return settings.artifacts_dir / "verify" / f"{target.name}-host-{stamp}"
    if target.kind == "run":
        return target.path / "verify"
    if target.path.name == "export":
        return target.path.parent / "verify"
    return target.path.with_name(target.path.name + "-verify")


def _run_python(run_dir: Path) -> str:
    primary = RunDir(run_dir).python_state().primary
    if not primary:
        raise VerifyError(f"{run_dir}/state/python.json names no primary interpreter.",
                          hint="Was the run's final state captured? `synth runs show RUN`.")
    return str(primary)


def _manifest_python(manifest: Mapping[str, Any], artifact_dir: Path) -> str:
    python = manifest.get("python")
    if isinstance(python, Mapping):
        python = python.get("path") or python.get("interpreter")
    if not python:
        raise VerifyError(f"{artifact_dir}/manifest.json names no `python` interpreter.")
    return str(python)


# --------------------------------------------------------------------------- engine
def _verify_image(
    engine: Any, image: str, spec: PyramidSpec, say: Say
) -> Report:
    from synth.engine.base import ContainerSpec

    gpus = engine.has_gpu_runtime()
    labels = {"synth.kind": "verify"}
    try:
        with engine.container(ContainerSpec(image=image, network=False, gpus=gpus,
                                            labels=labels)) as c:
            return run_pyramid(c, _with(spec, gpu_access="probe" if gpus else "none"), say)
    except GpuRuntimeUnavailableError:
        with engine.container(ContainerSpec(image=image, network=False, labels=labels)) as c:
            return run_pyramid(c, _with(spec, gpu_access="none"), say)


def _with(spec: PyramidSpec, **changes: Any) -> PyramidSpec:
    from dataclasses import replace

    return replace(spec, **changes)


def _fingerprints(engine: Any, live: str, rebuilt: str, python_live: str,
                  python_rebuilt: str, workdir: str) -> dict[str, Any]:
    from synth.fingerprint import compare_fingerprints, differences, fingerprint_image

    try:
        a = fingerprint_image(engine, live, python_live, workdir)
        b = fingerprint_image(engine, rebuilt, python_rebuilt, workdir)
    except SynthError as exc:
        return {"status": "error", "reason": exc.message}
    cmp = compare_fingerprints(a, b)
    diffs = differences(cmp, b.environment)
    return {"status": "compared", "a": "live", "b": "rebuilt", **cmp.to_json(),
            "differences": [d.to_json() for d in diffs],
            "unexplained": [d.line for d in diffs if d.explained is None],
            "explained": [d.line for d in diffs if d.explained is not None],
            "summary": cmp.summary()}


def judge_fidelity(fid: dict[str, Any], fp: Mapping[str, Any] | None) -> dict[str, Any]:
    """The rebuilt image reaches the live one only with no level gap and a fingerprint that
    agrees with the live one up to explained differences."""
    if fp is None:
        fid["fingerprint"] = "not compared"
        fid["reaches_live_level"] = False
        fid["failures"] = ["the fingerprints were not compared"]
        return fid
    failures = [f"gap {g['level']}" for g in fid["gaps"]]
    if fp.get("status") != "compared":
        failures.append(f"fingerprint {fp.get('status')}: {fp.get('reason')}")
    else:
        failures += [f"differs: {line}" for line in fp.get("unexplained", [])]
    fid["fingerprint"] = fp.get("status")
    fid["failures"] = failures
    fid["reaches_live_level"] = not failures
    return fid


def _rebuild(artifact_dir: Path, tag: str, settings: Settings, out_dir: Path,
             say: Say, progress: str = "steps", offline: bool = False) -> dict[str, Any]:
    from rich.markup import escape

    from synth import console
    from synth.artifact_build import build_artifact
    from synth.engine.build import StepLines

    log_path = out_dir / "build.log"
    start = time.monotonic()
    say(f"Rebuilding {artifact_dir} from scratch (no cache{', no network' if offline else ''}) "
        f"as {tag}; log: {log_path}")
    steps = StepLines()
    with console.err.status(escape(f"building {tag}")) as status:
        def on_line(line: str) -> None:
            shown = line if progress == "plain" else steps(line) if progress == "steps" else None
            if shown is not None:
                say(shown)
            status.update(escape(f"building {tag} ({time.monotonic() - start:.0f}s): "
                                 f"{line[:100]}"))

        try:
            image_id = build_artifact(artifact_dir, tag, settings, no_cache=True,
                                      log_path=log_path, on_line=on_line,
                                      network="none" if offline else None)
        except BuildError as exc:
            raise _tls_hint(exc, log_path) from exc
    seconds = time.monotonic() - start
    say(f"Rebuilt {tag} in {seconds:.1f}s")
    return {"image": tag, "image_id": image_id, "seconds": round(seconds, 1),
            "log": "build.log", "no_cache": True, "offline": offline,
            "artifact_dir": str(artifact_dir)}


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


def _tls_hint(exc: BuildError, log_path: Path) -> BuildError:
    """The build error, saying so when the log shows a TLS verification failure."""
    try:
        log = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        log = ""
    if "CERTIFICATE_VERIFY_FAILED" not in log and "CERTIFICATE_VERIFY_FAILED" not in exc.message:
        return exc
    return BuildError(
        f"{exc.message}\nThe rebuild failed on TLS: CERTIFICATE_VERIFY_FAILED in {log_path} "
        "(an intercepting proxy's certificate the build does not trust).",
        hint="Pass the CA bundle that signs it: --ca-bundle PATH (or SYNTH_CA_BUNDLE); it "
        "reaches the build as a BuildKit secret and never lands in the image.")


def _artifact_for_run(target: Target, settings: Settings, say: Say,
                      bundle: bool = False) -> Path:
    from synth.export import export_run

    say(f"Exporting {target.path}{' with --bundle' if bundle else ''}")
    result = export_run(target.path, settings, bundle=bundle)
    return Path(result.artifact_dir)


def _artifact_run(target: Target, settings: Settings) -> Path:
    """The run an artifact was exported from (its manifest's task and run_id)."""
    from synth.session.rundir import find_run

    manifest = target.manifest or {}
    task, run_id = manifest.get("task"), manifest.get("run_id")
    if not task or not run_id:
        raise VerifyError(f"{target.path}/manifest.json names no run; --live has no image "
                          "to compare with.")
    try:
        return find_run(settings, f"{task}/{run_id}")
    except NotFoundError as exc:
        raise NotFoundError(
            f"The run {task}/{run_id} this artifact was exported from is not under "
            f"{settings.runs_dir}, so --live has no image to compare with.",
            hint="Point --artifacts at the folder holding its runs/, or drop --live.",
        ) from exc


#: Written into the artifact folder after verify; not part of the export, so the manifest
#: check and the rebuilt tag leave it out.
VERIFICATION_FILE = "verification.json"


def _artifact_files(artifact_dir: Path) -> dict[str, str]:
    """Every file of the artifact (relative POSIX path -> sha256), manifest.json and
    verification.json left out."""
    out: dict[str, str] = {}
    for p in sorted(artifact_dir.rglob("*")):
        rel = p.relative_to(artifact_dir).as_posix()
        if rel in ("manifest.json", VERIFICATION_FILE) or not (p.is_file() or p.is_symlink()):
            continue
        data = str(p.readlink()).encode() if p.is_symlink() else p.read_bytes()
        out[rel] = hashlib.sha256(data).hexdigest()
    return out


def check_artifact(artifact_dir: Path,
                   manifest: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
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


def _rebuilt_tag(task_name: str, files: Mapping[str, str], manifest_bytes: bytes) -> str:
    """A tag derived from the digests of all the artifact's files (and the manifest)."""
    h = hashlib.sha256(hashlib.sha256(manifest_bytes).digest())
    for rel, digest in sorted(files.items()):
        h.update(f"{rel}\0{digest}\n".encode())
    return f"synth-rebuilt/{task_name}:{h.hexdigest()[:12]}"


def _checked_artifact(artifact_dir: Path, allow_modified: bool, doc: dict[str, Any],
                      say: Say) -> dict[str, str]:
    manifest = ArtifactDir(artifact_dir).manifest().raw
    files, problems = check_artifact(artifact_dir, manifest)
    doc["artifact_check"] = {"files": len(files), "problems": problems,
                             "allow_modified": allow_modified}
    if problems and not allow_modified:
        raise VerifyError(
            f"The artifact {artifact_dir} does not match its manifest.json: "
            + "; ".join(problems[:20]) + (f"; … {len(problems) - 20} more"
                                         if len(problems) > 20 else ""),
            hint="Re-export it (`synth export`), or pass --allow-modified to rebuild it as it "
            "is (the report says so).")
    if problems:
        say(f"warning: rebuilding a MODIFIED artifact (--allow-modified): {'; '.join(problems)}")
    return files


# --------------------------------------------------------------------------- verify
def verify(opts: VerifyOptions, settings: Settings, say: Say | None = None) -> VerifyOutcome:
    from synth import console

    say = say or console.say
    if opts.runtime == "host" and opts.python is None:
        raise UsageError("--runtime host needs --python PATH (the environment's interpreter).")
    if opts.runtime == "docker" and opts.python is not None:
        raise UsageError("--python belongs to --runtime host; in a container the interpreter "
                         "comes from the artifact's manifest or the run's state.")
    if opts.offline and not opts.rebuild:
        raise UsageError("--offline is about the rebuild: add --rebuild.")
    target = resolve_target(opts.target, settings, opts.runtime)
    out_dir = (opts.out_dir or default_out_dir(target, settings, opts.runtime)).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    task = target.task
    base = PyramidSpec(python="", task=task, claims=target.claims, levels=opts.levels,
                       scanner=opts.scanner, repo_dir=_host_repo(target))
    reports: dict[str, Report] = {}
    doc: dict[str, Any] = {
        "format": VERIFY_FORMAT, "synth_version": __version__,
        "target": {"kind": target.kind, "path": str(target.path), "task": target.name},
        "require": opts.require, "levels_selected": sorted(opts.levels),
        "build": None, "fidelity": None, "fingerprint": None,
    }
    if opts.runtime == "host":
        reports["host"] = _verify_host(opts, base, task, say)
        decides = "host"
    else:
        decides = _verify_docker(opts, settings, target, base, out_dir, doc, reports, say)
    doc["reports"] = {k: r.to_json() for k, r in reports.items()}
    doc["decides"] = decides
    doc["passed"] = reports[decides].passes_up_to(opts.require)
    if "rebuilt" in reports and "live" in reports:
        doc["fidelity"] = judge_fidelity(fidelity(reports["rebuilt"], reports["live"]),
                                         doc["fingerprint"] if opts.fingerprint else {
                                             "status": "compared", "unexplained": []})
        if not doc["fidelity"]["reaches_live_level"]:
            doc["fidelity_failed"] = "; ".join(doc["fidelity"]["failures"][:3])
            doc["passed"] = False
    atomic.write_json(out_dir / "verify.json", doc)
    atomic.write_text(out_dir / "verify.md", render_markdown(doc))
    artifact_dir = (doc.get("build") or {}).get("artifact_dir")
    if artifact_dir:
        atomic.write_json(Path(artifact_dir) / VERIFICATION_FILE, verification_record(doc))
    return VerifyOutcome(doc, out_dir, reports)


def verification_record(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What verify leaves in the artifact folder: levels, verdict, date and the machine."""
    rebuilt = doc["reports"].get("rebuilt") or {}
    return {
        "format": 1,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "synth_version": __version__,
        "docker_version": _docker_version(),
        "architecture": platform.machine(),
        "gpu_driver": _gpu_driver(),
        "require": doc["require"],
        "passed": doc["passed"],
        "verdict": verdict_line(doc),
        "image": (doc.get("build") or {}).get("image"),
        "levels": {r["level"]: r["status"] for r in rebuilt.get("levels", [])},
        "highest": rebuilt.get("highest"),
        "fidelity": (doc.get("fidelity") or {}).get("reaches_live_level"),
        "allow_modified": bool((doc.get("artifact_check") or {}).get("problems")),
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


def _verify_host(opts: VerifyOptions, base: PyramidSpec, task: Task | None, say: Say) -> Report:
    from synth.engine.host import HostRuntime

    assert opts.python is not None
    rt = HostRuntime(opts.python)
    repo = opts.repo or (task.repo_path if task else None)
    if repo is None or not repo.is_dir():
        raise UsageError("The host runtime needs the repository: pass --repo DIR.",
                         hint="Or name a task whose repo.path exists on this machine.")
    repo = repo.resolve()
    say(f"Verifying {rt.python} on this host (repo {repo})")
    spec = _with(base, python=str(rt.python), repo_dir=repo, workdir=str(repo),
                 gpu_access="probe", target={"kind": "host", "host_python": str(rt.python)})
    return run_pyramid(rt, spec, say)


def _before_rebuild(opts: VerifyOptions, settings: Settings, target: Target, engine: Any,
                    doc: dict[str, Any], say: Say) -> tuple[Path, Mapping[str, Any], str, str]:
    """The artifact to rebuild (a run is exported first), checked: its files against its
    manifest, its bundle when ``--offline``, its base; with its interpreter and the tag."""
    artifact_dir = (target.path if target.kind == "artifact"
                    else _artifact_for_run(target, settings, say, bundle=opts.offline))
    manifest = ArtifactDir(artifact_dir).manifest().raw
    if opts.offline:
        check_offline(artifact_dir, manifest)
    python = _manifest_python(manifest, artifact_dir)
    files = _checked_artifact(artifact_dir, opts.allow_modified, doc, say)
    if isinstance(manifest.get("base"), dict):
        from synth.base_images import check_base

        say("Base image: " + check_base(engine, manifest["base"],
                                        allow_mismatch=opts.allow_base_mismatch, say=say))
    tag = _rebuilt_tag(target.name, files, (artifact_dir / "manifest.json").read_bytes())
    return artifact_dir, manifest, python, tag


def _verify_docker(opts: VerifyOptions, settings: Settings, target: Target, base: PyramidSpec,
                   out_dir: Path, doc: dict[str, Any], reports: dict[str, Report],
                   say: Say) -> str:
    from synth.engine.docker import DockerEngine

    if target.kind == "artifact" and not opts.rebuild:
        raise UsageError(f"{target.path} is an artifact: verify it with --rebuild.",
                         hint="`synth verify ARTIFACT_DIR --rebuild` builds it from scratch "
                         "and runs the pyramid on the new image.")
    if target.kind == "task":
        raise UsageError("A task is verified through a run or an artifact (or --runtime host).")
    engine = DockerEngine.connect()
    live_ref: str | None = None
    live_python: str | None = None
    live_run = target.path if target.kind == "run" else None
    run_info = target.run
    if target.kind == "artifact" and opts.live:
        live_run = _artifact_run(target, settings)
        from synth.session.rundir import read_run

        run_info = read_run(live_run)
    if live_run is not None:
        live_ref = ((run_info or {}).get("live_image") or {}).get("ref")
        if (opts.live or not opts.rebuild) and not live_ref:
            raise VerifyError(f"Run {live_run} has no live image (run.json live_image).",
                              hint="Verify its artifact instead: --rebuild.")
        if live_ref and not engine.image_exists(live_ref):
            if opts.live or not opts.rebuild:
                raise NotFoundError(f"The live image {live_ref} is not on this engine.")
            live_ref = None
        if live_ref:
            live_python = _run_python(live_run)
    decides = "live"
    if opts.rebuild:
        artifact_dir, manifest, python, tag = _before_rebuild(opts, settings, target, engine,
                                                             doc, say)
        doc["build"] = _rebuild(artifact_dir, tag, settings, out_dir, say, opts.progress,
                                offline=opts.offline)
        doc["target"]["artifact_dir"] = str(artifact_dir)
        say(f"Verifying the rebuilt image {tag}")
        reports["rebuilt"] = _verify_image(
            engine, tag, _with(base, python=python,
                               target={"kind": "rebuilt", "image": tag}), say)
        decides = "rebuilt"
        if live_ref and live_python and opts.fingerprint:
            say("Comparing environment fingerprints (live vs rebuilt)")
            # The source tree lives where the artifact puts it, whatever folder the task's
            # probes run in (a task may run them from /tmp, away from an unbuilt checkout).
            source = manifest.get("source")
            workdir = str((source.get("dest") if isinstance(source, dict) else None)
                          or "/workspace")
            doc["fingerprint"] = _fingerprints(engine, live_ref, tag, live_python, python,
                                               workdir)
    if live_ref and live_python:
        say(f"Verifying the live image {live_ref}")
        reports["live"] = _verify_image(
            engine, live_ref, _with(base, python=live_python,
                                    target={"kind": "live", "image": live_ref}), say)
    return decides


# -------------------------------------------------------------------------- output
_MARK = {"pass": "pass", "fail": "FAIL", "skipped": "skipped", "not_applicable": "n/a",
         "not_reached": "not reached"}


def cell(r: Mapping[str, Any] | None) -> str:
    if r is None:
        return ""
    text = _MARK.get(str(r.get("status")), str(r.get("status")))
    return f"{text}: {r['reason']}" if r.get("reason") else text


def _levels(doc: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    report = doc["reports"].get(key) or {}
    return {r["level"]: r for r in report.get("levels", [])}


def report_columns(doc: Mapping[str, Any]) -> list[str]:
    return [k for k in ("rebuilt", "live", "host") if k in doc["reports"]]


def extra_lines(doc: Mapping[str, Any]) -> list[str]:
    """What a reader needs besides the table: missing modules, claims, fidelity, fingerprint."""
    lines: list[str] = []
    for key in report_columns(doc):
        levels = _levels(doc, key)
        lines += _c0_lines(key, levels.get("C0") or {})
        lines += _c0i_lines(key, levels.get("C0i") or {})
        c5 = levels.get("C5") or {}
        if c5.get("status") in ("pass", "fail", "skipped") and c5.get("metrics"):
            cm = c5["metrics"]
            lines.append(
                f"{key} C5: {cm['hallucinations']} false claim(s) — path "
                f"{cm['path_hallucinations']}, version {cm['version_hallucinations']}, "
                f"capability {cm['capability_hallucinations']}; {cm['unverifiable']} "
                f"unverifiable, {cm['unknown']} unknown")
            for check in (c5.get("details") or {}).get("checks", []):
                if check["verdict"] in ("hallucination", "unverifiable"):
                    lines.append(f"  {check['verdict']}: {check['field']} = "
                                 f"{json.dumps(check['claimed'])} (observed "
                                 f"{json.dumps(check['observed'])}) {check['note']}".rstrip())
    lines += _fidelity_lines(doc)
    check = doc.get("artifact_check") or {}
    if check.get("problems"):
        lines.append("artifact: MODIFIED since export, rebuilt anyway (--allow-modified): "
                     + "; ".join(check["problems"][:10]))
    build = doc.get("build")
    if build:
        lines.append(f"rebuilt {build['image']} in {build['seconds']}s (no cache); "
                     f"log {build['log']}")
    return lines


def _fidelity_lines(doc: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    fid = doc.get("fidelity")
    if fid:
        verdict = ("reaches the live image's level and agrees with it" if
                   fid["reaches_live_level"] else "does NOT match the live image")
        lines.append(f"fidelity: the rebuilt image {verdict} (highest level passed: live "
                     f"{fid['live_highest'] or 'none passed'}, rebuilt "
                     f"{fid['rebuilt_highest'] or 'none passed'})")
        for gap in fid["gaps"]:
            lines.append(f"  gap {gap['level']}: live {gap['live']}; rebuilt {gap['rebuilt']}")
    fp = doc.get("fingerprint")
    if fp:
        if fp.get("status") == "compared":
            unexplained = fp.get("unexplained", [])
            lines.append(
                f"fingerprint (live vs rebuilt): {len(unexplained)} unexplained "
                f"difference(s), {len(fp.get('explained', []))} explained; packages "
                f"{'equal' if fp['packages_equal'] else 'DIFFER'}, native .so "
                f"{'equal' if fp['native_equal'] else 'DIFFER'}, contents "
                f"{'equal' if fp['content_equal'] else 'differ'}")
            lines.extend(f"  DIFFERS {line}" for line in unexplained[:40])
            if len(unexplained) > 40:
                lines.append(f"  … and {len(unexplained) - 40} more in verify.json")
        else:
            lines.append(f"fingerprint: {fp.get('status')}: {fp.get('reason')}")
    return lines


def _c0_lines(key: str, c0: Mapping[str, Any]) -> list[str]:
    m = c0.get("metrics") or {}
    classes = m.get("classes") or {}
    apart = ", ".join(f"{v.get('missing', 0)} {k.replace('_', ' ')}" for k, v in
                      classes.items() if k != "required" and v.get("missing"))
    lines = [] if not m else [
        f"{key} C0: {m.get('missing_statements', 0)}/{m.get('import_statements', 0)} required "
        f"import statements unresolved (synth missing_statement_ratio "
        f"{m.get('missing_statement_ratio', 0)}, allowed {m.get('max_missing_ratio', 0)}); "
        f"ResearchEnvBench missing top-level modules "
        f"{m.get('researchenvbench_missing_top_modules', 0)}/"
        f"{m.get('researchenvbench_top_modules', 0)} "
        f"(ratio {m.get('researchenvbench_missing_ratio', 0)}); {m.get('files_in_scope', 0)}"
        f"/{m.get('files', 0)} files in scope, scanned with {m.get('scanner')}"
        + (f"; not failing: {apart} missing" if apart else "")]
    details = c0.get("details") or {}
    for miss in details.get("missing", []):
        lines.append(f"  missing {miss['module']} -> {_hint(miss)} "
                     f"(at {', '.join(miss['locations'][:3])})")
    for miss in details.get("optional_missing", [])[:10]:
        lines.append(f"  {miss.get('class', 'optional').replace('_', ' ')}: {miss['module']} "
                     f"-> {_hint(miss)} (at {', '.join(miss['locations'][:2])})")
    return lines


def _hint(miss: Mapping[str, Any]) -> str:
    source = miss.get("distribution_source") or "guess"
    if source == "guess":
        return f"no known distribution (perhaps `{miss['distribution']}`, a guess)"
    return f"install {miss['distribution']} ({source})"


def _c0i_lines(key: str, c0i: Mapping[str, Any]) -> list[str]:
    m = c0i.get("metrics") or {}
    if not m:
        return []
    opt = m.get("optional_failed", 0)
    lines = [f"{key} C0i: {m.get('ok', 0)}/{m.get('modules', 0)} modules import"
             + (f"; {opt} fail only for lack of an optional extra" if opt else "")]
    for r in (c0i.get("details") or {}).get("failed", [])[:10]:
        where = f" at {r['where']}" if r.get("where") else ""
        lines.append(f"  {r['module']}: {r.get('error_class')}: "
                     f"{str(r.get('message'))[:160]}{where}")
    for r in (c0i.get("details") or {}).get("optional_failed", [])[:10]:
        lines.append(f"  optional ({r.get('optional')}, not failing): {r['module']}: "
                     f"{r.get('error_class')}: {str(r.get('message'))[:160]}")
    pip = (c0i.get("details") or {}).get("pip_check") or {}
    if pip.get("ran") and pip.get("exit_code"):
        first = (pip.get("output") or "").strip().splitlines()[:3]
        lines.append(f"  pip check (a finding, not a verdict): {'; '.join(first)}")
    return lines


def verdict_line(doc: Mapping[str, Any]) -> str:
    """The last line: the verdict on --require, and every level that passed on its own."""
    key = doc["decides"]
    report = doc["reports"][key]
    passed = report.get("passed_levels") or [
        r["level"] for r in report.get("levels", []) if r.get("status") == "pass"]
    failed = [r["level"] for r in report.get("levels", []) if r.get("status") == "fail"
              and LEVELS.index(r["level"]) <= LEVELS.index(doc["require"])]
    word = "PASSED" if doc["passed"] else "FAILED"
    head = (f"{word}: the {key} target passes every applicable level up to {doc['require']}"
            if not failed else
            f"{word}: the {key} target fails {', '.join(failed)} (required up to "
            f"{doc['require']})")
    if not failed and doc.get("fidelity_failed"):
        head = f"FAILED: the rebuilt image differs from the live one ({doc['fidelity_failed']})"
    return head + (f" (levels passed: {', '.join(passed)}; highest {report.get('highest')})"
                   if passed else " (no level passed)")


def render_markdown(doc: Mapping[str, Any]) -> str:
    cols = report_columns(doc)
    out = [f"# synth verify — {doc['target']['task']}", "",
           f"Target: {doc['target']['kind']} `{doc['target']['path']}`", ""]
    for key in cols:
        t = doc["reports"][key]["target"]
        where = t.get("image") or t.get("runtime")
        out.append(f"- **{key}**: `{where}`, python `{t.get('python')}`")
    out += ["", "| level | what | " + " | ".join(cols) + " |",
            "|---|---|" + "---|" * len(cols)]
    for level in LEVELS:
        cells = [cell(_levels(doc, k).get(level)).replace("|", "\\|") for k in cols]
        out.append(f"| {level} | {LEVEL_TITLES[level]} | " + " | ".join(cells) + " |")
    out += ["", verdict_line(doc), ""]
    extra = extra_lines(doc)
    if extra:
        out += ["```", *extra, "```", ""]
    return "\n".join(out)


def print_table(doc: Mapping[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from synth import console

    cols = report_columns(doc)
    table = Table(title=f"synth verify: {escape(str(doc['target']['task']))}",
                  show_lines=False)
    table.add_column("level")
    table.add_column("what")
    for key in cols:
        table.add_column(key, overflow="fold")
    colors = {"pass": "green", "fail": "red", "not_reached": "red", "skipped": "yellow",
              "not_applicable": "dim"}
    for level in LEVELS:
        row = [level, LEVEL_TITLES[level]]
        for key in cols:
            r = _levels(doc, key).get(level)
            color = colors.get(str(r.get("status")) if r else "", "")
            text = escape(cell(r))
            row.append(f"[{color}]{text}[/]" if color else text)
        table.add_row(*row)
    console.out.print(table)
    for line in extra_lines(doc):
        console.out.print(line, markup=False, highlight=False)
    style = "bold green" if doc["passed"] else "bold red"
    console.out.print(f"[{style}]{escape(verdict_line(doc))}[/]")


def parse_levels(text: str | None) -> frozenset[Level]:
    if not text:
        return frozenset(LEVELS)
    try:
        return frozenset(parse_level(p) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def parse_require(text: str) -> Level:
    try:
        return parse_level(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
