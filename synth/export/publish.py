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

import dataclasses
import fnmatch
import gzip
import html
import json
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from synth import __version__
from synth.distill.load import LoadedRun
from synth.distill.plan import BuildPlan, DistillReport
from synth.distill.report import no_digest_warning
from synth.engine.base_images import parse_recipe, publish_image, recipe_for
from synth.errors import ExportError, SynthError
from synth.export.lock import Lock
from synth.export.metadata import BaseFacts, Citation, Publication, base_facts
from synth.export.render import artifact_files_description
from synth.formats import artifact_files
from synth.formats.store import (
    RUN_RECORD,
    VERIFICATION,
    VERIFY_DOCUMENT,
    ArtifactDir,
    RunDir,
    read_bytes,
    read_verify,
)
from synth.util import atomic
from synth.util.disk import disk_full_as_error

RO_CRATE = "ro-crate-metadata.json"
SBOM = "sbom.cdx.json"
ZENODO = ".zenodo.json"
#: ``save(image, dest)``: the engine's ``docker save`` of an image into a file.
BaseSaver = Callable[[str, Path], None]
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

@dataclass(frozen=True)
class SbomInputs:
    """What the SBOM lists besides the locks: the base image (as the artifact names it)
    and its Debian packages, the Debian suite (purl ``distro``) and the run's architecture."""

    base: BaseFacts
    base_packages: Mapping[str, str]
    distro: str | None
    architecture: str


def _deb_purl(name: str, version: str, arch: str | None, distro: str | None) -> Any:
    from packageurl import PackageURL

    qualifiers = {k: v for k, v in (("arch", arch), ("distro", distro)) if v}
    return PackageURL(type="deb", namespace="debian", name=name, version=version,
                      qualifiers=qualifiers)


def _base_component(plan: BuildPlan, inputs: SbomInputs) -> Any:
    """The base image as a component holding its Debian packages (those the run did not
    change or remove: those are the artifact's own, in apt.lock)."""
    from cyclonedx.model.component import Component, ComponentType

    base = Component(name=inputs.base.ref, version=inputs.base.digest or plan.base_id or None,
                     type=ComponentType.CONTAINER, bom_ref=f"base:{inputs.base.ref}",
                     description="the base image")
    own = {name for name, _ in plan.apt.pins} | set(plan.apt.remove)
    for name, version in sorted(inputs.base_packages.items()):
        if name not in own:
            base.components.add(Component(
                name=name, version=version, type=ComponentType.LIBRARY,
                purl=_deb_purl(name, version, None, inputs.distro),
                bom_ref=f"deb:base:{name}@{version}"))
    return base


def _local_components(plan: BuildPlan) -> list[Any]:
    """What the image builds from source here: the native steps' distributions."""
    from cyclonedx.model import Property
    from cyclonedx.model.component import Component, ComponentType

    out = []
    for step in plan.native:
        if not step.distribution:
            continue
        name, _, version = step.distribution.partition("==")
        out.append(Component(
            name=name, version=version or None, type=ComponentType.LIBRARY,
            bom_ref=f"local:{step.ref}:{step.distribution}",
            description=f"built in the image by {step.tool} in {step.cwd} (audit {step.ref})",
            properties=[Property(name="synth:built-from", value=step.cwd)]))
    return out


