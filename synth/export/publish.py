"""``synth export --archive``: the artifact as one deterministic archive, with metadata.

Beside the artifact's own files go two that the ecosystem reads: ``ro-crate-metadata.json``
(an RO-Crate 1.x describing the environment, its task, its inputs and the verification
result when the run has one, written with the ``rocrate`` library) and ``sbom.cdx.json``
(a CycloneDX 1.6 SBOM of every apt and Python component with versions, hashes and package
URLs, written with ``cyclonedx-python-lib``). Then the folder becomes
``<task>-<run-id>.tar.gz`` beside it: entries sorted, every mtime the run's end
(``SOURCE_DATE_EPOCH``), owner 0, modes normalised, no gzip name or timestamp; its sha256
goes to ``<name>.tar.gz.sha256``. The same run exported twice gives the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synth import __version__
from synth.distill.load import LoadedRun
from synth.distill.plan import BuildPlan
from synth.errors import ExportError, SynthError
from synth.export.lock import Lock
from synth.formats import artifact_files
from synth.formats.store import RUN_RECORD, VERIFY_DOCUMENT, RunDir, read_verify

RO_CRATE = "ro-crate-metadata.json"
SBOM = "sbom.cdx.json"
_NAMESPACE = uuid.UUID("5f1b7a52-4d0e-4c1e-9a55-7a1c2b0d3e11")


def source_date_epoch(run: LoadedRun) -> int:
    """The run's end as seconds since the epoch (0 when the run records no time)."""
    stamp = run.info.ended
    if not stamp:
        return 0
    try:
        return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                   .timestamp())
    except ValueError as exc:
        raise ExportError(f"{run.run_dir}/run.json: `ended` {stamp!r} is not "
                          "YYYY-MM-DDTHH:MM:SSZ.",
                          path=RunDir(run.run_dir).file(RUN_RECORD)) from exc


# ------------------------------------------------------------------------------ SBOM

