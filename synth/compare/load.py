"""``synth diff`` at the edges: resolve A and B, load them into :class:`synth.compare.diff.Side`.

A and B are each a run (a run directory, a run id or unique prefix, ``<task>/<run-id>``,
``latest``), an artifact (a directory with ``manifest.json`` or a ``Dockerfile``), or an
image on the engine (compared through its environment fingerprint). ``run:``,
``artifact:`` and ``image:`` prefixes force the kind. All I/O of the diff lives here;
:mod:`synth.compare.diff` compares what this returns.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from synth.compare.diff import (
    BUILD_AGAINST,
    DiffResult,
    NativeBuildInfo,
    PyDist,
    Side,
    conda_entry,
    diff_sides,
    dockerfile_steps,
    render_markdown,
    render_terminal,
)
from synth.compare.fingerprint import name_content_files
from synth.config import Settings
from synth.distill.load import LoadedRun, load_run
from synth.distill.plan import distill
from synth.errors import (
    EngineUnavailableError,
    InputFileError,
    NotFoundError,
    SynthError,
    UsageError,
)
from synth.formats import artifact_files
from synth.formats.claims import Claims
from synth.formats.fingerprint import Fingerprint
from synth.formats.manifest import Manifest
from synth.formats.plan import MANAGED_PYTHON_LOCK, PLAN_FILE, BuildPlan, DistillReport, NativeStep
from synth.formats.store import MANIFEST, PLAN, ArtifactDir, RunDir, is_dir, load, read_verify
from synth.formats.verify import VerifyDocument
from synth.record.rundir import find_run, read_run, trust_problems
from synth.ui import console
from synth.util import safe_io

#: Exit status of ``synth diff`` when it cannot compare (like diff(1)).
DIFF_ERROR_EXIT = 2

__all__ = ["DiffOptions", "SideLoader", "diff_command"]


@dataclass(frozen=True)
class DiffOptions:
    """One ``synth diff``. It names the artifacts folder, not the settings: the diff loads
    them inside its own error boundary, so that any error exits 2, as diff(1) does."""

    a: str
    b: str
    json: bool = False
    markdown: bool = False
    #: The interpreter to fingerprint in images (default: the image's venv, else python3).
    python: str | None = None
    #: Also fingerprint the live image of runs (native .so and file hashes).
    fingerprint: bool = False
    artifacts_dir: Path | None = None


def diff_command(opts: DiffOptions, images: ImageSource | None = None) -> int:
    """Load, compare, print; 0 equal, 1 differ, 2 error (SynthError reported on stderr).
    ``images``: the images' source (the command line gives the engine's)."""
    try:
        settings = Settings.load(artifacts_dir=opts.artifacts_dir)
        loader = SideLoader(settings, python=opts.python, fingerprint=opts.fingerprint,
                            images=images)
        result = diff_sides(*loader.name_content_files(_load_checked(loader, opts.a),
                                                       _load_checked(loader, opts.b)))
    except SynthError as exc:
        console.print_error(code=DIFF_ERROR_EXIT, kind=type(exc).__name__,
                            message=f"could not compare: {exc.message}", hint=exc.hint,
                            fields=exc.fields())
        return DIFF_ERROR_EXIT
    emit(result, json_out=opts.json, markdown=opts.markdown)
    return result.exit_code


def _load_checked(loader: SideLoader, ref: str) -> Side:
    """Load one side; a malformed file is an error (exit 2), never a crash that exits 1
    and would read as "different"."""
    try:
        return loader.load(ref)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{ref}: malformed input ({type(exc).__name__}: {exc}).",
                         hint="Check the file against docs/formats.md.") from exc


def emit(result: DiffResult, *, json_out: bool, markdown: bool) -> None:
    if json_out:
        console.print_json(result.to_json())
    elif markdown:
        console.write_stdout(render_markdown(result))
    else:
        render_terminal(result, console.out)


class ImageSource(Protocol):
    """What ``synth diff`` asks of images: the engine's inspection and the fingerprint
    probe (:class:`synth.engine.fingerprint.ImageProbe`, made by the command line)."""

    def ping(self) -> None:
        """Nothing when the engine answers, else :class:`EngineUnavailableError`."""
        ...

    def image_exists(self, ref: str) -> bool: ...

    def image_inspect(self, ref: str) -> dict[str, Any]: ...

    def fingerprint(self, image_ref: str, python: str, workdir: str = "/workspace",
                    env: Mapping[str, str] | None = None) -> Fingerprint: ...

    def with_dist_files(self, fp: Fingerprint, names: list[str]) -> Fingerprint: ...


class SideLoader:
    """Resolves references and loads sides; ``images`` is the images' source (the engine),
    asked only when a side needs it (an image, a size, a fingerprint)."""

    def __init__(
        self,
        settings: Settings,
        *,
        python: str | None = None,
        fingerprint: bool = False,
        images: ImageSource | None = None,
    ) -> None:
        self.settings = settings
        self.python = python
        self.fingerprint = fingerprint
        self._images = images
        self._engine: ImageSource | None = None
        self._engine_error: SynthError | None = None

    # ------------------------------------------------------------------ engine
    def engine(self) -> ImageSource | None:
        """The images' source, or None when no engine answers (the reason kept)."""
        if self._engine is None and self._engine_error is None:
            if self._images is None:
                self._engine_error = EngineUnavailableError(
                    "this comparison was not given a container engine")
                return None
            try:
                self._images.ping()
                self._engine = self._images
            except EngineUnavailableError as exc:
                self._engine_error = exc
        return self._engine

    def _engine_or_raise(self) -> ImageSource:
        engine = self.engine()
        if engine is None:
            assert self._engine_error is not None
            raise self._engine_error
        return engine

    # --------------------------------------------------------------- resolving
    def load(self, ref: str) -> Side:
        kind, _, rest = ref.partition(":")
        if kind in ("run", "artifact", "image") and rest:
            return self._load_kind(kind, rest)
        path = Path(ref)
        if path.is_file() and path.name in ("run.json", "manifest.json", "Dockerfile"):
            path = path.parent
        if path.is_dir():
            if os.path.lexists(path / "run.json"):
                return load_run_side(path, self)
            for cand in (path, path / "export"):
                if os.path.lexists(cand / "manifest.json") or (cand / "Dockerfile").is_file():
                    return load_artifact_side(cand, self)
            raise NotFoundError(
                f"{path} is neither a run directory (no run.json) nor an artifact "
                "(no manifest.json or Dockerfile).", ref=ref,
            )
        try:
            return load_run_side(self.find_run(ref), self)
        except NotFoundError as run_error:
            engine = self.engine()
            if engine is not None and engine.image_exists(ref):
                return load_image_side(ref, self)
            why = (f"no engine to look for an image ({self._engine_error.message})"
                   if self._engine_error else "no image of that name on the engine")
            raise NotFoundError(
                f"{ref} is not a run ({run_error.message.rstrip('.')}), not a directory, "
                f"and {why}.",
                hint="Name a run (`synth runs list`), an artifact directory, or an image "
                "(`image:REF`).", ref=ref,
            ) from run_error

    def _load_kind(self, kind: str, ref: str) -> Side:
        if kind == "run":
            return load_run_side(self.find_run(ref), self)
        if kind == "artifact":
            path = Path(ref)
            if os.path.lexists(path / "export" / "manifest.json"):
                path = path / "export"
            if not path.is_dir():
                raise NotFoundError(f"Artifact directory {ref} does not exist.", ref=ref,
                                    what="artifact")
            return load_artifact_side(path, self)
        if not self._engine_or_raise().image_exists(ref):
            raise NotFoundError(f"Image {ref} does not exist on this engine.", ref=ref,
                                what="image")
        return load_image_side(ref, self)

    def find_run(self, ref: str) -> Path:
        return find_run(self.settings, ref)

    # ------------------------------------------------------------------ images
    def image_size(self, ref: str | None) -> tuple[int | None, str | None]:
        """Size of an image, or None with the reason."""
        if not ref:
            return None, None
        engine = self.engine()
        if engine is None:
            return None, "no engine: image size unknown"
        if not engine.image_exists(ref):
            return None, f"image {ref} is gone from the engine: size unknown"
        return int(engine.image_inspect(ref).get("Size") or 0), None

    def fingerprint_of(self, ref: str, python: str) -> Fingerprint:
        return self._engine_or_raise().fingerprint(ref, python)

    def name_content_files(self, a: Side, b: Side) -> tuple[Side, Side]:
        """Where both sides carry an image's fingerprint: each distribution whose files
        differ at the same version gets its files listed on both sides (named in the diff)."""
        engine = self.engine()
        if a.fingerprint is None or b.fingerprint is None or engine is None:
            return a, b
        fa, fb = name_content_files(engine, a.fingerprint, b.fingerprint)
        return replace(a, fingerprint=fa), replace(b, fingerprint=fb)