def _downloaded_components(plan: BuildPlan) -> list[Any]:
    """What the build fetches by URL and checks by digest: the packages of every recreated
    conda prefix, as ``pkg:conda`` purls (the package URL spec's qualifiers: ``build``,
    ``channel``, ``subdir``, ``type``; the digest the build checks), and the interpreters
    uv downloaded, as ``pkg:generic`` purls (``download_url``, ``checksum``; the path they are
    unpacked at); each with its archive's URL as a ``distribution`` reference."""
    from cyclonedx.model import (
        ExternalReference,
        ExternalReferenceType,
        HashAlgorithm,
        HashType,
        Property,
        XsUri,
    )
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    def sha256(digest: str) -> HashType:
        return HashType(alg=HashAlgorithm.SHA_256, content=digest)

    out = []
    for env in plan.conda:
        for pin in env.packages:
            kind = "conda" if pin.url.endswith(".conda") else "tar.bz2"
            qualifiers = {"build": pin.build, "channel": pin.channel, "subdir": pin.subdir,
                          "type": kind}
            hashes = ([sha256(pin.sha256)] if pin.sha256
                      else [HashType(alg=HashAlgorithm.MD5, content=pin.md5)] if pin.md5
                      else [])
            out.append(Component(
                name=pin.name, version=pin.version, type=ComponentType.LIBRARY,
                purl=PackageURL(type="conda", name=pin.name, version=pin.version,
                                qualifiers={k: v for k, v in qualifiers.items() if v}),
                bom_ref=f"conda:{env.prefix}:{pin.name}@{pin.version}={pin.build}",
                hashes=hashes,
                external_references=[ExternalReference(
                    type=ExternalReferenceType.DISTRIBUTION, url=XsUri(pin.url))],
                properties=[Property(name="synth:conda-prefix", value=env.prefix)]))
    for p in plan.pythons:
        if not p.url or not p.sha256:
            continue
        name = p.key.split("-", 1)[0]  # cpython
        out.append(Component(
            name=name, version=p.version, type=ComponentType.APPLICATION,
            purl=PackageURL(type="generic", name=name, version=p.version,
                            qualifiers={"download_url": p.url,
                                        "checksum": f"sha256:{p.sha256}"}),
            bom_ref=f"python:{p.prefix}", description=(
                f"{p.key}, downloaded by uv" if p.tool == "uv" else
                f"{p.key}, substituted for {p.tool}'s build of Python {p.version}"),
            hashes=[sha256(p.sha256)],
            external_references=[ExternalReference(
                type=ExternalReferenceType.DISTRIBUTION, url=XsUri(p.url))],
            properties=[Property(name="synth:install-prefix", value=p.prefix)]))
    return out