def sbom_json(plan: BuildPlan, locks: Sequence[Lock], epoch: int) -> str:
    """A CycloneDX 1.6 JSON SBOM of apt.lock and the Python locks, validated."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from packageurl import PackageURL

    bom = Bom(serial_number=uuid.uuid5(_NAMESPACE, f"{plan.task}/{plan.run_id}/sbom"))
    bom.metadata.timestamp = datetime.fromtimestamp(epoch, UTC)
    root = bom.metadata.component = Component(
        name=f"{plan.task}/{plan.run_id}", type=ComponentType.CONTAINER,
        bom_ref=f"artifact:{plan.task}/{plan.run_id}",
        description=f"synth {__version__} artifact (base {plan.base_ref})")
    debs = {d.name: d for d in plan.apt.debs}
    for name, version in plan.apt.pins:
        d = debs.get(name)
        qualifiers = {"arch": d.arch} if d and d.arch else {}
        purl = PackageURL(type="deb", namespace="debian", name=name, version=version,
                          qualifiers=qualifiers)
        bom.components.add(Component(
            name=name, version=version, type=ComponentType.LIBRARY, purl=purl,
            bom_ref=f"deb:{name}@{version}",
            hashes=[HashType(alg=HashAlgorithm.SHA_256, content=d.sha256)] if d else []))
    for lock in locks:
        for pin in lock.pins:
            purl = PackageURL(type="pypi", name=pin.name.lower(), version=pin.version)
            bom.components.add(Component(
                name=pin.name, version=pin.version, type=ComponentType.LIBRARY, purl=purl,
                bom_ref=f"pypi:{lock.env.prefix}:{pin.name}@{pin.version}",
                hashes=[HashType(alg=HashAlgorithm.SHA_256, content=h) for h in pin.hashes]))
    # Every locked component is installed into the image: the root depends on them all.
    bom.register_dependency(root, list(bom.components))
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if error is not None:
        raise ExportError(f"The CycloneDX SBOM does not validate: {error}")
    return json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# -------------------------------------------------------------------------- RO-Crate

def _verification(run: LoadedRun) -> dict[str, Any] | None:
    try:
        doc = read_verify(run.run_dir / "verify" / VERIFY_DOCUMENT.rel)
        return {"decides": doc.decides, "passed": doc.passed,
                "highest": doc.deciding.highest}
    except (SynthError, KeyError):  # KeyError: `decides` names no report
        return None


#: The artifact's manifest, written after the RO-Crate (it hashes the crate).
MANIFEST_NAME = "manifest.json"


def ro_crate_json(artifact: Path, plan: BuildPlan, run: LoadedRun, epoch: int) -> str:
    """``ro-crate-metadata.json`` for the artifact folder (its files must exist, all but
    ``manifest.json``, which is written after it and lists the crate's digest)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate(gen_preview=False)
    crate.name = f"Software environment for task {plan.task} (run {plan.run_id})"
    crate.description = (
        f"A rebuildable environment distilled by synth {__version__} from an audited agent "
        f"session: Dockerfile, pinned apt and Python locks with content hashes, the research "
        "code and the task's probes. Build with `docker build` or `synth verify --rebuild`.")
    crate.datePublished = datetime.fromtimestamp(epoch, UTC).isoformat()
    crate.root_dataset["identifier"] = f"{plan.task}/{plan.run_id}"
    docker = crate.add_file(artifact / "Dockerfile", dest_path="Dockerfile", properties={
        "@type": ["File", "SoftwareSourceCode"], "name": "Dockerfile",
        "programmingLanguage": "Dockerfile", "encodingFormat": "text/plain"})
    crate.mainEntity = docker
    names = {p.relative_to(artifact).as_posix() for p in artifact.iterdir()}
    for rel in sorted(names | {MANIFEST_NAME}):
        if rel in ("Dockerfile", RO_CRATE):
            continue
        if rel == MANIFEST_NAME:
            # Written after the crate, which it lists with its digest: named here, unsized.
            crate.add_file(artifact / rel, dest_path=rel, properties={
                "name": rel, "description": "every file's sha256 (this crate's included)",
                "encodingFormat": "application/json"})
        elif (artifact / rel).is_dir():
            crate.add_dataset(artifact / rel, dest_path=rel + "/")
        else:
            file_props = {"name": rel, "contentSize": str((artifact / rel).stat().st_size)}
            if rel == "task.toml":
                file_props["description"] = f"the task {plan.task}: its probes, for synth verify"
            crate.add_file(artifact / rel, dest_path=rel, properties=file_props)
    inputs = [crate.add(ContextEntity(crate, f"#input-{rel}", properties={
        "@type": "PropertyValue", "name": rel, "propertyID": "sha256", "value": digest}))
        for rel, digest in sorted(run.input_hashes.items())]
    props: dict[str, Any] = {
        "@type": "CreateAction", "name": f"synth export of run {plan.run_id}",
        "endTime": datetime.fromtimestamp(epoch, UTC).isoformat(),
        "instrument": {"@id": "#synth"}, "object": [{"@id": e.id} for e in inputs],
        "result": {"@id": "./"}}
    verification = _verification(run)
    if verification is not None:
        props["description"] = (
            f"synth verify ({verification['decides']}): "
            f"{'passed' if verification['passed'] else 'failed'}, highest level "
            f"{verification['highest'] or 'none'}")
    crate.add(ContextEntity(crate, "#synth", properties={
        "@type": "SoftwareApplication", "name": "synth", "version": __version__}))
    crate.add(ContextEntity(crate, "#export", properties={k: v for k, v in props.items()
                                                          if v is not None}))
    return json.dumps(crate.metadata.generate(), indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- archive

def _tarinfo(path: Path, arcname: str, epoch: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(arcname)
    info.mtime = epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if path.is_symlink():
        info.type = tarfile.SYMTYPE
        info.linkname = str(path.readlink())
        info.mode = 0o777
    elif path.is_dir():
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    else:
        info.size = path.stat().st_size
        info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
    return info


def write_archive(artifact: Path, dest: Path, prefix: str, epoch: int) -> str:
    """``artifact`` as a deterministic ``.tar.gz`` at ``dest``; returns its sha256."""
    entries = list(artifact_files.walk(artifact))  # links as links, specials refused
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(_tarinfo(artifact, prefix, epoch))
        for e in entries:
            p = e.path
            info = _tarinfo(p, f"{prefix}/{e.rel}", epoch)
            if info.isreg():
                with p.open("rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    data = packed.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(dest)
    sums = dest.with_name(dest.name + ".sha256")
    sums.write_text(f"{digest}  {dest.name}\n", encoding="utf-8")
    return digest


def archive_name(plan: BuildPlan) -> str:
    """``<task>-<run-id>``: the archive's file name stem and its top folder."""
    return f"{plan.task}-{plan.run_id}".replace("/", "_")


def archive_manifest(plan: BuildPlan, epoch: int) -> dict[str, Any]:
    """The manifest's ``archive`` key (the archive's own hash is beside it, not inside)."""
    name = archive_name(plan) + ".tar.gz"
    return {"name": name, "source_date_epoch": epoch, "ro_crate": RO_CRATE, "sbom": SBOM,
            "sha256_file": name + ".sha256"}