# ----------------------------------------------------------------------------- helpers
def wheelhouse_index(path: str | Path | None) -> set[tuple[str, str]]:
    """(canonical name, version) of every wheel in a wheelhouse folder on this machine."""
    if not path:
        return set()
    folder = Path(path)
    if not is_dir(folder):  # a path recorded in run.json is data: it may not even be a name
        return set()
    out = set()
    for wheel in folder.glob("*.whl"):
        try:
            name, version, _build, _tags = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            continue
        out.add((str(name), str(version)))
    return out


def _with_wheelhouse(d: PyDist, wheels: set[tuple[str, str]]) -> PyDist:
    if d.source == "index" and d.version and (d.name, d.version) in wheels:
        return PyDist(d.name, d.version, "wheelhouse", d.url)
    return d


def pyramid_from_verify(doc: VerifyDocument) -> dict[str, dict[str, str]]:
    """target name -> level -> "status[: reason]", from a verify.json (read, its format
    checked, by the store); a report is named by its target's kind, else by its key."""
    out: dict[str, dict[str, str]] = {}
    for key in sorted(doc.reports):
        report = doc.reports[key]
        name = str(report.target.get("kind") or key)
        while name in out:
            name += "'"
        out[name] = {r.level: r.summary for r in report.levels}
    return out