def sbom_json(plan: BuildPlan, locks: Sequence[Lock], epoch: int, inputs: SbomInputs) -> str:
    """A CycloneDX 1.6 JSON SBOM of the base image's Debian packages, apt.lock, the conda
    and Python locks, the downloaded interpreters and what is built from source, with synth
    as the tool; validated."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from packageurl import PackageURL

    bom = Bom(serial_number=uuid.uuid5(_NAMESPACE, f"{plan.task}/{plan.run_id}/sbom"))
    bom.metadata.timestamp = datetime.fromtimestamp(epoch, UTC)
    bom.metadata.tools.components.add(Component(
        name="synth", version=__version__, type=ComponentType.APPLICATION,
        description="distils an audited agent session into a rebuildable environment"))
    root = bom.metadata.component = Component(
        name=f"{plan.task}/{plan.run_id}", type=ComponentType.CONTAINER,
        bom_ref=f"artifact:{plan.task}/{plan.run_id}",
        description=f"synth {__version__} artifact (base {inputs.base.ref})")
    base = _base_component(plan, inputs)
    bom.components.add(base)
    debs = {d.name: d for d in plan.apt.debs}
    for name, version in plan.apt.pins:
        d = debs.get(name)
        bom.components.add(Component(
            name=name, version=version, type=ComponentType.LIBRARY, bom_ref=f"deb:{name}@{version}",
            purl=_deb_purl(name, version, d.arch if d else None, inputs.distro),
            hashes=[HashType(alg=HashAlgorithm.SHA_256, content=d.sha256)] if d else []))
    for lock in locks:
        for pin in lock.pins:
            purl = PackageURL(type="pypi", name=pin.name.lower(), version=pin.version)
            bom.components.add(Component(
                name=pin.name, version=pin.version, type=ComponentType.LIBRARY, purl=purl,
                bom_ref=f"pypi:{lock.env.prefix}:{pin.name}@{pin.version}",
                hashes=[HashType(alg=HashAlgorithm.SHA_256, content=h) for h in pin.hashes]))
    for component in (*_downloaded_components(plan), *_local_components(plan)):
        bom.components.add(component)
    # Every component is in the image: the root depends on them all, the base on its own.
    bom.register_dependency(root, list(bom.components))
    bom.register_dependency(base, list(base.components))
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if error is not None:
        raise ExportError(f"The CycloneDX SBOM does not validate: {error}")
    return json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# ------------------------------------------------------------------------------ Zenodo

def zenodo_json(plan: BuildPlan, citation: Citation) -> str:
    """``.zenodo.json``: the deposit metadata Zenodo's API and GitHub integration read
    (upload_type, title, creators as ``Family, Given``, description, publication_date,
    access_right, license, version, keywords, related_identifiers, notes)."""
    creators = [{"name": a.inverted} for a in citation.authors] or [
        {"name": f"{plan.task} authors (not recorded)"}]
    doc: dict[str, Any] = {
        "upload_type": "software", "title": citation.title, "creators": creators,
        "description": (f"<p>{html.escape(citation.abstract)}</p><p>A rebuildable software "
                        "environment: Dockerfile, pinned apt and Python locks with content "
                        "hashes, the research code and the task's probes; README.md says how "
                        "to load the base image, build and check it.</p>"),
        "publication_date": citation.date, "version": citation.version,
        "access_right": "open" if citation.license else "closed",
        "keywords": list(citation.keywords),
        "notes": f"Made by synth {__version__} from run {plan.task}/{plan.run_id}.",
    }
    if citation.license:
        doc["license"] = citation.license.lower()  # Zenodo's licence ids: SPDX, lower case
    if citation.repository_url:
        doc["related_identifiers"] = [{"identifier": citation.repository_url,
                                       "relation": "isSupplementTo",
                                       "resource_type": "software"}]
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -------------------------------------------------------------------------- RO-Crate

def _verification(run: LoadedRun, artifact: Path) -> dict[str, Any] | None:
    """The verification to describe: the artifact's own verification.json, else the run's
    last verify.json."""
    try:
        record = ArtifactDir(artifact).verification()
        if record is not None:
            return {"decides": "rebuilt", "passed": record.passed, "highest": record.highest,
                    "date": record.date}
    except SynthError:
        pass
    try:
        doc = read_verify(run.run_dir / "verify" / VERIFY_DOCUMENT.rel)
        return {"decides": doc.decides, "passed": doc.passed,
                "highest": doc.deciding.highest}
    except (SynthError, KeyError):  # KeyError: `decides` names no report
        return None


#: The artifact's manifest, written after the RO-Crate (it hashes the crate).
MANIFEST_NAME = "manifest.json"
#: A file's media type by how its name ends (text/plain for the rest of the text files).
_MEDIA = ((".tar.gz", "application/gzip"), (".json", "application/json"),
          (".md", "text/markdown"), (".tar", "application/x-tar"), (".py", "text/x-python"),
          (".cff", "application/yaml"), (".toml", "application/toml"),
          (".deb", "application/vnd.debian.binary-package"), (".whl", "application/zip"),
          (".zip", "application/zip"), (".patch", "text/x-diff"))
_TEXT = (".lock", ".sh", ".sha256", ".txt", ".cfg", ".c", ".h", ".cpp", ".cu", ".ini")


def media_type(rel: str) -> str:
    """The media type the crate gives a file (``encodingFormat``)."""
    name = posixpath.basename(rel)
    for suffix, media in _MEDIA:
        if name.endswith(suffix):
            return media
    if name.startswith(("Dockerfile", ".")) or name.endswith(_TEXT) or "." not in name:
        return "text/plain"
    return "application/octet-stream"


def _describe(rel: str, described: Mapping[str, str]) -> str:
    """What a file or folder is: the README's words for it, or for the folder it is in."""
    for key in (rel, rel + "/"):
        if key in described:
            return described[key]
    for pattern, what in described.items():
        if fnmatch.fnmatch(rel, pattern):
            return what
        if pattern.startswith(rel + "/"):
            return f"holds {pattern}: {what}"
    top = rel.split("/", 1)[0] + "/"
    return f"in {top}: {described[top]}" if top in described else "a file of the artifact"


def _crate_people(crate: Any, citation: Citation) -> list[dict[str, str]]:
    from rocrate.model.contextentity import ContextEntity

    refs = []
    for i, a in enumerate(citation.authors):
        props: dict[str, Any] = {"@type": "Person", "name": a.name}
        props.update({k: v for k, v in (("givenName", a.given), ("familyName", a.family),
                                         ("email", a.email)) if v})
        crate.add(ContextEntity(crate, f"#author-{i + 1}", properties=props))
        refs.append({"@id": f"#author-{i + 1}"})
    return refs


def _crate_licence(crate: Any, spdx: str | None) -> None:
    from rocrate.model.contextentity import ContextEntity

    if spdx is None:
        return
    url = f"https://spdx.org/licenses/{spdx}"
    crate.add(ContextEntity(crate, url, properties={
        "@type": "CreativeWork", "name": spdx, "identifier": spdx,
        "description": f"the SPDX licence {spdx}, under which this artifact is published"}))
    crate.root_dataset["license"] = {"@id": url}


def _crate_files(crate: Any, artifact: Path, digests: Mapping[str, str],
                 described: Mapping[str, str]) -> None:
    """Every file with its size, media type and sha256 (those under folders too, the
    research code among them), every folder as a dataset listing its parts, each described
    as the README describes it; the manifest named only (it is written after the crate)."""
    entries = [e for e in artifact_files.walk(artifact) if e.rel not in ("Dockerfile", RO_CRATE)]
    for e in entries:
        props: dict[str, Any] = {"name": e.rel, "description": _describe(e.rel, described)}
        if e.kind == "dir":
            crate.add_dataset(e.path, dest_path=e.rel + "/", properties=props)
            continue
        if e.kind == "file":
            props.update(contentSize=str(e.path.stat().st_size), encodingFormat=media_type(e.rel),
                         sha256=digests.get(e.rel) or artifact_files.file_digest(e.path))
        else:
            props["description"] = f"a symbolic link to {e.target}"
        crate.add_file(e.path, dest_path=e.rel, properties=props)
    crate.add_file(artifact / MANIFEST_NAME, dest_path=MANIFEST_NAME, properties={
        "name": MANIFEST_NAME, "encodingFormat": "application/json",
        "description": "every file's sha256 (this crate's included); written after it"})
    by_id = {e.id: e for e in crate.data_entities}
    for e in entries:  # each folder lists what is directly in it
        if e.kind == "dir":
            parts = [{"@id": x.rel + ("/" if x.kind == "dir" else "")}
                     for x in entries if posixpath.dirname(x.rel) == e.rel]
            by_id[e.rel + "/"]["hasPart"] = parts[0] if len(parts) == 1 else parts