def _verify_json(directory: Path) -> Path | None:
    """Where ``synth verify`` left its verify.json for a run or an artifact directory (any
    entry of that name: the store says what is wrong with one that is not a file)."""
    for cand in (directory / "verify" / "verify.json", directory / "verify.json"):
        if os.path.lexists(cand):
            return cand
    return None


def _load_pyramid(directory: Path) -> dict[str, dict[str, str]] | None:
    path = _verify_json(directory)
    return pyramid_from_verify(read_verify(path)) if path else None


def _against(dists: Mapping[str, PyDist]) -> tuple[tuple[str, str], ...]:
    return tuple((n, dists[n].version or "?") for n in BUILD_AGAINST if n in dists)


def _native_from_steps(steps: Iterable[NativeStep], dists: Mapping[str, PyDist]
                       ) -> tuple[NativeBuildInfo, ...]:
    """Native builds from the plan's steps; a later build of the same thing replaces an
    earlier one."""
    out: dict[str, NativeBuildInfo] = {}
    against = _against(dists)
    for s in steps:
        key, version = _step_key(s)
        out[key] = NativeBuildInfo(
            key=key, tool=s.tool, command=shlex.join(s.argv), cwd=s.cwd,
            env=tuple(sorted(s.env)), against=against, version=version)
    return tuple(out[k] for k in sorted(out))


def _step_key(step: NativeStep) -> tuple[str, str | None]:
    """A native step's key (the canonical name of the distribution it installs, else its
    command's first words) and the version it installs."""
    name, _, version = step.distribution.partition("==") if step.distribution else ("", "", "")
    return (str(canonicalize_name(name)) if name else " ".join(step.argv[:3])), version or None