def ro_crate_json(artifact: Path, plan: BuildPlan, run: LoadedRun, epoch: int,
                  citation: Citation, digests: Mapping[str, str],
                  described: Mapping[str, str]) -> str:
    """``ro-crate-metadata.json`` for the artifact folder (its files must exist, all but
    ``manifest.json``, which is written after it and lists the crate's digest);
    ``digests``: the sha256 of files already known by their path; ``described``: what each
    file is (the README's table)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate(gen_preview=False)
    crate.name = f"Software environment for task {plan.task} (run {plan.run_id})"
    crate.description = (
        f"{citation.abstract} A rebuildable environment distilled by synth {__version__} "
        "from an audited agent session: Dockerfile, pinned apt and Python locks with content "
        "hashes, the research code and the task's probes. Build with `docker build` (README.md) "
        "or `synth verify --rebuild`.")
    crate.datePublished = datetime.fromtimestamp(epoch, UTC).isoformat()
    crate.root_dataset["identifier"] = f"{plan.task}/{plan.run_id}"
    crate.root_dataset["version"] = citation.version
    _crate_licence(crate, citation.license)
    if people := _crate_people(crate, citation):
        crate.root_dataset["author"] = people
    crate.add(ContextEntity(crate, "#dockerfile", properties={
        "@type": "ComputerLanguage", "name": "Dockerfile", "version": "1",
        "url": "https://docs.docker.com/reference/dockerfile/"}))
    docker = crate.add_file(artifact / "Dockerfile", dest_path="Dockerfile", properties={
        "@type": ["File", "SoftwareSourceCode"], "name": "Dockerfile",
        "description": described.get("Dockerfile", "the build"),
        "programmingLanguage": {"@id": "#dockerfile"}, "encodingFormat": "text/plain",
        "contentSize": str((artifact / "Dockerfile").stat().st_size),
        "sha256": digests.get("Dockerfile") or artifact_files.file_digest(artifact / "Dockerfile")})
    crate.mainEntity = docker
    _crate_files(crate, artifact, digests, described)
    _crate_action(crate, plan, run, artifact, epoch)
    return json.dumps(crate.metadata.generate(), indent=2, sort_keys=True) + "\n"


def _crate_action(crate: Any, plan: BuildPlan, run: LoadedRun, artifact: Path,
                  epoch: int) -> None:
    """How the artifact was made: a CreateAction by synth from the run's inputs."""
    from rocrate.model.contextentity import ContextEntity

    inputs = [crate.add(ContextEntity(crate, f"#input-{rel}", properties={
        "@type": "PropertyValue", "name": rel, "propertyID": "sha256", "value": digest}))
        for rel, digest in sorted(run.input_hashes.items())]
    props: dict[str, Any] = {
        "@type": "CreateAction", "name": f"synth export of run {plan.run_id}",
        "endTime": datetime.fromtimestamp(epoch, UTC).isoformat(),
        "instrument": {"@id": "#synth"}, "object": [{"@id": e.id} for e in inputs],
        "result": {"@id": "./"}}
    verification = _verification(run, artifact)
    if verification is not None:
        props["description"] = (
            f"synth verify ({verification['decides']}): "
            f"{'passed' if verification['passed'] else 'failed'}, highest level "
            f"{verification['highest'] or 'none'}")
    # synth has no web address of its own to give, and RO-Crate's SoftwareApplication must
    # have one (and a SoftwareSourceCode is a file of the crate): a work by name and version.
    crate.add(ContextEntity(crate, "#synth", properties={
        "@type": "CreativeWork", "name": "synth", "version": __version__,
        "description": "the tool that distilled this environment from an audited session"}))
    crate.add(ContextEntity(crate, "#export", properties={k: v for k, v in props.items()
                                                          if v is not None}))


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
    """``artifact`` as a deterministic ``.tar.gz`` at ``dest``; returns its sha256.

    Both files are written to a temporary file created (``O_EXCL``, by ``mkstemp``) in
    their folder and renamed over their name: a link planted at ``dest``, its ``.sha256``
    or a temporary name is replaced, never written through. The archive is streamed to
    disk (a bundle's gigabytes are never held in memory) and hashed from it in chunks."""
    sums = dest.with_name(dest.name + ".sha256")
    for path in (dest, sums):
        if os.path.lexists(path) and not (path.is_symlink() or stat.S_ISREG(
                path.lstat().st_mode)):
            raise ExportError(f"{path} exists and is not a file; synth will not replace it.")
    entries = list(artifact_files.walk(artifact))  # links as links, specials refused
    with disk_full_as_error(dest):
        digest = _write_tar_gz(artifact, entries, dest, prefix, epoch)
        atomic.write_text(sums, f"{digest}  {dest.name}\n")
    return digest