# --------------------------------------------------------------------------------- runs
def load_run_side(run_dir: Path, loader: SideLoader) -> Side:
    """A run as a side: every file through the store, so a corrupt or missing one is an
    error (exit 2), never an "equal" section."""
    run_dir = run_dir.resolve()
    record = RunDir(run_dir).run_record()
    loaded = load_run(run_dir, with_task=False)  # the task file is not the run's
    warnings: list[str] = []
    wheels = wheelhouse_index(record.wheelhouse) | wheelhouse_index(loader.settings.wheelhouse)
    interpreter: dict[str, str] = {"base_image": record.base_image.ref}
    dists: dict[str, PyDist] | None = None
    interp = next((i for i in loaded.interpreters if i.path == loaded.primary), None)
    if interp is None:
        warnings.append("no primary interpreter in state/python.json")
    else:
        interpreter.update(python=interp.version, path=interp.path)
        dists = {}
        for d in interp.distributions:
            pd = PyDist(name=str(canonicalize_name(d.name)), version=d.version or None,
                        source=d.source, url=d.url)
            dists[pd.name] = _with_wheelhouse(pd, wheels)
    apt_added = dict(loaded.apt.added)
    apt_added.update({k: v[1] for k, v in loaded.apt.changed.items()})
    native, report = _run_native_builds(loaded, dists or {}, warnings)
    live_image = record.live_image.ref if record.live_image is not None else None
    pruned = record.live_image.pruned if record.live_image is not None else None
    if pruned:  # synth gc --keep-runs removed it, and said so in run.json
        warnings.append(f"live image {live_image} pruned on {pruned} (synth gc --keep-runs): "
                        "its size and fingerprint are not compared")
        live_image = None
    size, fp = _live_image_facts(live_image, loaded.primary, loader, warnings)
    exported = run_dir / "export" / "Dockerfile"
    dockerfile = (dockerfile_steps(_text(exported)) if os.path.lexists(exported) else None)
    # The run's own export, where it has one: its locks, as its Dockerfile above.
    locks = (lock_fields(run_dir / "export")
             if os.path.lexists(run_dir / "export" / "manifest.json") else None)
    return Side(
        kind="run",
        label=f"{record.task.name}/{record.run_id}",
        identity={
            "run_dir": str(run_dir), "run_id": record.run_id, "task": record.task.name,
            "agent": record.agent.kind,
            "script": Path(record.agent.script).name if record.agent.script else None,
            "status": record.status, "live_image": live_image,
        },
        interpreter=interpreter, distributions=dists, apt_added=apt_added,
        conda=run_conda(loaded),
        apt_all=dict(loaded.apt.final) or None, env=dict(loaded.persisted_env),
        native_builds=native, dockerfile=dockerfile, locks=locks, pyramid=_load_pyramid(run_dir),
        image_size=size, fingerprint=fp, warnings=tuple(warnings),
        claims=claims_fields(RunDir(run_dir).claims()),
        provenance=None if report is None else provenance_fields(
            report, _trust_problems(run_dir)),
        files={f"inputs/{rel}": d for rel, d in sorted(loaded.input_hashes.items())},
        origin=record.run_id,
    )


def run_conda(run: LoadedRun) -> dict[str, str]:
    """The conda packages of each prefix the agent made or added packages to: what the
    artifact recreates (a prefix the base image had unchanged is the base's)."""
    out: dict[str, str] = {}
    for interp in run.interpreters:
        found = interp.conda
        if found is None or not (interp.created_by_agent or found.added):
            continue
        for p in found.packages:
            out[f"{found.prefix} {p.name}"] = conda_entry(p.version, p.build, p.channel)
    return out


def artifact_conda(plan: BuildPlan) -> dict[str, str]:
    """The conda packages of each prefix the artifact recreates (plan.json)."""
    return {f"{env.prefix} {p.name}": conda_entry(p.version, p.build, p.channel)
            for env in plan.conda for p in env.packages}


def _trust_problems(run_dir: Path) -> tuple[str, ...]:
    """Why export would call the run incomplete (its report's ``incomplete``)."""
    return tuple(trust_problems(read_run(run_dir), run_dir))


def claims_fields(claims: Claims | None) -> dict[str, str]:
    """An agent's claims field by field: dotted keys, each value as JSON; ``claims.json``
    says whether there was one."""
    out = {"claims.json": "absent" if claims is None else "present"}

    def walk(value: object, key: str) -> None:
        if isinstance(value, Mapping) and value:
            for k in sorted(value):
                walk(value[k], f"{key}.{k}" if key else str(k))
        else:
            out[key] = json.dumps(value, sort_keys=True, ensure_ascii=False)

    if claims is not None:
        walk(claims.raw, "")
    return out


def provenance_fields(report: DistillReport, incomplete: Iterable[str] = ()) -> dict[str, str]:
    """What the export report names about where the environment came from: each risk,
    each unaudited change and each trust problem, by its text."""
    out: dict[str, str] = {}
    for what, lines in (("risk", report.risks), ("unaudited", report.unaudited),
                        ("incomplete", tuple(report.incomplete) + tuple(incomplete))):
        for line in lines:
            out[f"{what}: {line}"] = "listed"
    return out