def _write_tar_gz(artifact: Path, entries: list[artifact_files.Entry], dest: Path,
                  prefix: str, epoch: int) -> str:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w+b") as fh:
            with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0,
                               compresslevel=9) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
                tar.addfile(_tarinfo(artifact, prefix, epoch))
                for e in entries:
                    _add(tar, e.path, f"{prefix}/{e.rel}", epoch)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        digest = artifact_files.file_digest(tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return digest


def _add(tar: tarfile.TarFile, path: Path, arcname: str, epoch: int) -> None:
    """One entry; a regular file's bytes read without following a link at its name."""
    info = _tarinfo(path, arcname, epoch)
    if not info.isreg():
        tar.addfile(info)
        return
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size != info.size:
            raise ExportError(f"{path} changed while the archive was written.")
        tar.addfile(info, fh)


def archive_name(plan: BuildPlan) -> str:
    """``<task>-<run-id>``: the archive's file name stem and its top folder."""
    return f"{plan.task}-{plan.run_id}".replace("/", "_")


def archive_manifest(plan: BuildPlan, epoch: int) -> dict[str, Any]:
    """The manifest's ``archive`` key (the archive's own hash is beside it, not inside)."""
    name = archive_name(plan) + ".tar.gz"
    return {"name": name, "source_date_epoch": epoch, "ro_crate": RO_CRATE, "sbom": SBOM,
            "zenodo": ZENODO, "sha256_file": name + ".sha256"}


# ------------------------------------------------------------ what travels with the folder

def carry_base_into(tmp: Path, base: BaseFacts, source: str,
                    save: BaseSaver) -> tuple[BaseFacts, list[str]]:
    """The published base written into the new artifact ``tmp`` as ``base/<name>.tar``
    from the run's base image ``source`` (``save``: the engine's ``docker save``); a base
    that cannot be carried is a warning, and the facts say so."""
    if base.published is None or base.archive is None:
        return base, []
    dest = tmp / base.archive
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        digest = publish_image(save, source, base.published, dest)
    except SynthError as exc:
        shutil.rmtree(dest.parent, ignore_errors=True)
        return dataclasses.replace(base, archive=None), [
            f"the base image {source} is not carried in the artifact ({exc.message}); a "
            f"reader must make {base.ref} from its recipe"]
    return dataclasses.replace(base, manifest_digest=digest), []


def keep_verification(dest: Path, tmp: Path) -> tuple[bool, list[str]]:
    """The artifact being replaced at ``dest`` keeps its ``verification.json`` in the new
    one ``tmp`` (verify compares its next result with it); an unreadable one is named."""
    old = ArtifactDir(dest)
    if not dest.is_dir() or dest.is_symlink() or not old.has(VERIFICATION):
        return False, []
    try:
        old.verification()  # checked before it is kept
        data = read_bytes(old.file(VERIFICATION), VERIFICATION)
    except SynthError as exc:
        return False, [f"the replaced artifact's {VERIFICATION.rel} is not kept: {exc.message}"]
    (tmp / VERIFICATION.rel).write_bytes(data)
    return True, []


def prepare(tmp: Path, run: LoadedRun, plan: BuildPlan, citation: Citation, dest: Path, *,
            carry_base: bool, archive: bool, save: BaseSaver) -> tuple[Publication, list[str]]:
    """Before rendering: the base carried into ``tmp`` (``carry_base``: --archive or
    --bundle; ``save``: the engine's ``docker save``), the replaced artifact's
    verification.json kept; what the artifact then says about itself, and the warnings."""
    import platform

    base = base_facts(plan, run, platform.machine(), carried=carry_base)
    base, notes = carry_base_into(tmp, base, plan.base_ref, save) if carry_base else (base, [])
    kept, more = keep_verification(dest, tmp)
    notes = [*notes, *more, *citation.warnings()] if archive else [*notes, *more]
    return Publication(citation, base, archive=archive, verification=kept), notes


def without_stale_base_warning(plan: BuildPlan, run: LoadedRun,
                               report: DistillReport) -> DistillReport:
    """``report`` without distill's "no registry digest" warning where the base is synth's
    own, which the artifact names by the digest synth publishes it under and which
    ``synth verify --rebuild`` makes again or the artifact carries (README, section 1)."""
    import platform

    if base_facts(plan, run, platform.machine(), carried=False).published is None:
        return report
    stale = no_digest_warning(run)
    return msgspec.structs.replace(
        report, warnings=tuple(w for w in report.warnings if w != stale))


def base_published(publication: Publication | None) -> dict[str, Any]:
    """The manifest's ``base.published``: how the artifact names and carries its base."""
    if publication is None or publication.base.published is None:
        return {}
    b = publication.base
    assert b.published is not None
    return {"published": {**b.published.to_json(), "archive": b.archive,
                          "manifest_digest": b.manifest_digest}}


def write_metadata(tmp: Path, run: LoadedRun, plan: BuildPlan, locks: Sequence[Lock],
                   epoch: int, publication: Publication,
                   known: Mapping[str, str]) -> dict[str, str]:
    """``sbom.cdx.json``, ``.zenodo.json``, then ``ro-crate-metadata.json`` (it lists every
    file with its sha256) into ``tmp``; returns the digests of every file so far."""
    labels = run.info.base_labels
    recipe = parse_recipe(labels.get("synth.base.recipe", "")) or recipe_for(plan.base_ref)
    inputs = SbomInputs(base=publication.base, base_packages=run.apt.base,
                        distro=recipe.suite if recipe else None,
                        architecture=publication.base.published.architecture
                        if publication.base.published else "")
    (tmp / SBOM).write_text(sbom_json(plan, locks, epoch, inputs), encoding="utf-8")
    (tmp / ZENODO).write_text(zenodo_json(plan, publication.citation), encoding="utf-8")
    digests = artifact_files.digests(tmp, known=known)
    described = dict(artifact_files_description(plan, locks, (tmp / "vendor").is_dir(),
                                                publication))
    (tmp / RO_CRATE).write_text(ro_crate_json(tmp, plan, run, epoch, publication.citation,
                                              digests, described), encoding="utf-8")
    return digests