def _live_image_facts(live: str | None, primary: str | None, loader: SideLoader,
                      warnings: list[str]) -> tuple[int | None, Fingerprint | None]:
    """The live image's size and (with --fingerprint) its fingerprint, when it is there."""
    size, why = loader.image_size(live)
    if why:
        warnings.append(why)
    if not (loader.fingerprint and live and primary):
        return size, None
    if size is None:
        warnings.append(f"cannot fingerprint the live image {live} ({why})")
        return size, None
    return size, loader.fingerprint_of(live, primary)


def _run_native_builds(
    run: LoadedRun, dists: Mapping[str, PyDist], warnings: list[str]
) -> tuple[tuple[NativeBuildInfo, ...] | None, DistillReport | None]:
    """The run's native builds as export would replay them (the distilled plan), and the
    distill report (its risks and unaudited changes)."""
    try:
        plan, report = distill(run)
    except SynthError as exc:
        warnings.append(f"native builds and provenance unknown: the run does not distill "
                        f"({exc.message})")
        return None, None
    return _native_from_steps(plan.native, dists), report


# ---------------------------------------------------------------------------- artifacts
def parse_apt_lock(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, rest = line.partition("=")
        # ``name=version`` then, since apt.lock has content hashes, more columns.
        out[name.strip()] = rest.split()[0] if rest.split() else ""
    return out


def parse_requirements_lock(text: str) -> tuple[dict[str, str], bool]:
    """``name==version`` pins of a pip hash-format lock, and whether it uses find-links."""
    pins: dict[str, str] = {}
    find_links = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("--find-links", "-f ", "--extra-index-url")):
            find_links = find_links or not line.startswith("--extra")
            continue
        if not line or raw[:1].isspace() or line.startswith(("#", "-")):
            continue
        spec = line.split(";", 1)[0].split("\\", 1)[0].strip()
        spec = spec.split(" --hash", 1)[0].strip()
        if "==" in spec:
            name, _, version = spec.partition("==")
            pins[str(canonicalize_name(name.split("[", 1)[0].strip()))] = version.strip()
    return pins, find_links


def _artifact_dists(directory: Path, loader: SideLoader, warnings: list[str]
                    ) -> dict[str, PyDist] | None:
    """The primary environment's pins, from its requirements.lock."""
    lock = directory / "requirements.lock"
    if not os.path.lexists(lock):
        warnings.append("no requirements.lock: Python distributions unknown")
        return None
    pins, _find_links = parse_requirements_lock(_text(lock))
    wheels = wheelhouse_index(loader.settings.wheelhouse)
    return {n: _with_wheelhouse(PyDist(n, v, "index"), wheels) for n, v in pins.items()}


def _artifact_plan(artifact: ArtifactDir, warnings: list[str]
                   ) -> tuple[BuildPlan, DistillReport] | None:
    """The plan the artifact was rendered from and its report; None (with a warning) for
    an artifact exported before synth wrote ``plan.json``: its native builds, ENV, Python
    version and provenance are then unknown, never guessed from the Dockerfile's text."""
    if not artifact.has(PLAN):
        warnings.append(f"no {PLAN_FILE} (exported by an older synth): native builds, ENV, "
                        "provenance and the Python version unknown; re-export the run to "
                        "compare them")
        return None
    doc = load(artifact.file(PLAN), PLAN)
    return doc.plan, doc.report


#: In an artifact folder but not the export's: verify's records.
_NOT_EXPORTED = (MANIFEST.rel, artifact_files.VERIFICATION_FILE, "verify.json", "verify")
#: A lock file is read whole to parse it; one bigger than this is not a lock.
MAX_LOCK_BYTES = 64 * safe_io.MiB


def checked_files(directory: Path, manifest: Manifest) -> dict[str, str]:
    """The artifact's files by digest, which must be exactly its manifest's ``files``: a
    file modified, missing or not listed is an InputFileError naming it (a corrupted copy
    is never compared, let alone "equal"); with them the run files it was made from
    (``inputs/…``) and the manifest's own digest (it says more than ``files``)."""
    have = artifact_files.digests(directory, skip=_NOT_EXPORTED)
    listed = dict(manifest.files)
    bad = [f"{rel} ({_mismatch(rel, have, listed)})"
           for rel in sorted(set(have) | set(listed)) if have.get(rel) != listed.get(rel)]
    if bad:
        raise InputFileError(
            f"{directory}: its files do not match its manifest.json: " + "; ".join(bad[:20])
            + (f"; … {len(bad) - 20} more" if len(bad) > 20 else ""),
            hint="Compare an artifact as exported (re-export it), or restore the files.")
    return {**have, **{f"inputs/{rel}": d for rel, d in sorted(manifest.inputs.items())},
            MANIFEST.rel: hashlib.sha256(ArtifactDir(directory).manifest_bytes()).hexdigest()}


def _mismatch(rel: str, have: Mapping[str, str], listed: Mapping[str, str]) -> str:
    return ("missing" if rel not in have else "not in the manifest" if rel not in listed
            else "modified")


def _text(path: Path) -> str:
    """A text file of a side (an artifact's Dockerfile and locks, a run's export): a regular
    file, never through a link, at most 64 MiB, UTF-8; InputFileError naming it else."""
    return safe_io.decode_utf8(safe_io.read_regular(path, MAX_LOCK_BYTES), path)


def lock_fields(directory: Path) -> dict[str, str]:
    """Every pin of every lock file at the artifact's top (``*.lock``): ``<file>: <name>``
    -> its version with every hash (``<file>: <option>`` for an index or find-links line;
    apt.lock: version, architecture and the .deb's sha256)."""
    out: dict[str, str] = {}
    for path in sorted(directory.glob("*.lock")):
        text = _text(path)
        if path.name == "apt.lock":
            for line in text.splitlines():
                name, sep, rest = line.strip().partition("=")
                if sep and not name.startswith("#"):
                    out[f"{path.name}: {name}"] = " ".join(rest.split()[:3])
            continue
        if path.name == MANAGED_PYTHON_LOCK:  # SHA256 URL PREFIX [LINK…]
            for words in (line.split() for line in text.splitlines()
                          if not line.startswith("#")):
                if len(words) >= 3:
                    out[f"{path.name}: {words[2]}"] = f"{words[1]} sha256:{words[0]}"
            continue
        for name, value in _pip_lock_pins(text).items():
            out[f"{path.name}: {name}"] = value
    return out


def _pip_lock_pins(text: str) -> dict[str, str]:
    """A pip hash-format lock's records: ``name`` -> ``version sha256:… sha256:…``, and
    each option line (``--index-url``…) as itself."""
    out: dict[str, str] = {}
    for record in text.replace("\\\n", " ").splitlines():
        words = record.split("#", 1)[0].split() if not record.lstrip().startswith("#") else []
        if not words:
            continue
        if words[0].startswith("-"):  # --index-url URL, --extra-index-url URL (each)
            out[" ".join(words)] = "listed"
            continue
        spec, _, version = words[0].partition("==")
        hashes = sorted(w.removeprefix("--hash=") for w in words[1:] if w.startswith("--hash="))
        out[str(canonicalize_name(spec.split("[", 1)[0]))] = " ".join([version, *hashes])
    return out


def _artifact_interpreter(manifest: Manifest | None, plan: BuildPlan | None
                          ) -> dict[str, str]:
    interpreter: dict[str, str] = {}
    base_ref = manifest.base_ref if manifest else (plan.base_ref if plan else None)
    if base_ref:
        interpreter["base_image"] = base_ref
    python = plan.python if plan else (manifest.python if manifest else None)
    if python:
        interpreter["path"] = python
    if plan and plan.envs and plan.envs[0].version:
        interpreter["python"] = plan.envs[0].version
    return interpreter


def load_artifact_side(directory: Path, loader: SideLoader) -> Side:
    """An artifact as a side: its plan.json and typed manifest (one without is not an
    artifact synth can compare: could not compare), its files checked against the manifest,
    its lock files, and the Dockerfile only as text to compare."""
    directory = directory.resolve()
    warnings: list[str] = []
    artifact = ArtifactDir(directory)
    manifest = artifact.manifest()  # missing or refused: could not compare
    files = checked_files(directory, manifest)
    planned = _artifact_plan(artifact, warnings)
    plan = planned[0] if planned else None
    dockerfile_path = directory / "Dockerfile"
    steps = (dockerfile_steps(_text(dockerfile_path))
             if os.path.lexists(dockerfile_path) else None)
    dists = _artifact_dists(directory, loader, warnings)
    native = _native_from_steps(plan.native, dists or {}) if plan else None
    if plan and native and dists is not None:
        # Built by a replayed step, so installed as the run had it (a format-1 plan.json
        # does not say how: "local build").
        sources = {_step_key(s)[0]: s.source for s in plan.native if s.distribution}
        for n in native:
            if n.version and n.key not in dists:
                dists[n.key] = PyDist(n.key, n.version, sources.get(n.key) or "local build")
    apt_lock = directory / "apt.lock"
    apt_added = parse_apt_lock(_text(apt_lock)) if os.path.lexists(apt_lock) else None
    image = _rebuilt_image(directory)
    size, why = loader.image_size(image)
    if why:
        warnings.append(why)
    identity = {"artifact_dir": str(directory), "task": manifest.task,
                "run_id": manifest.run_id, "synth_version": manifest.synth_version}
    return Side(
        kind="artifact", label=str(directory), identity={**identity, "image": image},
        interpreter=_artifact_interpreter(manifest, plan) or None, distributions=dists,
        conda=artifact_conda(plan) if plan else None,
        apt_added=apt_added, env=dict(plan.env) if plan else None, native_builds=native,
        dockerfile=steps, pyramid=_load_pyramid(directory), image_size=size,
        warnings=tuple(warnings), claims=claims_fields(artifact.claims()),
        provenance=provenance_fields(planned[1]) if planned else None,
        locks=lock_fields(directory), files=files,
        origin=manifest.run_id,
    )


def _rebuilt_image(directory: Path) -> str | None:
    """The rebuilt image verify recorded for this artifact, if any."""
    path = _verify_json(directory)
    reports = read_verify(path).reports if path else {}
    images = [str(r.target["image"]) for _k, r in sorted(reports.items())
              if r.target.get("kind") == "rebuilt" and r.target.get("image")]
    return images[0] if images else None


# ------------------------------------------------------------------------------- images
def load_image_side(ref: str, loader: SideLoader) -> Side:
    info = loader._engine_or_raise().image_inspect(ref)
    config = info.get("Config") or {}
    labels = dict(config.get("Labels") or {})
    env = dict(e.split("=", 1) if "=" in e else (e, "") for e in config.get("Env") or [])
    python = (loader.python or labels.get("synth.python") or _run_primary(loader, labels)
              or (f"{env['VIRTUAL_ENV']}/bin/python" if env.get("VIRTUAL_ENV") else "python3"))
    fp = loader.fingerprint_of(ref, python)
    wheels = wheelhouse_index(loader.settings.wheelhouse)
    dists = {
        d.name: _with_wheelhouse(PyDist(d.name, d.version, d.source, d.direct_url), wheels)
        for d in fp.effective.values()
    }
    interpreter = {"python": fp.python_version, "path": fp.executable or python,
                   "implementation": fp.implementation}
    if fp.glibc:
        interpreter["glibc"] = fp.glibc
    return Side(
        kind="image",
        label=ref,
        identity={"image": ref, "id": info.get("Id"),
                  **{k: v for k, v in sorted(labels.items()) if k.startswith("synth.")}},
        interpreter=interpreter,
        distributions=dists,
        apt_all=dict(fp.dpkg) if fp.dpkg is not None else None,
        env=env,
        native_builds=None,
        pyramid=None,
        image_size=int(info.get("Size") or 0),
        fingerprint=fp,
        warnings=tuple(f"fingerprint: {e}" for e in fp.errors),
    )


def _run_primary(loader: SideLoader, labels: Mapping[str, str]) -> str | None:
    """The primary interpreter of the run a live image was committed from, if known here."""
    run_id, task = labels.get("synth.run"), labels.get("synth.task")
    if not run_id or not task:
        return None
    try:
        run_dir = loader.find_run(f"{task}/{run_id}")
    except NotFoundError:
        return None
    return RunDir(run_dir).python_state().primary
